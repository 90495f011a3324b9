"""Issue 32, item 13: schemathesis fuzzes every /api operation against web/openapi.json, anonymous and with a token.

The app runs in-process (WSGI) on the test servers: its own empty index and
a Redis database of its own that no worker reads, so ``POST /api/pages``
and ``POST /api/jobs/reindex`` only queue messages nobody takes (the
database is emptied afterwards) and the corrections act on an empty index.
Hypothesis is derandomized: the same examples on every run.
"""

from __future__ import annotations

import json
import os
import re

import pytest
import redis
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (
    content_type_conformance,
    ignored_auth,
    missing_required_header,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.generation import GenerationMode

from newsfold.web import create_app
from newsfold.web.api.views import OPENAPI_FILE
from newsfold.web.auth import new_api_token
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.story_corpus import ingest_story_corpus

TOKEN, TOKEN_ENTRY = new_api_token("fuzz")
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance, negative_data_rejection, missing_required_header, ignored_auth]  # fmt: skip
#: examples per operation, generation mode and credentials (``NEWSFOLD_FUZZ_EXAMPLES`` for a deeper run): 20 keep
#: the module under 30 s on two shared cores
EXAMPLES = int(os.environ.get("NEWSFOLD_FUZZ_EXAMPLES", "20"))


@pytest.fixture(scope="module")
def fuzzed_app(es_url, redis_url):
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import drop_index, ensure_index
    from newsfold.plugin.settings import Settings
    from tests.backends import TEST_REFRESH

    broker = redis_url.rsplit("/", 1)[0] + "/9"
    redis.Redis.from_url(broker).flushdb()
    base = Settings.from_env().replace(elasticsearch_url=es_url, index="test-fuzz-api", refresh_interval=TEST_REFRESH,
                                       redis_url=broker)  # fmt: skip
    es = build_client(base)
    ensure_index(es, base)
    clusters = ingest_story_corpus(es, base)  # so some answers are real stories, whose bodies are checked too
    app = create_app({"TESTING": True}, settings=base, web=WebSettings(api_token_hashes=TOKEN_ENTRY))
    app.config["FUZZ_CLUSTERS"] = clusters
    yield app
    get_resources(app).close()
    drop_index(es, base)
    es.close()
    redis.Redis.from_url(broker).flushdb()


@pytest.fixture(scope="module")
def api_schema(fuzzed_app):
    return schemathesis.openapi.from_wsgi("/api/openapi.json", fuzzed_app)


def _operations() -> list[tuple[str, str]]:
    document = json.loads(OPENAPI_FILE.read_text())
    return [(method.upper(), path) for path, ops in document["paths"].items() for method in ops]


#: schemathesis's own pytest plugin (``from_fixture``) reads a node attribute pytest 9.2 no longer has, so each
#: operation's cases come from its Hypothesis strategy, the library's documented lower-level door
@pytest.mark.parametrize("credentials", ["anonymous", "token"])
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=lambda m: m.value)
@pytest.mark.parametrize(("method", "path"), _operations(), ids=lambda v: str(v))
def test_the_api_conforms_to_its_schema(api_schema, method, path, mode, credentials):
    operation = api_schema[path][method]
    headers = AUTH if credentials == "token" else None

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])  # fmt: skip
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case):
        case.call_and_validate(checks=CHECKS, headers=headers)

    try:
        fuzz()
    except Unsatisfiable:  # nothing in this operation can be made invalid (no parameters, or free strings)
        assert mode is GenerationMode.NEGATIVE


@pytest.mark.parametrize("credentials", ["anonymous", "token"])
def test_a_method_an_address_does_not_take_is_a_405_with_allow(fuzzed_app, credentials):
    """What schemathesis's ``unsupported_method`` check asks (its coverage phase, which the strategies above skip)."""
    client = fuzzed_app.test_client()
    document = json.loads(OPENAPI_FILE.read_text())
    for path in document["paths"]:
        declared = {m.upper() for m in document["paths"][path]}
        url = path.replace("{job_id}", "ingest-20240101-000000-abcdef").replace("{", "").replace("}", "")
        for other in sorted({"GET", "POST", "PUT", "PATCH", "DELETE", "TRACE"} - declared):
            if _also_an_address_of(document, url, other):
                continue  # ids hold '/': GET /api/clusters/x/split reads the cluster "x/split"
            res = client.open(url, method=other, headers=AUTH if credentials == "token" else None)
            assert res.status_code == 405, (other, url, res.status_code)
            allowed = {m.strip() for m in res.headers.get("Allow", "").split(",")}
            assert declared <= allowed, (other, url, res.headers.get("Allow"))


def _also_an_address_of(document: dict, url: str, method: str) -> bool:
    """Whether another operation of ``method`` takes ``url``: its path parameters read as their schema's pattern
    says (cluster and page ids may hold '/'; a job id has a pattern of its own)."""
    for path, operations in document["paths"].items():
        if method.lower() not in operations:
            continue
        patterns = {
            param["name"]: param["schema"].get("pattern", "[^/]+").removeprefix("^").removesuffix("$")
            for param in operations[method.lower()].get("parameters", [])
            if param["in"] == "path"
        }
        pattern = re.sub(
            r"\\\{([^}]+)\\\}", lambda m, found=patterns: f"(?:{found.get(m.group(1), '[^/]+')})", re.escape(path)
        )
        if re.fullmatch(pattern, url):
            return True
    return False


def _real_requests(clusters: dict[str, str]) -> list[tuple[str, str, dict, dict]]:
    """(method, path, path parameters, query) of answers about stories that exist: a fuzzer rarely guesses an id."""
    ferry = clusters["ferry-a"]
    return [
        ("GET", "/api/search", {}, {"q": "ferry"}),
        ("GET", "/api/search", {}, {"q": "ferry", "sort": "date", "site": "a.test", "originals": "1"}),
        ("GET", "/api/clusters/{cluster_id}", {"cluster_id": ferry}, {}),
        ("GET", "/api/stories", {}, {"window": "all"}),
        ("GET", "/api/stories/{cluster_id}", {"cluster_id": ferry}, {}),
        ("GET", "/api/stories/{cluster_id}/versions/{page_id}", {"cluster_id": ferry, "page_id": "ferry-b"}, {}),
        ("GET", "/api/syndication", {}, {"window": "all"}),
        ("GET", "/api/corrections", {}, {"cluster_id": ferry}),
        ("GET", "/api/jobs", {}, {}),
    ]


def test_answers_about_real_stories_conform_to_the_schema(api_schema, fuzzed_app):
    for method, path, path_parameters, query in _real_requests(fuzzed_app.config["FUZZ_CLUSTERS"]):
        case = api_schema[path][method].Case(path_parameters=path_parameters, query=query)
        response = case.call_and_validate(checks=CHECKS, headers=AUTH)
        assert response.status_code == 200, (path, response.status_code)
