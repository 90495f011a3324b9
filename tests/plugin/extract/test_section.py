"""A page's section: its markup, a section given with it (a feed's category), then its URL's path."""

from __future__ import annotations

import pytest

from newsfold.plugin.extract.article import Article, extract_article
from newsfold.plugin.extract.section import normalise_section, url_section
from newsfold.plugin.sign.signed_page import Page, TextMeta
from newsfold.plugin.sign.signing import sign_page, sign_text
from tests.pages import story


def _html(head: str = "") -> str:
    body = "".join(f"<p>{p}</p>" for p in story(71, 8))
    head = f"<title>Harbour wall repaired</title>{head}"
    return f"<html lang='en'><head>{head}</head><body><article>{body}</article></body></html>"


@pytest.mark.parametrize(
    ("url", "section"),
    [
        ("https://www.a.test/politics/2025/03/council-votes-on-harbour-budget-123", "politics"),
        ("https://a.test/2024/01/15/us/politics/harbour-vote.html", "us"),
        ("https://a.test/news/world-europe/harbour-vote", "world-europe"),
        ("https://a.test/en-gb/sport/harbour-race", "sport"),
        ("https://a.test/article/12345/harbour-race", None),  # a container and an id: no section
        ("https://a.test/news/harbour-wall-repaired-after-the-storm/", None),  # "news" names no section
        ("https://a.test/politics/", None),  # the last segment is the page itself
        ("https://a.test/local-news-and-more-stories/harbour", None),  # four words: a slug
        ("https://a.test/category/business/harbour-deal", "business"),
        ("https://a.test/Business/harbour-deal", "business"),
        ("https://a.test/a_b/harbour", None),
        (None, None),
        ("http://[::1", None),  # an address urlsplit refuses
    ],
)
def test_the_section_of_a_url_path_is_its_first_folder_shaped_like_a_section(url, section):
    assert url_section(url) == section


@pytest.mark.parametrize(
    ("value", "section"),
    [
        ("World News", "world-news"),
        ("U.S.", "us"),
        ("Buyer&#039;s Guides", "buyers-guides"),
        ("Politics, Elections", "politics"),
        ("国际", "国际"),
        ("Uncategorized", None),
        ("News", None),
        ("https://www.edweek.org/leadership", None),
        ("White Label Native Advertising Platform", None),  # five words: a title, not a section
        ("", None),
        (None, None),
        (["Politics"], None),
    ],
)
def test_a_declared_section_is_normalised_or_refused(value, section):
    assert normalise_section(value) == section


def test_the_markup_wins_over_a_given_section_which_wins_over_the_url():
    url = "https://www.harbour.test/politics/2025/03/harbour-wall-repaired-12"
    meta = '<meta property="article:section" content="Local Affairs">'
    jsonld = '<script type="application/ld+json">{"@type": "NewsArticle", "articleSection": ["Transport"]}</script>'
    assert _section(_html(meta + jsonld), url=url, given="Weather") == "local-affairs"
    assert _section(_html(jsonld), url=url, given="Weather") == "transport"
    assert _section(_html(), url=url, given="Weather") == "weather"
    assert _section(_html(), url=url) == "politics"
    assert _section(_html('<meta property="article:section" content="News">'), url=url) == "politics"
    assert _section(_html(), url="https://harbour.test/p/harbour-wall") is None


def test_a_section_naming_the_site_itself_is_passed_over():
    meta = '<meta property="article:section" content="Treehugger">'
    url = "https://www.treehugger.com/energy/low-light-plants-5093342"
    assert _section(_html(meta), url=url) == "energy"


def test_signing_carries_the_section_to_the_stored_page(settings):
    url = "https://harbour.test/culture/2025/03/harbour-wall-repaired-12"
    signed = sign_page(Page(html=_html(), url=url, id="p1", section="Arts"), settings)
    assert signed.article.section == "arts"
    signed = sign_text("\n".join(story(72, 8)), TextMeta(url=url), settings=settings)
    assert signed.article.section == "culture"
    signed = sign_text("\n".join(story(72, 8)), TextMeta(url=url, section="Science & Tech"), settings=settings)
    assert signed.article.section == "science-tech"
    with pytest.raises(TypeError, match="section"):
        sign_text("\n".join(story(72, 8)), TextMeta(section=["politics"]), settings=settings)  # type: ignore[arg-type]


def _section(html: str, *, url: str | None, given: str | None = None) -> str | None:
    article = extract_article(html, url=url, section=given, min_tokens=5)
    assert isinstance(article, Article), article
    return article.section
