"""Query builders: band lookup, collapsed search, URL normalisation (pure, no servers)."""

from __future__ import annotations

import pytest

from newsfold.plugin.fold import lookups
from newsfold.plugin.search import queries
from newsfold.plugin.urls import normalize_url, site_of


def test_band_lookup_counts_matching_bands():
    body = lookups.band_lookup(["0:aa", "1:bb"], size=5, exclude_ids=["me"], min_bands=2)
    match = {"terms_set": {"newsfold.bands.terms": {"terms": ["0:aa", "1:bb"], "minimum_should_match": 2}}}
    assert body["query"]["bool"]["must"] == [match]
    assert body["query"]["bool"]["must_not"] == [{"ids": {"values": ["me"]}}]
    assert body["size"] == 5
    assert lookups.band_lookup(["0:aa"], min_bands=1)["query"] == {
        "terms_set": {"newsfold.bands.terms": {"terms": ["0:aa"], "minimum_should_match": 1}}
    }
    # the same lookup for a server without terms_set's constant minimum_should_match: one clause per key
    (inner,) = lookups.band_lookup(["0:aa", "1:bb"], exclude_ids=["me"], min_bands=2, shape="bool")["query"]["bool"][
        "must"]  # fmt: skip
    assert inner["bool"]["minimum_should_match"] == 2
    assert inner["bool"]["should"][1] == {"constant_score": {"filter": {"term": {"newsfold.bands.terms": "1:bb"}}}}
    with pytest.raises(ValueError, match="shape"):
        lookups.band_lookup(["0:aa"], shape="fuzzy")
    # while an index searched may hold pages of fold layout 7 or before, their band keys are asked too
    both = lookups.band_lookup(["aaaaaaaa", "bbbbbbbb"], min_bands=2, legacy_keys=["0:aa", "1:bb"])["query"]
    assert both == {"bool": {"should": [
        {"terms_set": {"newsfold.bands.terms": {"terms": ["aaaaaaaa", "bbbbbbbb"], "minimum_should_match": 2}}},
        {"terms_set": {"newsfold.band_keys": {"terms": ["0:aa", "1:bb"], "minimum_should_match": 2}}},
    ]}}  # fmt: skip


def test_band_lookup_can_leave_out_one_cluster():
    body = lookups.band_lookup(["0:aa"], exclude_ids=["me"], exclude_cluster="c7")
    assert body["query"]["bool"]["must_not"] == [{"ids": {"values": ["me"]}}, {"term": {"newsfold.cluster_id": "c7"}}]
    assert "bool" not in lookups.band_lookup(["0:aa"])["query"]


def test_collapsed_search_collapses_and_counts_stories():
    body = queries.collapsed_search("flood", page=3, size=10, site="a.example")
    assert body["collapse"] == {"field": "newsfold.cluster_id"}
    assert body["from"] == 20
    assert body["aggs"]["newsfold_stories"]["cardinality"]["field"] == "newsfold.cluster_id"
    assert {"term": {"site": "a.example"}} in body["query"]["bool"]["filter"]
    assert "highlight" in body


def test_collapsed_search_rejects_long_query_and_deep_pages():
    with pytest.raises(ValueError, match="limit is 500"):
        queries.collapsed_search("x" * 501)
    with pytest.raises(ValueError, match="out of range"):
        queries.collapsed_search("x", page=2000, size=10)


def test_normalize_url_drops_tracking_and_variants():
    a = normalize_url("https://www.example.com/news/story-1/?utm_source=x&id=3#top")
    b = normalize_url("http://m.example.com/news/story-1?id=3&fbclid=abc")
    c = normalize_url("https://example.com/news/story-1/amp/?id=3")
    assert a == b == c == "example.com/news/story-1?id=3"
    assert normalize_url("https://example.com/section/index.html") == "example.com/section"
    assert site_of("https://WWW.Example.COM/x") == "example.com"
    assert normalize_url(None) is None
