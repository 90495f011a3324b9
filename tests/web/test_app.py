"""The web front end (search UI, JSON API, admin) with Flask's test client against real servers."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis
from celery import Celery

from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.task_names import INGEST_BATCH
from newsfold.web import create_app
from newsfold.web.auth import token_digest
from newsfold.web.config import WebSettings
from newsfold.web.formatting import page_links, redact_url, safe_fragment, safe_url
from newsfold.web.queue import chunked
from newsfold.web.resources import web_client_settings
from newsfold.web.validation import InvalidPages, parse_pages
from tests.pages import page, story

DOWN_ES = "http://127.0.0.1:9"
DOWN_REDIS = "redis://127.0.0.1:9/0"
XSS_TITLE = "<script>alert(1)</script>"
#: writes (POST /api/...) and the admin need a login or an API token: these tests use a token
TOKEN = "test-web-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def make_app(web_app):
    """Apps with the test API token and a page size."""
    tokens = f"tests:{token_digest(TOKEN)}"
    return lambda settings, *, page_size=10, **config: web_app(
        settings, WebSettings(api_token_hashes=tokens, page_size=page_size), **config
    )


@pytest.fixture
def corpus(es, settings):
    """Two copies of one story on two sites (different headlines) and two other stories; one has a hostile title.

    Newest first: the copies (3 and 2 May), the storm story (1 May), the hostile one (30 April).
    """
    shared = story(101)
    raw = [
        Page(
            html=page("Zephyrton council approves budget", shared, site="one.test"),
            id="copy-one",
            url="https://one.test/budget",
            site="one.test",
            published="2024-05-02",
        ),
        Page(
            html=page("Zephyrton budget passes after long debate", shared, site="two.test"),
            id="copy-two",
            url="https://two.test/news/budget",
            site="two.test",
            published="2024-05-03",
        ),
        Page(
            html=page("Storm closes the harbour", story(102)),
            id="storm",
            url="https://three.test/storm",
            site="three.test",
            published="2024-05-01",
        ),
        # the entities make the extracted title contain a literal <script> element
        Page(
            html=page("Quillbrook warning &lt;script&gt;alert(1)&lt;/script&gt; issued", story(103)),
            id="hostile",
            url="javascript:alert(2)",
            site="four.test",
            published="2024-04-30",
        ),
    ]
    signed = [sign_page(p, settings) for p in raw]
    outcomes = {o.page_id: o for o in ingest(signed, client=es, settings=settings)}
    assert outcomes["copy-one"].cluster_id == outcomes["copy-two"].cluster_id
    assert len({o.cluster_id for o in outcomes.values()}) == 3
    # the stories' origins are written after each batch without waiting for a refresh (docs/stories.md): a reader
    # sees them within one refresh interval; the tests look after a refresh
    es.indices.refresh(index=settings.index)
    return {"shared_cluster": outcomes["copy-one"].cluster_id}


@pytest.fixture
def client(make_app, settings, corpus):
    """A test client on the corpus with two stories per page."""
    return make_app(settings, page_size=2).test_client()


def _text(response) -> str:
    return response.get_data(as_text=True)


# search page


def test_search_page_folds_copies_into_one_story(client):
    res = client.get("/?sort=date")  # the newest stories (no query opens on top stories)
    html = _text(res)
    assert res.status_code == 200
    assert "3 stories (4 pages)" in html
    assert html.count('class="story"') == 2
    assert "1 other version" in html
    # the story's face (the two copies are as full: the earlier) is shown under its own headline, the newest copy
    # (the one the listing found) named under it and listed with its similarity
    shown, _, folded = html.partition("1 other version")
    assert "Zephyrton council approves budget" in shown and "Matched in" in shown
    assert "Zephyrton budget passes after long debate" not in shown
    assert "Zephyrton budget passes after long debate" in folded
    assert re.search(r"(9\d|100)% similar", folded)
    assert "<details" in html


def test_search_query_highlights_and_counts_one_story(client):
    res = client.get("/?q=zephyrton")
    html = _text(res)
    assert res.status_code == 200
    assert "1 story (2 pages)" in html
    assert "<mark>Zephyrton</mark>" in html


def test_search_filters_by_site(client):
    html = _text(client.get("/?site=three.test&sort=date"))
    assert "1 story (1 page)" in html
    assert "Storm closes the harbour" in html
    assert "Zephyrton" not in html.split("</form>", 1)[1]


def test_pagination_shows_the_second_page(client):
    first = _text(client.get("/"))
    assert 'href="/?page=2"' in first and "Next" in first
    res = client.get("/?page=2")
    html = _text(res)
    assert res.status_code == 200
    assert html.count('class="story"') == 1
    assert "Quillbrook warning" in html
    assert "Zephyrton" not in html.split("</form>", 1)[1]
    assert 'rel="prev"' in html
    assert re.search(r'aria-current="page"[^>]*>(<[^>]+>[^<]*</span>)?2</span>', html)


def test_titles_and_snippets_are_escaped(client):
    for url in ("/?page=2", "/?q=quillbrook"):
        html = _text(client.get(url))
        assert "Quillbrook" in html
        assert XSS_TITLE not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "javascript:" not in html  # a non-http URL is not made a link


def test_too_long_query_is_a_clear_400(client):
    res = client.get("/", query_string={"q": "x" * 600})
    assert res.status_code == 400
    assert "the limit is 500" in _text(res)
    assert 'value="' + "x" * 600 in _text(res)  # the form keeps the query to fix it


@pytest.mark.parametrize("number", ["abc", "0", "-1", "²", "1.5"])
def test_bad_page_number_is_a_400(client, number):
    res = client.get("/", query_string={"page": number})
    assert res.status_code == 400
    assert "page must be a positive whole number" in _text(res)


def test_page_number_out_of_range_is_a_400(client):
    for number in ("6000", "9" * 5000):
        res = client.get("/", query_string={"page": number})
        assert res.status_code == 400
        assert "out of range" in _text(res)


def test_page_beyond_the_results_says_so(client):
    res = client.get("/?page=7")
    assert res.status_code == 200
    assert "There are no stories on page 7" in _text(res)


# JSON API


def test_api_search_counts_stories_and_documents(client):
    data = client.get("/api/search").get_json()
    assert (data["stories"], data["documents"], data["page"], data["page_size"]) == (3, 4, 1, 2)
    top = data["results"][0]
    assert top["id"] == "copy-one" and top["title"].startswith("Zephyrton council approves budget")  # the face
    assert top["matched"]["id"] == "copy-two"  # the newest
    assert top["size"] == 2
    assert [v["id"] for v in top["versions"]] == ["copy-two"]
    assert 0.9 <= top["versions"][0]["similarity"] <= 1.0
    assert "signature" not in top and "signature" not in top["versions"][0]
    assert data["results"][1]["size"] == 1 and data["results"][1]["versions"] == []


def test_api_search_second_page_and_highlight(client):
    data = client.get("/api/search?page=2").get_json()
    assert [r["id"] for r in data["results"]] == ["hostile"]
    found = client.get("/api/search?q=zephyrton").get_json()
    assert (found["query"], found["stories"], found["documents"]) == ("zephyrton", 1, 2)
    top = found["results"][0]
    assert "<mark>" in (top["title_highlight"] or "") + " ".join(top["highlight"])


def test_api_search_rejects_a_too_long_query(client):
    res = client.get("/api/search", query_string={"q": "x" * 600})
    assert res.status_code == 400
    assert "limit is 500" in res.get_json()["error"]


def test_api_cluster_lists_members_and_404s_for_unknown(client, corpus):
    res = client.get(f"/api/clusters/{corpus['shared_cluster']}")
    data = res.get_json()
    assert res.status_code == 200
    assert data["size"] == 2 and not data["truncated"]
    assert {m["site"] for m in data["members"]} == {"one.test", "two.test"}
    missing = client.get("/api/clusters/no-such-cluster")
    assert missing.status_code == 404
    assert "no-such-cluster" in missing.get_json()["error"]


def test_api_unknown_route_answers_json(client):
    res = client.get("/api/nothing-here")
    assert res.status_code == 404
    assert "error" in res.get_json()


# admin


def test_admin_lists_the_largest_cluster_and_totals(client, corpus):
    assert client.get("/admin/").status_code == 303  # anonymous: to the login
    res = client.get("/admin/", headers=AUTH)
    html = _text(res)
    assert res.status_code == 200
    assert f"/admin/clusters/{corpus['shared_cluster']}" in html
    assert "Zephyrton council approves budget" in html  # the first copy is the sample
    assert "Storm closes the harbour" not in html  # a single page is not a cluster


def test_admin_cluster_page_shows_members(client, corpus):
    res = client.get(f"/admin/clusters/{corpus['shared_cluster']}", headers=AUTH)
    html = _text(res)
    assert res.status_code == 200
    assert "one.test" in html and "two.test" in html
    assert "https://two.test/news/budget" in html
    assert re.search(r"(9\d|100)%", html)
    missing = client.get("/admin/clusters/no-such-cluster", headers=AUTH)
    assert missing.status_code == 404
    assert "no-such-cluster" in _text(missing) and "<html" in _text(missing)


# unreachable services


def test_elasticsearch_down_is_a_fast_503(make_app, settings):
    app = make_app(settings.replace(elasticsearch_url=DOWN_ES))
    client = app.test_client()
    started = time.monotonic()
    res = client.get("/?q=budget")
    html = _text(res)
    assert res.status_code == 503
    assert f"cannot reach Elasticsearch at {DOWN_ES}" in html
    assert "Traceback" not in html and "urllib3" not in html
    assert time.monotonic() - started < 10
    api = client.get("/api/search")
    assert api.status_code == 503
    assert "cannot reach Elasticsearch" in api.get_json()["error"]
    assert client.get("/admin/", headers=AUTH).status_code == 503
    assert client.get("/api/clusters/x").status_code == 503


def test_missing_index_is_a_503_that_names_it(make_app, settings, es):
    app = make_app(settings.replace(index=f"missing-{uuid.uuid4().hex[:8]}"))
    res = app.test_client().get("/")
    assert res.status_code == 503
    assert "has no index named" in _text(res)


def test_redis_down_is_a_503_json_for_page_submission(make_app, settings):
    client = make_app(settings.replace(redis_url=DOWN_REDIS)).test_client()
    res = client.post("/api/pages", json={"pages": [{"html": "<p>hello</p>"}]}, headers=AUTH)
    assert res.status_code == 503
    assert res.get_json()["error"].startswith("The task queue is temporarily unavailable: cannot reach Redis")
    state = client.get(f"/api/tasks/{uuid.uuid4()}")
    assert state.status_code == 503 and "Redis" in state.get_json()["error"]


def test_no_redis_configured_is_a_503(make_app, settings):
    client = make_app(settings.replace(redis_url=None)).test_client()
    res = client.post("/api/pages", json={"pages": [{"html": "<p>hello</p>"}]}, headers=AUTH)
    assert res.status_code == 503
    assert "REDIS_URL" in res.get_json()["error"]


# page submission


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not json", "the body must be JSON"),
        ([], "must be a JSON object"),
        ({"pages": "<p>x</p>"}, '"pages" must be a list'),
        ({"pages": []}, '"pages" is empty'),
        ({"pages": [{"url": "https://a.test/"}]}, "pages[0].html must be a string (missing)"),
        ({"pages": [{"html": "<p>x</p>"}, {"html": 5}]}, "pages[1].html must be a string (got int)"),
        ({"pages": [{"html": "x", "url": 7}]}, "pages[0].url must be a string or null"),
        ({"pages": [{"html": "x", "html_path": "/etc/passwd"}]}, "unknown field(s) html_path"),
        ({"pages": ["<p>x</p>"]}, "pages[0] must be an object"),
        ({"pages": [{"html": "x"}] * 1001}, "too many pages: 1001; send at most 1000"),
    ],
)
def test_page_submission_validation(make_app, settings, body, message):
    client = make_app(settings.replace(redis_url=DOWN_REDIS)).test_client()  # never reached: 400 comes first
    if isinstance(body, str):
        res = client.post("/api/pages", data=body, content_type="application/json", headers=AUTH)
    else:
        res = client.post("/api/pages", json=body, headers=AUTH)
    assert res.status_code == 400
    assert message in res.get_json()["error"]


def _own_db(url: str) -> str:
    """The Redis URL on database 15, so a worker on the shared Redis never takes these test tasks."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/15", parts.query, parts.fragment))


def _store_result(url: str, task_id: str, result, state: str) -> None:
    """Record a task result as a worker would (without expiry: redis-py deprecates the SETEX Celery uses)."""
    worker_side = Celery("test-worker", backend=url, set_as_current=False)
    worker_side.conf.update(result_serializer="json", result_expires=None)
    try:
        worker_side.backend.store_result(task_id, result, state)
    finally:
        worker_side.close()


def test_every_task_name_is_a_task_the_workers_run():
    from newsfold import task_names
    from newsfold.indexer.celery_app import app

    app.loader.import_default_modules()  # the worker's own task modules
    names = {value for key, value in vars(task_names).items() if key.isupper() and isinstance(value, str)}
    assert len(names) == 4 and names <= set(app.tasks), names - set(app.tasks)


def test_page_submission_queues_batches(make_app, settings, redis_url):
    queue_url = _own_db(redis_url)
    app = make_app(settings.replace(redis_url=queue_url, batch_size=2))
    client = app.test_client()
    pages = [{"html": page(f"Title {i}", story(200 + i)), "url": f"https://a.test/{i}"} for i in range(5)]
    res = client.post("/api/pages", json={"pages": pages}, headers=AUTH)
    data = res.get_json()
    assert res.status_code == 202
    assert data["pages"] == 5 and len(data["tasks"]) == 3

    broker = redis.Redis.from_url(queue_url)
    queued = {}
    try:
        for raw in broker.lrange("celery", 0, -1):
            message = json.loads(raw)
            if message["headers"]["id"] in data["tasks"]:
                queued[message["headers"]["id"]] = (message, raw)
        assert set(queued) == set(data["tasks"])
        sizes = []
        for message, _ in queued.values():
            assert message["headers"]["task"] == INGEST_BATCH
            args, kwargs, _ = json.loads(base64.b64decode(message["body"]))
            assert set(args[0][0]) == {"html", "url", "id", "site", "lang", "published", "section"}
            sizes.append(len(args[0]))
        assert sorted(sizes) == [1, 2, 2]

        first = data["tasks"][0]
        assert client.get(f"/api/tasks/{first}").get_json() == {"id": first, "state": "PENDING"}
        _store_result(queue_url, first, [{"page_id": "p0", "status": "new", "cluster_id": "p0"}], "SUCCESS")
        _store_result(queue_url, data["tasks"][1], ValueError("boom"), "FAILURE")
        done = client.get(f"/api/tasks/{first}").get_json()
        assert done == {
            "id": first,
            "state": "SUCCESS",
            "result": [{"page_id": "p0", "status": "new", "cluster_id": "p0"}],
        }
        failed = client.get(f"/api/tasks/{data['tasks'][1]}").get_json()
        assert failed["state"] == "FAILURE" and "boom" in failed["error"]
    finally:
        for _, raw in queued.values():
            broker.lrem("celery", 0, raw)
        broker.delete(*[f"celery-task-meta-{t}" for t in data["tasks"]])
        broker.close()


def test_task_state_refuses_odd_ids(make_app, settings):
    client = make_app(settings.replace(redis_url=DOWN_REDIS)).test_client()
    res = client.get("/api/tasks/" + "x" * 200)
    assert res.status_code == 404
    assert "error" in res.get_json()


# design rules and pure helpers


def test_web_never_imports_the_indexer():
    code = (
        "import sys, web, web.api, web.admin, web.search; from web import create_app; "
        "bad = [m for m in sys.modules if m == 'indexer' or m.startswith('indexer.')]; "
        "sys.exit(f'web imported {bad}' if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_web_client_fails_fast(settings):
    slow = settings.replace(es_timeout=30.0, es_max_retries=3)
    fast = web_client_settings(slow, timeout=5.0, max_retries=1)
    assert (fast.es_timeout, fast.es_max_retries) == (5.0, 1)
    assert (
        web_client_settings(settings.replace(es_timeout=2.0, es_max_retries=0), timeout=5.0, max_retries=1).es_timeout
        == 2.0
    )


def test_safe_fragment_keeps_only_mark_tags():
    escaped = "<mark>Budget</mark> &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"
    assert str(safe_fragment(escaped)) == escaped
    raw = "<mark>Budget</mark> <script>alert(1)</script>"
    assert str(safe_fragment(raw)) == "<mark>Budget</mark> &lt;script&gt;alert(1)&lt;/script&gt;"


def test_safe_url_and_redact_url():
    assert safe_url("https://a.test/x") == "https://a.test/x"
    assert safe_url("javascript:alert(1)") is None and safe_url("//a.test/x") is None and safe_url(None) is None
    assert redact_url("redis://:secret@db.test:6379/0") == "redis://db.test:6379/0"
    assert redact_url("http://127.0.0.1:9200") == "http://127.0.0.1:9200"
    several = "http://u:pw@es1.test:9200, http://u:pw@es2.test:9201"  # a cluster's nodes in ELASTICSEARCH_URL
    assert redact_url(several) == "http://es1.test:9200,http://es2.test:9201"


def test_page_links_and_chunks():
    assert page_links(1, 1) == [1]
    assert page_links(5, 20) == [1, None, 3, 4, 5, 6, 7, None, 20]
    assert page_links(2, 4) == [1, 2, 3, 4]
    assert [len(c) for c in chunked(list(range(5)), 2)] == [2, 2, 1]


def test_parse_pages_reports_every_problem():
    with pytest.raises(InvalidPages) as caught:
        parse_pages({"pages": [{"html": 1}, {"html": "x", "lang": 2}]}, max_pages=10)
    assert caught.value.problems == [
        "pages[0].html must be a string (got int)",
        "pages[1].lang must be a string or null, got int",
    ]
    assert parse_pages({"pages": [{"html": "x", "site": "a.test"}]}, max_pages=10) == [
        {"html": "x", "url": None, "id": None, "site": "a.test", "lang": None, "published": None, "section": None}
    ]


def test_healthz_answers_without_servers():
    from newsfold.plugin.settings import Settings

    app = create_app(settings=Settings(elasticsearch_url="http://127.0.0.1:9"))
    assert app.test_client().get("/healthz").get_json() == {"status": "ok"}


def test_a_time_is_relative_for_the_last_days_a_date_beyond_and_exact_on_hover():
    import datetime as dt

    from newsfold.web.formatting import NewsTime, foreign_lang, language_name, news_time

    now = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)
    assert news_time("2026-11-27T09:10:00Z", now=now) == NewsTime(
        "2 h ago", "27 Nov 2026, 09:10 UTC", "2026-11-27T09:10:00Z", "title"
    )
    assert news_time("2026-11-27T11:48:00+00:00", now=now).shown == "12 min ago"
    assert news_time("2026-11-27T11:59:30Z", now=now).shown == "just now"
    assert news_time("2026-11-26T11:00:00Z", now=now).shown == "yesterday"
    assert news_time("2026-11-24T11:00:00Z", now=now).shown == "3 days ago"
    assert news_time("2026-11-19T11:00:00Z", now=now) == NewsTime(
        "19 Nov 2026", "19 Nov 2026, 11:00 UTC", "2026-11-19T11:00:00Z", "date"
    )
    assert news_time("2026-11-19T11:00:00Z", "datetime", now=now).shown == "19 Nov 2026, 11:00 UTC"
    # another zone is shown in UTC, and so is the datetime attribute
    assert news_time("2026-11-19T13:00:00+02:00", now=now).datetime == "2026-11-19T11:00:00Z"
    ahead = news_time("2026-11-27T13:00:00Z", "datetime", now=now)  # ahead of the clock: exact
    assert (ahead.shown, ahead.local) == ("27 Nov 2026, 13:00 UTC", "datetime")
    assert news_time("2026-11-27", now=now) == NewsTime("27 Nov 2026", "27 Nov 2026", "2026-11-27", "")  # a day
    assert news_time("soon", now=now).shown == "soon" and news_time(None, now=now).shown == ""
    assert (language_name("de"), language_name("pt-BR"), language_name("xx"), language_name(None)) == (
        "German",
        "Portuguese",
        "xx",
        "",
    )
    assert (foreign_lang("en-GB"), foreign_lang("de"), foreign_lang("zh_TW"), foreign_lang('x" onload')) == (
        None,
        "de",
        "zh-TW",
        None,
    )
