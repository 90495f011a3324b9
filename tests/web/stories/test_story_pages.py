"""Top stories on the search page, story pages, version relations in search, the stories API and the feeds."""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import feedparser
import pytest

from newsfold.web import create_app
from newsfold.web.auth import token_digest
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.story_corpus import LOCAL, body_of, ingest_story_corpus

EDITOR_TOKEN = "editor-token-" + "t" * 32


@pytest.fixture
def clusters(es, settings):
    return ingest_story_corpus(es, settings)


@pytest.fixture
def client(settings, clusters):
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(page_size=3))
    yield app.test_client()
    get_resources(app).close()


def _text(res) -> str:
    return res.get_data(as_text=True)


def _ids(page: str, testid: str) -> list[str]:
    return re.findall(rf'data-testid="{testid}" data-cluster-id="([^"]+)"', page)


def test_api_top_stories_by_coverage_latest_window_and_pages(client, clusters):
    res = client.get("/api/stories?window=all")
    assert res.status_code == 200
    body = res.get_json()
    assert (body["stories"], body["total_pages"], body["newest"]) == (5, 2, "2015-03-10T12:00:00Z")
    # each story is shown by its face: the ferry story's fullest version is ferry-d (it adds 2 paragraphs)
    assert [s["id"] for s in body["results"]] == ["ferry-d", "old-a", "museum-a"]
    assert (body["results"][0]["sites"], body["results"][0]["pages"]) == (4, 4)
    latest = client.get("/api/stories?window=all&sort=latest&page=2").get_json()
    assert [s["id"] for s in latest["results"]] == ["lantern-a", "old-a"]
    day = client.get("/api/stories?window=24h").get_json()
    # each story is shown by its face, even when that is older than the window
    assert [s["id"] for s in day["results"]] == ["museum-a", "ferry-d", "single"]
    assert client.get("/api/stories?window=all&lang=de").get_json()["stories"] == 1


@pytest.mark.parametrize(
    "query, message",
    [
        ("window=1y", "window must be one of 24h, 7d, 30d, all"),
        ("sort=relevance", "sort must be 'coverage' or 'latest'"),
        ("page=0", "page must be a positive whole number"),
        ("page=abc", "page must be a positive whole number"),
        ("page=500", "page 500 is out of range"),
        ("page=" + "9" * 50, "is out of range"),
        ("x=" + "j" * 5000, "the address is too long"),
        ("site=" + "x" * 201, "site must be at most 200 printable characters"),
        ("lang=%00", "lang must be at most 200 printable characters"),
    ],
)
def test_bad_top_story_arguments_are_400_with_a_message(client, query, message):
    res = client.get(f"/api/stories?{query}")
    assert res.status_code == 400 and message in res.get_json()["error"]
    if query.startswith("sort="):  # on the page, the search form's order without a query opens top stories
        page = client.get(f"/?{query}")
        assert page.status_code == 200 and 'data-testid="top-stories"' in _text(page)
        return
    page = client.get(f"/?{query}")
    assert page.status_code == 400 and message in html.unescape(_text(page))
    assert client.get(f"/feed?{query}").status_code == 400


def test_the_search_page_opens_on_top_stories_with_toggles_and_a_feed_link(client, clusters):
    page = _text(client.get("/?window=all"))
    assert _ids(page, "top-story") == [clusters["ferry-a"], clusters["old-a"], clusters["museum-a"]]
    assert "Top stories · All" in page and "4 sites" in page
    assert 'href="/?window=all&amp;sort=latest"' in page  # the Latest toggle keeps the window
    assert 'href="/?window=24h"' in page
    assert re.search(r'<link rel="alternate" type="application/atom\+xml"[^>]+href="/feed\?window=all"', page)
    latest = _text(client.get("/?window=all&sort=latest"))
    assert _ids(latest, "top-story")[0] == clusters["museum-a"]
    # the search form with its query cleared sends its own order: top stories again, with the filters kept
    cleared = _text(client.get("/?q=&sort=relevance&lang=de&window=all"))
    assert 'data-testid="top-stories"' in cleared and _ids(cleared, "top-story") == [clusters["single"]]
    assert 'data-testid="top-stories"' not in _text(client.get("/?sort=date"))  # the newest-stories list, as before
    # a query, or a date range, is a search as before
    assert 'data-testid="top-stories"' not in _text(client.get("/?q=headline"))
    assert 'data-testid="top-stories"' not in _text(client.get("/?from=2015-03-01"))


def test_search_versions_say_what_they_add_or_lack(client, clusters):
    body = client.get("/api/search?q=ferry&sort=date").get_json()
    (story,) = [s for s in body["results"] if s["cluster_id"] == clusters["ferry-a"]]
    relations = {v["id"]: v["relation"] for v in story["versions"]}
    relations[story["id"]] = story["relation"]
    assert relations["ferry-a"]["kind"] == "reference"
    assert relations["ferry-b"]["kind"] == "shorter" and relations["ferry-c"]["label"] == "full copy"
    assert relations["ferry-d"]["label"] == "adds 2 paragraphs"
    page_html = _text(client.get("/?q=ferry"))
    badges = re.findall(r'data-testid="version-relation"[^>]*>([^<]+)<', page_html)
    # the versions under the best-ranked one carry their badges (which version ranks first is the engine's say)
    shown = client.get("/api/search?q=ferry").get_json()["results"][0]
    assert shown["cluster_id"] == clusters["ferry-a"]
    assert ("adds 2 paragraphs" in badges) == (shown["id"] != "ferry-d")
    assert any(b.startswith("shorter (holds ") for b in badges) == (shown["id"] != "ferry-b")


def test_story_page_and_api(client, clusters):
    cluster = clusters["ferry-a"]
    body = client.get(f"/api/stories/{quote(cluster)}").get_json()
    assert (body["pages"], body["sites"], body["first"]["id"], body["reference"]["id"]) == (4, 4, "ferry-a", "ferry-a")
    assert [v["relation"]["kind"] for v in body["versions"]] == ["reference", "shorter", "copy", "adds"]
    page_html = _text(client.get(f"/stories/{quote(cluster)}"))
    assert 'Origin: <strong class="site">a.test</strong>' in page_html and "earliest by 1 h" in page_html
    assert page_html.count('data-testid="story-version"') == 4 and page_html.count('data-testid="first-badge"') == 1
    assert '<svg xmlns="http://www.w3.org/2000/svg" id="story-timeline"' in page_html and "first: a.test" in page_html
    assert "adds 2 paragraphs" in page_html
    assert client.get("/stories/no-such-story").status_code == 404
    assert client.get("/api/stories/no-such-story").status_code == 404
    assert client.get(f"/api/stories/{quote(cluster)}?page=x").status_code == 400
    assert client.get("/stories/a%01b").status_code == 400


def test_a_versions_added_passages_are_marked(settings, clusters):
    """Editors (here with an API token) read a version's whole text with its added passages marked."""
    app = create_app({"TESTING": True}, settings=settings,
                     web=WebSettings(api_token_hashes=f"editor:{token_digest(EDITOR_TOKEN)}"))  # fmt: skip
    client, editor = app.test_client(), {"Authorization": f"Bearer {EDITOR_TOKEN}"}
    cluster = clusters["ferry-a"]
    body = client.get(f"/api/stories/{quote(cluster)}/versions/ferry-d", headers=editor).get_json()
    added = [" ".join(p["text"] for p in row) for row in body["paragraphs"] if any(p["added"] for p in row)]
    assert added == LOCAL and body["relation"]["label"] == "adds 2 paragraphs" and body["full_text"] is True
    page_html = _text(client.get(f"/stories/{quote(cluster)}/versions/ferry-d", headers=editor))
    assert re.findall(r'<mark data-testid="added-passage">([^<]+)</mark>', page_html) == LOCAL
    assert "2 passages not in the story" in page_html
    reference = _text(client.get(f"/stories/{quote(cluster)}/versions/ferry-a", headers=editor))
    assert "<mark data-testid" not in reference and "reference text" in reference
    get_resources(app).close()


def test_the_public_reads_what_a_version_adds_quoted_not_the_whole_article(settings, clusters):
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(public_passage_chars=40))
    client, cluster = app.test_client(), clusters["ferry-a"]
    body = client.get(f"/api/stories/{quote(cluster)}/versions/ferry-d").get_json()
    assert body["paragraphs"] == [] and body["full_text"] is False and body["added_passages_total"] == 2
    assert [len(p) <= 40 and p.endswith("…") for p in body["added_passages"]] == [True, True]
    assert LOCAL[0].startswith(body["added_passages"][0][:-1])
    page_html = _text(client.get(f"/stories/{quote(cluster)}/versions/ferry-d"))
    quotes = re.findall(r'<blockquote class="added-quote" data-testid="added-passage">([^<]+)</blockquote>', page_html)
    assert quotes == body["added_passages"] and 'data-testid="version-text"' not in page_html
    full_body = " ".join(body_of(401, "full").split("\n"))
    assert full_body[:200] not in page_html and LOCAL[0] not in page_html  # nothing of the article at length
    assert re.search(r'<a href="https://d.test/ferry-d"[^>]*>Read the whole article at d.test</a>', page_html)
    shorter = _text(client.get(f"/stories/{quote(cluster)}/versions/ferry-b"))
    assert 'data-testid="leaves-out">Compared with the reference: shorter' in shorter
    get_resources(app).close()
    assert client.get(f"/stories/{quote(cluster)}/versions/museum-a").status_code == 404  # another story's page
    assert client.get(f"/api/stories/{quote(cluster)}/versions/nope").status_code == 404


def test_feeds_have_one_entry_per_story_with_stable_ids(client, clusters):
    # the links are relative (no NEWSFOLD_BASE_URL): a reader resolves them against where it read the feed
    top = feedparser.parse(client.get("/feed?window=all").get_data(),
                           response_headers={"content-location": "https://news.test/feed?window=all",
                                             "content-type": "application/atom+xml"})  # fmt: skip
    assert not top.bozo and top.version == "atom10"
    wanted = [f"urn:newsfold:story:{clusters[p]}" for p in ("ferry-a", "old-a", "museum-a")]
    assert [e.id for e in top.entries] == wanted
    ferry = top.entries[0]
    assert ferry.link == f"https://news.test/stories/{clusters['ferry-a']}"
    assert ferry.updated == "2015-03-10T08:00:00Z"  # the latest version's time
    assert ferry.summary.endswith("(4 sites, 4 pages; from a.test)") and len(ferry.summary) > 60  # the lede first
    search = feedparser.parse(client.get("/feed?q=ferry").get_data())
    assert not search.bozo
    assert [e.id for e in search.entries] == [f"urn:newsfold:story:{clusters['ferry-a']}"]  # one entry, four pages
    assert search.entries[0].updated == "2015-03-10T08:00:00Z"
    assert client.get("/feed?q=ferry").content_type.startswith("application/atom+xml")


def test_a_search_feed_lists_the_newest_matching_stories_first(client, clusters):
    by_relevance = [r["cluster_id"] for r in client.get("/api/search?q=headline").get_json()["results"]]
    newest = [r["cluster_id"] for r in client.get("/api/search?q=headline&sort=date").get_json()["results"]]
    assert by_relevance != newest  # the two orders differ on this query
    # a subscriber wants what is new, whatever the page's order
    for query in ("q=headline", "q=headline&sort=relevance"):
        feed = feedparser.parse(client.get(f"/feed?{query}").get_data())
        assert [e.id for e in feed.entries] == [f"urn:newsfold:story:{c}" for c in newest]
