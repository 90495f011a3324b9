"""Every id the grammar accepts (``plugin.ids``) reaches every route, link, correction and delete (issue 32, item 8).

The awkward ids of ``tests/plugin/test_ids.py`` (spaces, ``//``, a query and a fragment, a trailing
slash, a ``%``, route words that are not between slashes, 512 bytes) found a story, and each is
opened through the story pages, the stories and clusters API, the admin's cluster, compare and a
correction, the links the pages print, and ``delete_pages``.
"""

from __future__ import annotations

import html
import re
from urllib.parse import quote, unquote, urljoin, urlsplit

import pytest

from newsfold.plugin import delete_pages
from newsfold.plugin.ids import LAST_ROUTE_WORDS, ROUTE_WORDS
from newsfold.plugin.sign.signed_page import Page
from tests.pages import page, story
from tests.plugin.test_ids import AWKWARD
from tests.web.admin.helpers import BEARER, PASSWORD, csrf_of, html_of, ingest_pages


def _path(value: str) -> str:
    return quote(value, safe="/")


def _links(res, pattern: str) -> list[str]:
    return [html.unescape(h) for h in re.findall(rf'href="({pattern}[^"]*)"', html_of(res))]


@pytest.fixture
def logged_in(make_app, admin_settings):
    client = make_app(admin_settings).test_client()
    form = client.get("/login")
    client.post("/login", data={"username": "admin", "password": PASSWORD, "csrf_token": csrf_of(form)})
    return client


@pytest.mark.parametrize("pid", AWKWARD, ids=range(len(AWKWARD)))
def test_an_awkward_but_valid_id_reaches_every_route_link_correction_and_delete(logged_in, es, settings, pid):
    text = story(3220, 16)
    out = ingest_pages(es, settings, [Page(html=page("Awkward ids", text), id=pid, site="a.test",
                                           published="2024-03-05T10:00:00Z")])  # fmt: skip
    out |= ingest_pages(es, settings, [Page(html=page("Awkward ids again", text[:12]), id="copy", site="b.test",
                                            published="2024-03-06T10:00:00Z")])  # fmt: skip
    assert out[pid].cluster_id == out["copy"].cluster_id == pid
    es.indices.refresh(index=settings.index)
    client, c = logged_in, _path(pid)
    story_page = client.get(f"/stories/{c}")
    assert story_page.status_code == 200, (story_page.status_code, html_of(story_page)[:200])
    assert {v["id"] for v in client.get(f"/api/stories/{c}").get_json()["versions"]} == {pid, "copy"}
    for other in (pid, "copy"):
        version = client.get(f"/api/stories/{c}/versions/{_path(other)}")
        assert version.status_code == 200, (other, version.status_code)
    # the links the story page prints lead, as a browser resolves them, to this story's versions
    base = f"http://localhost/stories/{c}"
    links = _links(story_page, "/stories/")
    assert links, "the story page links its versions"
    for link in links:
        path = urlsplit(urljoin(base, link)).path
        assert unquote(path).startswith(f"/stories/{pid}/versions/"), link
        opened = client.get(path)
        assert opened.status_code == 200, (link, opened.status_code)
        (back,) = _links(opened, "/stories/")
        assert unquote(urlsplit(urljoin("http://localhost" + path, back)).path) == f"/stories/{pid}"
    assert client.get(f"/api/clusters/{c}").status_code == 200
    detail = client.get(f"/admin/clusters/{c}")
    assert detail.status_code == 200 and pid in html.unescape(html_of(detail))
    compare = client.get(f"/admin/clusters/{c}/compare", query_string={"a": pid, "b": "copy"})
    assert compare.status_code == 200, html_of(compare)[:300]
    split = client.post(f"/api/clusters/{c}/split", json={"page_id": pid}, headers=BEARER)
    assert split.status_code == 200, split.get_data(as_text=True)[:300]
    (gone,) = delete_pages([pid], client=es, settings=settings)
    assert gone.status == "deleted"


def test_the_route_words_the_grammar_refuses_are_those_of_the_routes(make_app, admin_settings):
    """A story route that puts a new word after a story name must add it to ``plugin.ids`` too (reads and
    actions alike: ``GET /api/clusters/x/merge`` read a story ``x/merge`` before the actions' words were there)."""
    app = make_app(admin_settings)
    after, last = set(), set()
    for rule in app.url_map.iter_rules():
        found = re.search(r"<(?:path|story):cluster_id>/([^/<]+)(/?.*)$", rule.rule)
        if found:
            after.add(found.group(1))
            if not found.group(2):
                last.add(found.group(1))
    assert after == set(ROUTE_WORDS)
    assert last == set(LAST_ROUTE_WORDS)


@pytest.mark.parametrize("action", ["merge", "split", "representative"])
def test_an_action_address_is_no_story_address(make_app, admin_settings, es, action):
    """Issue 39, item 5: ``OPTIONS /api/clusters/x/merge`` answered ``Allow: GET, POST`` and ``GET`` read the
    story ``x/merge``; the action takes POST only, and no page or story can be named so."""
    app = make_app(admin_settings)
    client = app.test_client()
    options = client.options(f"/api/clusters/x/{action}", headers=BEARER)
    assert {m.strip() for m in options.headers["Allow"].split(",")} == {"POST", "OPTIONS"}
    read = client.get(f"/api/clusters/x/{action}", headers=BEARER)
    assert read.status_code == 405 and "GET" not in read.headers["Allow"]
    assert "GET" not in app.url_map.bind("localhost").allowed_methods(f"/admin/clusters/x/{action}")
    assert client.get(f"/api/clusters/x/{action}s", headers=BEARER).status_code == 404  # a name like a word: a story
    refused = client.post("/api/pages", json={"pages": [{"html": "<p>x</p>", "id": f"x/{action}"}]}, headers=BEARER)
    assert refused.status_code == 400 and "ends with /compare, /merge" in refused.get_json()["error"]
