"""Hostile input: every bad request gets a 400 with a message, and no search can pin the server."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from newsfold.plugin import queries
from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import close_resources
from tests.pages import page, story

REAL_ES = bool(os.environ.get("ELASTICSEARCH_URL"))


def _standin_cpu() -> float | None:
    """CPU seconds used so far by the osmem stand-in this test session started (None on a real cluster)."""
    if REAL_ES:
        return None
    total = 0.0
    found = False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            name = fields[0].split("(", 1)[1]
            rest = fields[1].split()
        except (OSError, IndexError):
            continue
        if name.startswith("osmem-server") and int(rest[1]) == os.getpid():
            total += (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
            found = True
    return total if found else None


@pytest.fixture
def app(settings, es):
    from newsfold.plugin import Page, ingest, sign_page, sign_text

    pages = [sign_page(Page(html=page("Harbour strike ends", story(31)), url=f"https://s{n}.example/a"), settings)
             for n in range(3)]
    # many pages where "the" is everywhere: what makes a sloppy phrase of repeated words explode
    rng = random.Random(7)
    vocab = "the of and a to in harbour ship port strike workers union".split()
    for n in range(200):
        text = " ".join(rng.choice(vocab) for _ in range(400))
        pages.append(sign_text(text, page_id=f"dense-{n}", settings=settings))
    ingest(pages, client=es, settings=settings)
    made = create_app({"TESTING": True}, settings=settings, web=WebSettings(page_size=5))
    yield made
    close_resources(made)


HOSTILE = [
    '"the the the the the the the the the the the"~100',
    "the~2 the~2 the~2 the~2 the~2 the~2 the~2 the~2",
    "t* th* the* a* b* c* d* e* f* g* h* i* j* k*",
]


def test_a_hostile_query_answers_fast_and_leaves_the_server_idle(app):
    client = app.test_client()
    for q in HOSTILE:
        started = time.monotonic()
        res = client.get("/api/search", query_string={"q": q})
        took = time.monotonic() - started
        assert res.status_code in (200, 400), res.get_data(as_text=True)
        assert took < 2.0, f"{q!r} took {took:.1f} s"
        before = _standin_cpu()
        if before is not None:
            time.sleep(1.0)
            assert _standin_cpu() - before < 0.3, f"the search server kept computing after {q!r} was answered"


def test_public_queries_allow_only_cheap_operators():
    body = queries.text_query('"storm surge" -flood harbour|port')
    sqs = body["simple_query_string"]
    allowed = set(sqs["flags"].split("|"))
    assert allowed == {"AND", "OR", "NOT", "PHRASE", "PRECEDENCE", "WHITESPACE", "ESCAPE"}
    with pytest.raises(ValueError, match="at most 32 words"):
        queries.text_query(" ".join(["word"] * 33))
    with pytest.raises(ValueError, match="characters; the limit is 500"):
        queries.text_query("x" * 501)
    assert queries.collapsed_search("storm")["timeout"] == queries.SEARCH_TIMEOUT


@pytest.mark.parametrize("path", ["/", "/api/search"])
@pytest.mark.parametrize("args", [{"to": "9999-12-31"}, {"from": "0001-01-01", "to": "9999-12-31"}])
def test_extreme_dates_are_answered_not_500(app, path, args):
    res = app.test_client().get(path, query_string={"q": "harbour", **args})
    assert res.status_code == 200, res.get_data(as_text=True)[:300]


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


@pytest.mark.parametrize(
    "path",
    ["/api/pages", "/api/jobs/reindex", "/api/clusters/c1/split", "/api/pairs/not-duplicates"],
)
def test_json_nested_too_deep_is_a_400(settings, es, path):
    from newsfold.web.auth import new_api_token

    token, entry = new_api_token("tests")
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(api_token_hashes=entry))
    res = app.test_client().post(
        path, data=_deep(100_000), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    assert res.status_code == 400, res.get_data(as_text=True)[:300]
    assert "JSON" in res.get_json()["error"]
    close_resources(app)


def test_a_huge_offset_is_a_400(settings, redis_url):
    from newsfold.web.auth import new_api_token

    token, entry = new_api_token("tests")
    app = create_app({"TESTING": True}, settings=settings.replace(redis_url=redis_url),
                     web=WebSettings(api_token_hashes=entry))
    res = app.test_client().get("/api/jobs?offset=99999999999999999999999",
                                headers={"Authorization": f"Bearer {token}"})
    assert res.status_code == 400 and "offset" in res.get_json()["error"]
    close_resources(app)
