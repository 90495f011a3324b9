"""SearchRequest: the one record of a story search, and collapsed_search's keyword form kept as its alias."""

from __future__ import annotations

import pytest

from newsfold.plugin import InputError, InputTypeError, SearchRequest, collapsed_search


def test_the_request_and_the_keyword_alias_build_the_same_body():
    filters = ({"term": {"lang": "en"}},)
    asked = SearchRequest(q="harbour", page=2, size=5, sort="date", site="a.example", filters=filters)
    body = collapsed_search(asked)
    assert body == collapsed_search("harbour", page=2, size=5, sort="date", site="a.example", filters=list(filters))
    assert body["from"] == 5 and body["size"] == 5
    assert {"term": {"lang": "en"}} in body["query"]["bool"]["filter"]


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"sort": "oldest"}, "sort"),
        ({"page": "2"}, "page"),
        ({"site": 3}, "site"),
        ({"filters": "x"}, "filters"),
        ({"filters": ["x"]}, "filters"),
    ],
)
def test_a_bad_value_is_refused_naming_it(kwargs, named):
    with pytest.raises(InputError, match=named):
        SearchRequest(**kwargs)


def test_the_alias_refuses_unknown_or_doubled_arguments():
    with pytest.raises(InputError, match="unknown search argument"):
        collapsed_search("x", colour="red")
    with pytest.raises(InputError, match="not both"):
        collapsed_search(SearchRequest(q="x"), page=2)
    with pytest.raises(InputError, match="twice"):
        collapsed_search("x", q="y")
    with pytest.raises(InputTypeError):
        collapsed_search(SearchRequest(q="x", page=True))


def test_a_page_out_of_range_is_refused():
    with pytest.raises(InputError, match="out of range"):
        collapsed_search(SearchRequest(page=10_000, size=10))
