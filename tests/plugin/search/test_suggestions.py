"""Spelling suggestions and pasted passages: the bodies built, without a server."""

from __future__ import annotations

import pytest

from newsfold.plugin.search import public_query, queries
from newsfold.plugin.search.suggestions import SUGGESTION, query_words, read_suggestions, spelling_suggestions


def test_the_suggester_reads_only_the_plain_words_of_a_query():
    assert query_words('"harbuor strike" -ferry -"old news" goverment~2 (a|b) wor* +tax') == [
        "harbuor", "strike", "goverment", "a", "b", "wor", "tax"
    ]  # fmt: skip
    assert spelling_suggestions("-ferry") is None and spelling_suggestions("") is None
    body = spelling_suggestions("harbuor -ferry", size=2, timeout="1s")
    assert body is not None and body["size"] == 0 and body["timeout"] == "1s"
    assert body["suggest"]["text"] == "harbuor"
    for field in ("title", "body"):
        phrase = body["suggest"][f"{SUGGESTION}_{field}"]["phrase"]
        assert phrase["size"] == 2 and phrase["field"] == field
        assert [g["field"] for g in phrase["direct_generator"]] == [field]
    assert "fuzzy" not in str(body) and "query" not in body  # no fuzzy query runs


def test_suggestions_read_back_leave_out_the_query_itself():
    title = [{"options": [{"text": "harbour strike", "score": 0.2}, {"text": "Harbuor strike", "score": 0.9}]}]
    body = [{"options": [{"text": "harbour* strike", "score": 0.1}, {"text": "harbours strike", "score": 0.3}]}]
    response = {"suggest": {f"{SUGGESTION}_title": title, f"{SUGGESTION}_body": body}}
    assert read_suggestions(response, "harbuor strike") == ["harbours strike", "harbour strike"]  # best first
    assert read_suggestions({}, "x") == []


def test_a_query_of_more_than_32_words_is_a_passage_found_by_its_significant_terms():
    passage = " ".join(f"word{i}" for i in range(40))
    body = queries.collapsed_search(passage)
    mlt = body["query"]["bool"]["must"][0]["more_like_this"]
    assert mlt["like"] == passage and mlt["max_query_terms"] == public_query.PASSAGE_QUERY_TERMS
    assert body["timeout"] == queries.SEARCH_TIMEOUT
    assert "simple_query_string" in str(queries.collapsed_search(" ".join(["word"] * 32)))
    with pytest.raises(ValueError, match="the limit is 1,000"):
        queries.collapsed_search(" ".join(["harbour"] * 130))
    with pytest.raises(ValueError, match="at most 32 words"):
        public_query.text_query(passage)  # the admin's lists and other text filters keep the query cap
    facets = queries.search_facets(passage)
    assert "more_like_this" in facets["query"]["bool"]["must"][0]
