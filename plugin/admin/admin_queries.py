"""Query builders of the admin's overview, cluster list and cluster detail.

Only the web's admin (``web.admin``: its clusters and cluster detail) reads these; the statistics page's are in
``plugin.admin.stats_queries``, the search's in ``plugin.search.queries``. Like those, they return dicts and
never execute them. What the cluster list costs on a large index is worked out in docs/scaling.md
("The admin's cluster list and statistics").
"""

from __future__ import annotations

from typing import Any

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.document import CLUSTER_ID
from newsfold.plugin.fold.lookups import URL_ORDER
from newsfold.plugin.hits import ARTICLE_SOURCE
from newsfold.plugin.search.public_query import page_filters
from newsfold.plugin.search.story_face import FACE_AGG, face_agg, face_sort
from newsfold.plugin.search.version_relations import reference_sort

#: sort keys of the cluster list -> the terms aggregation's order key (``corrected`` is ordered by the caller, from
#: the corrections log: :func:`corrected_pages`)
CLUSTER_SORTS = {
    "size": "_count",
    "first_seen": "first",
    "last_seen": "last",
    "sites": "sites",
    "weakest": "weakest",
    "newest": "newest",
    "corrected": "_count",
}
#: the order each sort takes unless the URL says otherwise (the weakest pair first, the rest largest first)
DEFAULT_ORDERS = {"weakest": "asc"}
#: the ``weakest`` value of a cluster none of whose pages joined it by a similarity (a story merged by an editor
#: from single pages): above any similarity, so such clusters come last in the queue
NO_PAIR = 2.0
#: buckets one cluster-list aggregation keeps at most (well below Elasticsearch's search.max_buckets of 65,536)
MAX_LIST_CLUSTERS = 10_000
#: fields of a cluster member the admin detail needs (the body for passages and comparisons)
MEMBER_SOURCE = [
    "title",
    "body",
    "url",
    "site",
    "lang",
    "published",
    "ingested",
    CLUSTER_ID,
    "newsfold.bands",
    "newsfold.signature",
    "newsfold.shingle_count",
    "newsfold.token_count",
    "newsfold.similarity",
    "newsfold.matched_id",
    "newsfold.title_key",
    "newsfold.representative",
    "newsfold.nearest_rejected",
]


def story_cardinality() -> dict[str, Any]:
    """The number of stories: distinct cluster ids (near exact below 40,000)."""
    return {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}}


def _cluster_summary() -> dict[str, Any]:
    """Per cluster: its number of sites, first and last ingest time, first and latest publication date, and the
    similarity of its weakest pair (the lowest ``newsfold.similarity``: each page's to the page it joined)."""
    return {
        "sites": {"cardinality": {"field": "site"}},
        "first": {"min": {"field": "ingested"}},
        "last": {"max": {"field": "ingested"}},
        "published": {"min": {"field": "published"}},
        "newest": {"max": {"field": "published", "missing": 0}},
        "weakest": {"min": {"field": "newsfold.similarity", "missing": NO_PAIR}},
    }


def largest_clusters(*, size: int = 50) -> dict[str, Any]:
    """Search body: the clusters with the most pages."""
    return {
        "size": 0,
        "aggs": {
            "clusters": {
                "terms": {"field": CLUSTER_ID, "size": size, "min_doc_count": 2, "order": {"_count": "desc"}},
                "aggs": {
                    **_cluster_summary(),
                    "sample": {
                        "top_hits": {
                            "size": 1,
                            "_source": ["title", "site", "url"],
                            "sort": face_sort(),  # the story's face, as every surface shows it
                        }
                    },
                },
            }
        },
    }


def totals() -> dict[str, Any]:
    """Search body: page and story counts of the whole index."""
    return {
        "size": 0,
        "track_total_hits": True,
        "aggs": {"stories": story_cardinality()},
    }


def clusters_with_pages(
    *, site: str | None = None, lang: str | None = None, q: str | None = None, max_clusters: int = MAX_LIST_CLUSTERS
) -> dict[str, Any]:
    """Search body: the ids of the clusters that hold a page matching the page filters.

    The first step of a filtered cluster list: the page filters (site,
    language, text on title/body) pick clusters, and :func:`cluster_list` then
    describes those clusters from all their pages. When more than
    ``max_clusters`` clusters match, the ones with the most matching pages are
    kept (the response's ``sum_other_doc_count`` is then above 0).

    Args:
        site: pages of this site.
        lang: pages in this language.
        q: text in the title or body (``simple_query_string``, all words).
        max_clusters: at most this many cluster ids.

    Returns:
        The body; the ids are the keys of ``aggregations.clusters.buckets``.

    Raises:
        ValueError: the text query is too long.
    """
    return {
        "size": 0,
        "query": {"bool": {"filter": page_filters(site=site, lang=lang, q=q)}},
        "aggs": {"clusters": {"terms": {"field": CLUSTER_ID, "size": max_clusters}}},
    }


def cluster_list(
    *,
    cluster_ids: list[str] | None = None,
    matching: list[dict[str, Any]] | None = None,
    min_size: int = 2,
    sort: str = "size",
    order: str = "desc",
    max_clusters: int = MAX_LIST_CLUSTERS,
    single_shard: bool = True,
) -> dict[str, Any]:
    """Search body: clusters with their size, site count and first/last ingest time, in the order asked for.

    One ``terms`` aggregation on ``cluster_id`` (``min_doc_count`` = the
    minimum size) ordered by the sort key (page count, the ``min``/``max`` of
    ``ingested``, or the ``cardinality`` of ``site``; ties by cluster id). The
    caller applies the maximum size and the first/last-seen ranges to the
    returned buckets (no script needed, and it knows when the cap was hit) and
    slices the page out, so the total is exact below the cap.

    At most ``max_clusters`` buckets come back; on several shards the order
    is approximate (docs/scaling.md says why and what it costs).

    Args:
        cluster_ids: only these clusters (from :func:`clusters_with_pages`); None for all.
        matching: page filters (``plugin.search.public_query.page_filters``) at least one page of a
            listed cluster must match: a ``filter`` sub-aggregation counts those
            pages in every cluster (its ``doc_count`` is 0 for the others).
            Cheaper than ``cluster_ids`` when the filters match many clusters
            (a terms query of thousands of ids is slow).
        min_size: smallest cluster listed (2 = stories with copies).
        sort: ``size``, ``first_seen``, ``last_seen`` or ``sites``.
        order: ``asc`` or ``desc``.
        max_clusters: the bucket cap.
        single_shard: whether the index has one primary shard.

    Returns:
        The body; buckets are in ``aggregations.clusters.buckets`` with
        ``doc_count``, ``sites.value``, ``first``, ``last`` (and ``matching``).

    Raises:
        ValueError: an unknown sort or order, or a minimum size below 1.
    """
    _check_list(sort=sort, order=order, min_size=min_size)
    terms: dict[str, Any] = {
        "field": CLUSTER_ID,
        "size": max_clusters,
        "min_doc_count": min_size,
        "order": [{CLUSTER_SORTS[sort]: order}, {"_key": "asc"}],
    }
    if single_shard:
        terms["shard_min_doc_count"] = min_size
    aggs = _cluster_summary()
    if matching:
        aggs["matching"] = {"filter": {"bool": {"filter": list(matching)}}}
    query: dict[str, Any] = {"terms": {CLUSTER_ID: list(cluster_ids)}} if cluster_ids is not None else {"match_all": {}}
    return {"size": 0, "query": query, "aggs": {"clusters": {"terms": terms, "aggs": aggs}}}


def weakest_pairs(cluster_ids: list[str]) -> dict[str, Any]:
    """Search body: per cluster, the page that joined it with the lowest similarity and the page it joined.

    Returns:
        The body; per bucket of ``aggregations.clusters`` a ``weakest`` top hit (its ``newsfold.similarity``
        and ``newsfold.matched_id``).
    """
    return {
        "size": 0,
        "query": {
            "bool": {
                "filter": [{"terms": {CLUSTER_ID: list(cluster_ids)}}, {"exists": {"field": "newsfold.similarity"}}]
            }
        },
        "aggs": {
            "clusters": {
                "terms": {"field": CLUSTER_ID, "size": max(1, len(cluster_ids))},
                "aggs": {
                    "weakest": {
                        "top_hits": {
                            "size": 1,
                            "_source": ["newsfold.similarity", "newsfold.matched_id"],
                            "sort": [{"newsfold.similarity": "asc"}, URL_ORDER],
                        }
                    }
                },
            }
        },
    }


def corrections_named_pages(*, size: int = MAX_LIST_CLUSTERS) -> dict[str, Any]:
    """Search body on the corrections index: the latest ``size`` corrections, each with the pages it named.

    The caller counts them per story the named pages are in now (a story's cluster id may have changed since).
    """
    return {"size": size, "_source": ["pages"], "sort": [{"at": "desc"}]}


def _check_list(*, sort: str, order: str, min_size: int) -> None:
    """Raise unless the cluster list's sort, order and minimum size are ones :func:`cluster_list` knows."""
    if sort not in CLUSTER_SORTS:
        raise InputError(f"sort must be one of {', '.join(CLUSTER_SORTS)}, got {sort!r}")
    if order not in ("asc", "desc"):
        raise InputError(f"order must be 'asc' or 'desc', got {order!r}")
    if min_size < 1:
        raise InputError(f"min_size must be >= 1, got {min_size}")


def _representative_first() -> list[dict[str, Any]]:
    # the story's face (plugin.search.story_face): an editor's choice, else the fullest, else the earliest
    return face_sort()


def cluster_samples(cluster_ids: list[str]) -> dict[str, Any]:
    """Search body: one sample page (the representative, else the first seen) per cluster, for list titles.

    Args:
        cluster_ids: the clusters of one page of the list.

    Returns:
        The body; per bucket a ``sample`` top hit and the cluster's ``langs``.
    """
    return {
        "size": 0,
        "query": {"terms": {CLUSTER_ID: list(cluster_ids)}},
        "aggs": {
            "clusters": {
                "terms": {"field": CLUSTER_ID, "size": max(1, len(cluster_ids))},
                "aggs": {
                    "sample": {
                        "top_hits": {
                            "size": 1,
                            "_source": ["title", "site", "url", "lang"],
                            "sort": _representative_first(),
                        }
                    },
                    "langs": {"terms": {"field": "lang", "size": 5}},
                },
            }
        },
    }


def cluster_detail(cluster_id: str, *, size: int = 200) -> dict[str, Any]:
    """Search body: a cluster's pages with everything the admin detail shows (the reference first, as on the public
    story page: an editor's representative, else the first published; then by publication date).

    Args:
        cluster_id: the cluster.
        size: at most this many pages (bodies included, so keep it modest).

    Returns:
        The body; ``hits.total`` is the true cluster size.
    """
    return {
        "query": {"term": {CLUSTER_ID: cluster_id}},
        "size": size,
        # the public story page's reference first (an editor's choice, else the first published), then by date
        "sort": reference_sort("published"),
        "_source": MEMBER_SOURCE,
        "track_total_hits": True,
        "aggs": {FACE_AGG: face_agg([*ARTICLE_SOURCE, CLUSTER_ID])},  # the page the story shows everywhere
    }
