"""Issues 32 (item 13) and 39 (item 5): schemathesis runs every /api operation of web/openapi.json, anonymous and
with a token, and finds no failure.

The run is schemathesis's own command line (what an auditor runs) against the app served on a loopback port of the
test servers: its own index holding a small story corpus, and a Redis database of its own that no worker reads,
so ``POST /api/pages`` and ``POST /api/jobs/reindex`` only queue messages nobody takes (the database is emptied
afterwards) and the corrections act on the corpus. Its phases are the schema's examples, the coverage phase
(each limit's boundary values, in and out of range: what found the 13 schema-valid values the API refused, and
the action addresses that answered GET) and fuzzing, with every check but the stateful ones (each 5xx, each
status, header or body off the schema, each schema-valid request refused and each invalid one accepted, each
``Allow`` of a method an address does not take). A fixed seed makes every run send the same requests.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from xml.etree import ElementTree

import pytest
import redis
import schemathesis
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
from werkzeug.serving import make_server

from newsfold.web import create_app
from newsfold.web.api.openapi_doc import openapi_document
from newsfold.web.auth import new_api_token
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.story_corpus import ingest_story_corpus

TOKEN, TOKEN_ENTRY = new_api_token("fuzz")
AUTH = {"Authorization": f"Bearer {TOKEN}"}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance, negative_data_rejection, missing_required_header, ignored_auth]  # fmt: skip
#: fuzzing examples per operation and credentials (``NEWSFOLD_FUZZ_EXAMPLES`` for a deeper run); the coverage
#: phase's boundary values come on top. 50 keep the two runs near a minute each on two shared cores
EXAMPLES = int(os.environ.get("NEWSFOLD_FUZZ_EXAMPLES", "50"))
SEED = 39
#: the checks that need a stateful run (links between operations) or several users are left out
STATEFUL_CHECKS = "use_after_free,ensure_resource_availability,object_level_authorization"


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
def served(fuzzed_app):
    """The app on a loopback port (one request at a time, as the run sends them); its base URL."""
    server = make_server("127.0.0.1", 0, fuzzed_app)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def api_schema(fuzzed_app):
    return schemathesis.openapi.from_wsgi("/api/openapi.json", fuzzed_app)


@pytest.mark.parametrize("credentials", ["anonymous", "token"])
def test_schemathesis_finds_no_failure_in_any_operation(served, tmp_path, credentials):
    command = [str(Path(sys.executable).with_name("schemathesis")), "run", f"{served}/api/openapi.json",
               "--phases", "examples,coverage,fuzzing", "--checks", "all", "--exclude-checks", STATEFUL_CHECKS,
               "--seed", str(SEED), "--max-examples", str(EXAMPLES), "--workers", "1", "--no-shrink",
               "--output-truncate", "false", "--report", "junit",
               "--report-junit-path", str(tmp_path / "run.xml")]  # fmt: skip
    if credentials == "token":
        command += ["--header", f"Authorization: Bearer {TOKEN}"]
    run = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=tmp_path)
    report = run.stdout + run.stderr
    tested = {case.get("name") for case in ElementTree.parse(tmp_path / "run.xml").iter("testcase")}
    # every operation ran but the schema's own address, which schemathesis reads rather than tests
    assert tested == {f"{m} {p}" for m, p in _operations()} - {"GET /api/openapi.json"}, report[-3000:]
    start = report.find("= FAILURES =")
    failures = report[start : start + 12000] if start >= 0 else report[-6000:]
    assert run.returncode == 0, failures
    generated = re.search(r"(\d+) generated, (\d+) passed", report)
    assert generated and int(generated.group(1)) > 20 * len(_operations()), report[-3000:]


def _operations() -> list[tuple[str, str]]:
    document = openapi_document()
    return [(method.upper(), path) for path, ops in document["paths"].items() for method in ops]


@pytest.mark.parametrize("credentials", ["anonymous", "token"])
def test_a_method_an_address_does_not_take_is_a_405_with_allow(fuzzed_app, credentials):
    """What schemathesis's ``unsupported_method`` check asks (its coverage phase, which the strategies above skip)."""
    client = fuzzed_app.test_client()
    document = openapi_document()
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
