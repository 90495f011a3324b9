"""The home page: the window that fills a page of top stories, and sections as tabs and filters (issue 38 item 3)."""

from __future__ import annotations

import re

import pytest

from newsfold.plugin import ingest
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.pages import page, story

SECTION_META = '<meta property="article:section" content="Business">'
#: (id, story seed, site, url path, published, extra head): the windows count back from 2025-03-10 12:00
PAGES = [
    ("ferry-a", 501, "a.test", "/politics/2025/03/ferry-deal-1", "2025-03-10T09:00:00Z", ""),
    ("ferry-b", 501, "b.test", "/politics/2025/03/ferry-deal-2", "2025-03-10T10:00:00Z", ""),
    ("ferry-c", 501, "c.test", "/politics/2025/03/ferry-deal-3", "2025-03-10T12:00:00Z", ""),
    ("race", 502, "d.test", "/sport/2025/03/race-4", "2025-03-08T10:00:00Z", ""),
    ("match", 503, "e.test", "/sport/2025/03/match-5", "2025-03-06T10:00:00Z", ""),
    ("bank", 504, "f.test", "/business/2025/02/bank-6", "2025-02-25T10:00:00Z", ""),
    ("shop", 505, "g.test", "/news/2025/02/shop-7", "2025-02-20T10:00:00Z", SECTION_META),
    ("old", 506, "h.test", "/news/2024/12/old-8", "2024-12-01T10:00:00Z", ""),
]


@pytest.fixture
def corpus(es, settings):
    pages = []
    for pid, seed, site, path, published, head in PAGES:
        html = page(f"Story {seed} headline", story(seed, 16), site=site).replace("</head>", head + "</head>")
        signed = sign_page(Page(html=html, url=f"https://{site}{path}", id=pid, site=site, published=published),
                           settings)  # fmt: skip
        assert not hasattr(signed, "reason"), signed
        pages.append(signed)
    outcomes = {o.page_id: o.cluster_id for o in ingest(pages, client=es, settings=settings)}
    es.indices.refresh(index=settings.index)
    assert outcomes["ferry-a"] == outcomes["ferry-b"] == outcomes["ferry-c"]
    return outcomes


def _client(settings, page_size: int):
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(page_size=page_size))
    return app, app.test_client()


@pytest.mark.parametrize(("page_size", "window"), [(1, "24h"), (3, "7d"), (5, "30d"), (10, "all")])
def test_without_a_window_top_stories_take_the_narrowest_that_fills_a_page(settings, corpus, page_size, window):
    app, client = _client(settings, page_size)
    try:
        body = client.get("/api/stories").get_json()
        assert body["window"] == window
        assert len(body["results"]) == min(page_size, len(PAGES) - 2)  # 6 stories in all
        # by coverage, then the newest: the story on three sites first, the single pages newest first
        expected = ["ferry-a", "race", "match", "bank", "shop", "old"][:page_size]
        assert [s["id"] for s in body["results"]] == expected
        assert client.get("/api/stories?window=24h").get_json()["window"] == "24h"  # a window asked for is kept
        home = client.get("/").get_data(as_text=True)
        assert f'aria-current="true" data-testid="window-{window}"' in home
        # the other windows' links name their window; paging an automatic window does not fix it
        assert re.search(r'href="/\?window=24h" data-testid="window-24h"', home) or window == "24h"
    finally:
        get_resources(app).close()


def test_sections_are_tabs_above_top_stories_and_filters_of_the_search(settings, corpus):
    app, client = _client(settings, 10)
    try:
        home = client.get("/?window=all").get_data(as_text=True)
        tabs = re.findall(r'data-testid="section-tab" data-section="([^"]+)"', home)
        assert tabs == ["business", "sport", "politics"]  # by stories, then by name; /news/ names no section
        assert 'href="/?window=all&amp;section=sport"' in home
        sport = client.get("/api/stories?window=all&section=sport").get_json()
        assert [s["id"] for s in sport["results"]] == ["race", "match"] and sport["section"] == "sport"
        business = client.get("/api/stories?window=all&section=Business").get_json()  # sections are lower case
        assert sorted(s["id"] for s in business["results"]) == ["bank", "shop"]
        found = client.get("/api/search?q=headline&section=politics").get_json()
        assert [s["cluster_id"] for s in found["results"]] == [corpus["ferry-a"]] and found["section"] == "politics"
        page = client.get("/?q=headline&section=politics").get_data(as_text=True)
        assert '<option value="politics" selected>Politics (1)</option>' in page
        assert "Filters (1 on)" in page and 'data-testid="filter-clear"' in page
        chosen = client.get("/?section=sport").get_data(as_text=True)
        assert 'aria-current="page" data-testid="section-tab" data-section="sport"' in chosen
    finally:
        get_resources(app).close()


@pytest.mark.parametrize("path", ["/?section=a%00b", "/api/stories?section=a%00b", "/api/search?q=x&section=a%07"])
def test_a_bad_section_is_a_400_that_names_it(settings, corpus, path):
    app, client = _client(settings, 10)
    try:
        res = client.get(path)
        assert res.status_code == 400 and "section" in res.get_data(as_text=True)
    finally:
        get_resources(app).close()


def test_a_page_sent_to_the_api_may_carry_its_section():
    from newsfold.web.validation import InvalidPages, parse_pages

    (sent,) = parse_pages({"pages": [{"html": "<p>x</p>", "section": "Arts"}]}, max_pages=5)
    assert sent["section"] == "Arts"
    with pytest.raises(InvalidPages, match=r"pages\[0\]\.section"):
        parse_pages({"pages": [{"html": "<p>x</p>", "section": ["Arts"]}]}, max_pages=5)


def test_the_feed_of_the_home_page_names_the_window_it_took_and_keeps_the_section(settings, corpus):
    app, client = _client(settings, 5)
    try:
        feed = client.get("/feed").get_data(as_text=True)
        assert "<title>newsfold: Top stories · 30 days</title>" in feed and feed.count("<entry>") == 5
        sport = client.get("/feed?section=sport&window=all").get_data(as_text=True)
        assert sport.count("<entry>") == 2 and "section=sport" in sport
    finally:
        get_resources(app).close()
