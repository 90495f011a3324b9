"""A search that finds nothing offers a way on: respellings from the index, filters to drop, the top stories;
a pasted paragraph finds the stories holding it (issue 31 item 9)."""

from __future__ import annotations

import html as htmllib
import re

import pytest

from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.story_corpus import body_of, ingest_story_corpus


@pytest.fixture
def clusters(es, settings):
    return ingest_story_corpus(es, settings)


@pytest.fixture
def client(settings, clusters):
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(page_size=3))
    yield app.test_client()
    get_resources(app).close()


def _text(res) -> str:
    return htmllib.unescape(res.get_data(as_text=True))


def _passage(seed: int, words: int = 45) -> str:
    """Words from the middle of a story's text, as a reader would copy them."""
    return " ".join(body_of(seed, "full").split()[40 : 40 + words])


def test_a_misspelt_search_suggests_the_words_of_the_index(client):
    res = client.get("/?q=harbuor+goverment")
    page = _text(res)
    assert res.status_code == 200 and 'data-testid="no-results"' in page
    suggestions = re.findall(r'<a href="([^"]+)" data-testid="suggestion">([^<]+)</a>', page)
    assert suggestions and suggestions[0][1] == "harbour government"
    assert "q=harbour+government" in suggestions[0][0]
    assert client.get(suggestions[0][0]).status_code == 200
    api = client.get("/api/search?q=harbuor+goverment").get_json()
    assert api["stories"] == 0 and api["suggestions"][0] == "harbour government"
    # the words a query leaves out and the operators it may not use are not respelt
    api = client.get('/api/search?q=-ferry+"harbuor"+goverment~2').get_json()
    assert api["suggestions"][0] == "harbour government"
    assert client.get("/api/search?q=ferry").get_json()["suggestions"] == []  # found: nothing to suggest


def test_a_search_without_results_offers_its_filters_off_and_the_top_stories(client):
    page = _text(client.get("/?q=harbour&site=nowhere.test&lang=fr&from=2001-01-01&nowire=1"))
    assert 'data-testid="no-results"' in page
    drops = re.findall(r'<a href="([^"]+)" data-testid="drop-filter">', page)
    assert len(drops) == 4
    assert all(client.get(htmllib.unescape(href)).status_code == 200 for href in drops)
    assert re.search(r'<a href="/\?q=harbour" data-testid="remove-filters">“harbour” without filters</a>', page)
    assert '<a href="/" data-testid="top-stories-link">Top stories</a>' in page
    assert 'data-testid="results"' in page  # the empty list is still there for the skip link's target
    assert 'data-testid="top-stories-link"' in _text(client.get("/?q=zzzzqqq"))


def test_a_pasted_paragraph_finds_the_story_it_belongs_to(client, clusters):
    passage = _passage(402)  # the museum story's text, 45 words
    res = client.get("/", query_string={"q": passage})
    page = _text(res)
    assert res.status_code == 200, page[:500]
    assert 'data-testid="passage-summary">containing this passage' in page
    ids = re.findall(r'data-testid="story" data-cluster-id="([^"]+)"', page) or re.findall(
        r'data-cluster-id="([^"]+)"', page
    )
    assert ids and ids[0] == clusters["museum-a"]
    api = client.get("/api/search", query_string={"q": passage}).get_json()
    assert api["passage"] is True and api["results"][0]["cluster_id"] == clusters["museum-a"]
    assert api["unsupported_operators"] == [] and api["query"] == passage
    short = client.get("/api/search?q=museum").get_json()
    assert short["passage"] is False


def test_a_pasted_passage_has_a_length_cap(client):
    too_long = " ".join(["harbour"] * 130)  # 130 words, 1,039 characters
    for url in ("/", "/api/search"):
        res = client.get(url, query_string={"q": too_long})
        assert res.status_code == 400
        assert "the pasted passage has 1,039 characters; the limit is 1,000" in _text(res)
    # an operator-laden query without spaces is still a query, refused by the query cap
    res = client.get("/api/search", query_string={"q": "|".join(["the"] * 40)})
    assert res.status_code == 400 and "at most 32 words" in res.get_json()["error"]


def test_site_s_own_stories_without_a_site_keeps_every_site_in_the_menu(client):
    for url in ("/?originals=1", "/?q=headline&originals=1"):  # the stories some site (no wire) originated
        res = client.get(url)
        page = _text(res)
        assert res.status_code == 200, page[:300]
        menu = re.search(r'<select id="site".*?</select>', page, re.S).group(0)
        assert all(f'<option value="{site}"' in menu for site in ("a.test", "b.test", "c.test", "d.test"))
    menu = re.search(r'<select id="site".*?</select>', _text(client.get("/?from=2015-99-01")), re.S).group(0)
    assert '<option value="' not in menu.replace('<option value="">', "")  # a bad day: only the chosen values
