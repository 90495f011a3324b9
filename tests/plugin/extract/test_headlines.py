"""Headlines without the site's name, ledes and snippets (plugin.extract.headlines), affixes learned on a real index."""

from __future__ import annotations

import pytest

from newsfold.plugin import ingest
from newsfold.plugin.extract.headlines import (
    clean_headline,
    lede,
    read_site_affixes,
    site_affixes,
    snippet,
    story_headline,
    title_affixes,
)
from newsfold.plugin.sign.signing import TextMeta, sign_text
from tests.pages import story


@pytest.mark.parametrize(
    ("title", "affixes", "site", "expected"),
    [
        ("Riverside Post | Inspectors criticise the plan", ["p:riverside post"], None, "Inspectors criticise the plan"),
        ("Inspectors criticise the plan: the latest - Coastline Times", ["s:- coastline times"], None,
         "Inspectors criticise the plan: the latest"),
        ("白沙江水位上涨 群众连夜转移_临江晚报", ["s:_临江晚报"], None, "白沙江水位上涨 群众连夜转移"),
        ("白沙江水位上涨 群众连夜转移-临江晚报", ["s:- 临江晚报", "s:-临江晚报"], None, "白沙江水位上涨 群众连夜转移"),
        # no learned affix: a part spelling the site's host goes, nothing else
        ("Moon shot bids from three firms | Al Jazeera", [], "aljazeera.com", "Moon shot bids from three firms"),
        ("Moon shot bids from three firms - news.example.org", [], "news.example.org",
         "Moon shot bids from three firms"),
        ("Brexit: what next for the firms", [], "riversidepost.example", "Brexit: what next for the firms"),
        # the host's name as the longer part is the headline, not an affix
        ("Al Jazeera | Live", [], "aljazeera.com", "Al Jazeera | Live"),
    ],
)  # fmt: skip
def test_clean_headline_strips_only_learned_or_host_affixes(title, affixes, site, expected):
    assert clean_headline(title, site=site, affixes=affixes) == expected


def test_a_headline_is_never_stripped_to_nothing_and_words_are_never_cut():
    # every part is a "learned" affix: the title stays whole rather than empty
    assert clean_headline("Coastline Times | News", affixes=["p:coastline times", "s:| news"]) in (
        "News", "Coastline Times | News")  # fmt: skip
    assert clean_headline("A | B", affixes=["p:a", "s:| b"]).strip()
    assert clean_headline("", affixes=["p:x"]) == ""
    assert clean_headline("— | —", affixes=[]) == "— | —"
    # a hyphen inside a word and a colon without a space are not separators
    assert title_affixes("Well-known firm: the ratio 3:2") == ["p:well-known firm", "s:: the ratio 3:2"]
    for title in ("Self-driving cars arrive", "Covid-19 cases fall", "A 3:2 win"):
        assert clean_headline(title, site="self.example", affixes=title_affixes(title)[:0]) == title


def test_title_affix_candidates():
    assert title_affixes("Riverside Post | Inspectors criticise the plan") == [
        "p:riverside post", "s:| inspectors criticise the plan"]  # fmt: skip
    assert title_affixes("X: the latest - Coastline Times")[:2] == ["p:x", "s:- coastline times"]
    assert title_affixes("No separator here") == []
    assert title_affixes(None) == []


def test_learned_affixes_need_most_of_a_sites_pages():
    response = {"aggregations": {"sites": {"buckets": [
        {"key": "a.test", "doc_count": 10, "affixes": {"buckets": [{"key": "s:- a news", "doc_count": 9},
                                                                   {"key": "p:brexit", "doc_count": 2}]}},
        {"key": "b.test", "doc_count": 2, "affixes": {"buckets": [{"key": "s:- b news", "doc_count": 2}]}},
    ]}}}  # fmt: skip
    assert read_site_affixes(response) == {"a.test": ["s:- a news"]}  # b.test has too few pages to tell
    with pytest.raises(ValueError, match="no site"):
        site_affixes([None, ""])


def test_lede_cuts_at_a_sentence_boundary():
    text = "First sentence is here. " * 20 + "\nSecond paragraph."
    out = lede(text)
    assert len(out) <= 300 and out.endswith("here.")
    assert lede("One short paragraph.\nAnother one.") == "One short paragraph. Another one."
    zh = "新华社北京3月5日电 今天举行了会议。" * 30
    assert lede(zh).endswith("。") and len(lede(zh)) <= 300
    assert lede("word " * 200).endswith("…") and len(lede("word " * 200)) <= 300
    assert lede("") is None and lede(None) is None


def test_snippet_prefers_the_highlight_as_plain_text():
    assert snippet(["the <mark>plan</mark> &amp; more"], "lede") == "…the plan & more…"  # a fragment mid-sentence
    assert snippet([], "The lede.") == "The lede."
    assert snippet(None, None) is None
    assert len(snippet(["x " * 400], None)) <= 300


def test_story_headline_is_the_origins_else_the_most_common():
    versions = [{"id": "a", "headline": "One"}, {"id": "b", "headline": "Two"}, {"id": "c", "headline": "two"}]
    assert story_headline(versions, origin_id="a") == "One"
    assert story_headline(versions) == "Two"
    assert story_headline(versions, origin_id="missing") == "Two"
    assert story_headline([]) is None


def test_affixes_are_learned_from_a_sites_own_pages(es, settings):
    """Five pages of one site share a suffix; one has none: every headline comes out clean, none empty."""
    titles = ["Ferry strike ends - Harbour Gazette", "Museum reopens - Harbour Gazette",
              "Council budget: the latest - Harbour Gazette", "Harbour Gazette - Harbour Gazette",
              "Storm warning issued", "New bridge opens - Harbour Gazette"]  # fmt: skip
    signed = [sign_text("\n".join(story(500 + n)),
                        TextMeta(title=t, url=f"https://gazette.test/{n}", page_id=f"g{n}", site="gazette.test"),
                        settings=settings) for n, t in enumerate(titles)]  # fmt: skip
    ingest(signed, client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    learned = read_site_affixes(es.search(index=settings.index, body=site_affixes(["gazette.test"])))
    assert learned == {"gazette.test": ["s:- harbour gazette"]}
    cleaned = [clean_headline(t, site="gazette.test", affixes=learned["gazette.test"]) for t in titles]
    assert cleaned == ["Ferry strike ends", "Museum reopens", "Council budget: the latest", "Harbour Gazette",
                       "Storm warning issued", "New bridge opens"]  # fmt: skip


def test_learning_from_titles_in_memory_follows_the_same_rule():
    from newsfold.plugin.extract.headlines import learn_from_titles

    titles = [("a.test", f"Story {n} - A News") for n in range(4)] + [("a.test", "Other | x"), ("b.test", "B - Two")]
    assert learn_from_titles(titles) == {"a.test": ["s:- a news"]}  # 4 of 5 pages; b.test has one page
    assert learn_from_titles([(None, "x - y")]) == {}


def test_site_name_is_the_part_of_a_title_that_names_the_site():
    from newsfold.plugin.extract.headlines import site_name

    title = "Foxhaven council tax to rise 8% - Northern Ledger"
    assert site_name(title, site="northernledger.example") == "Northern Ledger"
    assert site_name(title, site="www.ledger.example") == "Northern Ledger"
    assert site_name("Riverside Post | Garden waste charge", site="riversidepost.example") == "Riverside Post"
    assert site_name("Garden waste charge | World", site="riversidepost.example") is None  # a section, not a name
    assert site_name("Garden waste charge", site="riversidepost.example") is None
    assert site_name("Garden waste charge - Foo", site="bar.example") is None


def test_a_snippet_leaves_out_the_section_label_and_headline_and_marks_where_it_is_cut():
    lede = "Science New beetle species found in Glenbury caves GLENBURY, February 12 — Researchers have described it."
    headline = "New beetle species found in Glenbury caves"
    assert snippet([], lede, headlines=[headline]) == "GLENBURY, February 12 — Researchers have described it."
    assert snippet([], headline + ": what we know. The council met.", headlines=[headline]) == (
        "what we know. The council met."
    )
    # a label of more words, or a sentence before it, is text: it stays
    kept = "The council met on Tuesday. New beetle species found in Glenbury caves, it said."
    assert snippet([], kept, headlines=[headline]) == kept
    assert snippet([], "Short One more thing.", headlines=["Short"]) == "Short One more thing."  # too short to tell
    # a highlight cut by the server mid-sentence says so at either end; a whole sentence does not
    assert snippet(["council <mark>voted</mark> to close the depot"], None) == "…council voted to close the depot…"
    assert snippet(["The council <mark>voted</mark>."], None) == "The council voted."
    assert snippet([], "南岭市地铁三号线开通") == "南岭市地铁三号线开通…"
    assert snippet([], "南岭市地铁三号线开通。") == "南岭市地铁三号线开通。"
