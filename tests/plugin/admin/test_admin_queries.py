"""The admin pages' query builders (plugin.admin.admin_queries) and bucket selection, pure."""

from __future__ import annotations

import pytest

from newsfold.plugin.admin import admin_queries, stats_queries
from newsfold.plugin.search import public_query
from newsfold.web.actions.cluster_list import select_buckets


def test_cluster_list_query_without_filters():
    assert admin_queries.cluster_list() == {
        "size": 0,
        "query": {"match_all": {}},
        "aggs": {
            "clusters": {
                "terms": {
                    "field": "newsfold.cluster_id",
                    "size": 10_000,
                    "min_doc_count": 2,
                    "order": [{"_count": "desc"}, {"_key": "asc"}],
                    "shard_min_doc_count": 2,
                },
                "aggs": {
                    "sites": {"cardinality": {"field": "site"}},
                    "first": {"min": {"field": "ingested"}},
                    "last": {"max": {"field": "ingested"}},
                    "published": {"min": {"field": "published"}},
                    "newest": {"max": {"field": "published", "missing": 0}},
                    "weakest": {"min": {"field": "newsfold.similarity", "missing": admin_queries.NO_PAIR}},
                },
            }
        },
    }


def test_cluster_list_query_with_ids_page_filters_and_sort():
    body = admin_queries.cluster_list(
        cluster_ids=["c1", "c2"], min_size=3, sort="first_seen", order="asc", max_clusters=100, single_shard=False
    )
    assert body["query"] == {"terms": {"newsfold.cluster_id": ["c1", "c2"]}}
    assert body["aggs"]["clusters"]["terms"] == {
        "field": "newsfold.cluster_id",
        "size": 100,
        "min_doc_count": 3,
        "order": [{"first": "asc"}, {"_key": "asc"}],
    }
    filters = public_query.page_filters(site="a.test", q="storm")
    assert filters == [
        {"term": {"site": "a.test"}},
        public_query.text_query("storm"),
    ]
    body = admin_queries.cluster_list(matching=filters, sort="sites")
    assert body["aggs"]["clusters"]["aggs"]["matching"] == {"filter": {"bool": {"filter": filters}}}
    assert body["aggs"]["clusters"]["terms"]["order"][0] == {"sites": "desc"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sort": "title"}, "sort must be one of"),
        ({"order": "up"}, "order must be"),
        ({"min_size": 0}, "min_size must be >= 1"),
    ],
)
def test_cluster_list_query_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        admin_queries.cluster_list(**kwargs)


def test_select_buckets_applies_size_and_date_bounds_in_order():
    def bucket(key, size, first, last, matching=1):
        times = {"first": {"value": first}, "last": {"value": last}}
        return {"key": key, "doc_count": size, **times, "matching": {"doc_count": matching}}

    buckets = [bucket("a", 5, 100, 900), bucket("b", 2, 300, 400, matching=0), bucket("c", 3, 200, 250)]
    assert [b["key"] for b in select_buckets(buckets)] == ["a", "b", "c"]
    assert [b["key"] for b in select_buckets(buckets, max_size=3)] == ["b", "c"]
    assert [b["key"] for b in select_buckets(buckets, first_seen=(150, None))] == ["b", "c"]
    assert [b["key"] for b in select_buckets(buckets, first_seen=(None, 250), last_seen=(300, None))] == ["a"]
    assert [b["key"] for b in select_buckets(buckets, matching=True)] == ["a", "c"]


def test_page_filter_and_statistics_queries():
    assert admin_queries.clusters_with_pages(site="a.test", lang="en", q="storm", max_clusters=50) == {
        "size": 0,
        "query": {
            "bool": {
                "filter": [
                    {"term": {"site": "a.test"}},
                    {"term": {"lang": "en"}},
                    {
                        "simple_query_string": {
                            "query": "storm",
                            "fields": ["title^2", "body"],
                            "default_operator": "and",
                            "flags": "AND|OR|NOT|PHRASE|PRECEDENCE|WHITESPACE|ESCAPE",
                        }
                    },
                ]
            }
        },
        "aggs": {"clusters": {"terms": {"field": "newsfold.cluster_id", "size": 50}}},
    }
    with pytest.raises(ValueError, match="limit is 500"):
        admin_queries.clusters_with_pages(q="x" * 501)
    sim = stats_queries.similarity_distribution(interval=0.1)
    assert sim["aggs"]["rejected"] == {
        "histogram": {
            "field": "newsfold.nearest_rejected",
            "interval": 0.1,
            "min_doc_count": 0,
            "extended_bounds": {"min": 0, "max": 1},
        }
    }
    assert stats_queries.rate_interval(0, 30 * 60_000) == ("1m", 60_000)
    assert stats_queries.rate_interval(0, 3 * 86_400_000) == ("6h", 21_600_000)
    assert stats_queries.ingest_rate(start_ms=0, end_ms=86_400_000)["aggs"]["rate"]["date_histogram"] == {
        "field": "ingested",
        "fixed_interval": "1h",
        "min_doc_count": 0,
        "extended_bounds": {"min": 0, "max": 86_400_000},
    }
    assert stats_queries.rejection_reasons(size=5)["aggs"] == {"reasons": {"terms": {"field": "reason", "size": 5}}}
    detail = admin_queries.cluster_detail("c1", size=10)
    assert detail["query"] == {"term": {"newsfold.cluster_id": "c1"}} and detail["size"] == 10
    representative_first = {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}
    assert detail["sort"][0] == {"newsfold.representative": representative_first}
    assert "body" in detail["_source"] and "newsfold.bands" in detail["_source"]
