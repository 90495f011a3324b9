"""A search result's card: its headline, site, date and link belong to one page, the fullest that matched."""

from __future__ import annotations

import pytest

from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from tests.pages import page, story

#: a story of 14 sentences in 7 paragraphs; "council" only in the first
FULL = ["The council approved the new harbour budget on Monday after a long debate.", *story(311)[1:]]


def _page(pid: str, title: str, paras: list[str], site: str, published: str) -> Page:
    return Page(html=page(title, paras, site=site), id=pid, url=f"https://{site}/{pid}", site=site, lang="en",
                published=published)  # fmt: skip


@pytest.fixture
def cards(es, settings, web_app):
    """One story: the full origin (a.test), a full copy (b.test) and two shorter copies (c.test, d.test, 6 and 5
    of its 7 paragraphs), each under its own headline; a second story whose only copy is shorter."""
    other = ["Council members met the station workers union about the railway timetable.", *story(312)[1:]]
    raw = [
        _page("origin", "Harbour budget approved by council", FULL, "a.test", "2024-05-01T08:00:00Z"),
        _page("copy", "Council backs harbour spending plan", FULL, "b.test", "2024-05-01T10:00:00Z"),
        _page("short", "Harbour budget passes", FULL[:6], "c.test", "2024-05-01T12:00:00Z"),
        _page("shorter", "Budget passed at last", FULL[:5], "d.test", "2024-05-01T13:00:00Z"),
        _page("railway", "Union meets council over timetable", other, "e.test", "2024-05-02T08:00:00Z"),
    ]
    outcomes = {o.page_id: o for o in ingest([sign_page(p, settings) for p in raw], client=es, settings=settings)}
    assert len({outcomes[i].cluster_id for i in ("origin", "copy", "short", "shorter")}) == 1
    es.indices.refresh(index=settings.index)
    return web_app(settings).test_client()


def test_a_card_shows_one_page_and_prefers_a_full_copy(cards):
    """Fails before the fix: BM25 favours the shortest copy, and the card showed the origin's headline over it."""
    data = cards.get("/api/search?q=budget").get_json()
    by_site = {hit["site"]: hit for hit in data["results"]}
    harbour = by_site.pop("a.test", None) or by_site.pop("b.test")
    titles = {"a.test": "Harbour budget approved by council", "b.test": "Council backs harbour spending plan"}
    assert harbour["headline"] == titles[harbour["site"]]
    assert harbour["url"] == f"https://{harbour['site']}/{harbour['id']}"
    assert harbour["relation"]["kind"] in ("reference", "copy")
    assert all(v["relation"]["kind"] != "reference" for v in harbour["versions"])


def test_every_card_names_its_own_page(cards):
    for q in ("council", "budget", "harbour", ""):
        for hit in cards.get(f"/api/search?q={q}").get_json()["results"]:
            page_of = {"origin": "Harbour budget approved by council", "copy": "Council backs harbour spending plan",
                       "short": "Harbour budget passes", "shorter": "Budget passed at last",
                       "railway": "Union meets council over timetable"}  # fmt: skip
            assert hit["headline"] == page_of[hit["id"]], (q, hit["id"])
            assert hit["url"].endswith("/" + hit["id"])


def test_a_shorter_copy_that_matched_alone_is_named_under_the_storys_face(cards):
    """'passes' is only in the c.test copy's headline: it alone matches. The card is still the story's face (the
    full text, not the copy cut short: docs/stories.md), and names the copy that matched under it."""
    hit = cards.get("/api/search?q=budget+passes").get_json()["results"][0]
    assert (hit["id"], hit["headline"], hit["relation"]["kind"]) == ("origin", "Harbour budget approved by council",
                                                                      "reference")  # fmt: skip
    assert (hit["matched"]["id"], hit["matched"]["site"]) == ("short", "c.test")
    page = cards.get("/?q=budget+passes").get_data(as_text=True)
    assert 'data-testid="story-matched">Matched in <a href="https://c.test/short"' in page


def test_switched_off_operators_are_named_not_silently_empty(cards):
    """Fails before the fix: ``counc~2`` and ``harb*`` answered 0 stories and nothing else."""
    data = cards.get("/api/search?q=counc~2+harb*").get_json()
    assert data["stories"] == 0 and data["unsupported_operators"] == ["counc~2", "harb*"]
    assert "not supported" in data["notice"] and "counc~2, harb*" in data["notice"]
    page = cards.get("/?q=counc~2").get_data(as_text=True)
    assert 'data-testid="query-notice">Not supported: counc~2: prefix (word*), fuzzy (word~2)' in page
    plain = cards.get("/api/search?q=council").get_json()
    assert (plain["unsupported_operators"], plain["notice"]) == ([], None)
    assert 'data-testid="query-notice"' not in cards.get("/?q=council").get_data(as_text=True)


def test_a_visible_link_leads_to_the_feed_of_the_list(cards):
    """Fails before the fix: the feed was only a <link> in the page's head."""
    page = cards.get("/?q=council&sort=date").get_data(as_text=True)
    assert '<a href="/feed?q=council&amp;sort=date" type="application/atom+xml" data-testid="feed-visible">' in page
    top = cards.get("/?window=all").get_data(as_text=True)
    assert '<a href="/feed?window=all" type="application/atom+xml" data-testid="feed-visible">' in top
    assert cards.get("/feed?q=council&sort=date").status_code == 200
