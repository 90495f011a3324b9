"""Query builders of the admin pages: overview, cluster list, cluster detail and statistics.

Only the web's admin (``web.admin``, ``web.clusters``, ``web.stats``) reads
these; the search and the lookups of ingest and corrections are in
``plugin.queries``. Like those, they return dicts and never execute them.
What the cluster list and the statistics cost on a large index is worked
out in docs/scaling.md ("The admin's cluster list and statistics").
"""

from __future__ import annotations

from typing import Any

from newsfold.plugin.document import CLUSTER_ID
from newsfold.plugin.errors import InputError
from newsfold.plugin.queries import FOUNDER_FIRST, page_filters

#: sort keys of the cluster list -> the terms aggregation's order key
CLUSTER_SORTS = {"size": "_count", "first_seen": "first", "last_seen": "last", "sites": "sites"}
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
    "newsfold.signature",
    "newsfold.shingle_count",
    "newsfold.token_count",
    "newsfold.similarity",
    "newsfold.matched_id",
    "newsfold.band_keys",
    "newsfold.title_key",
    "newsfold.representative",
    "newsfold.nearest_rejected",
]
#: fixed intervals for the ingest-rate chart, with their length in milliseconds
RATE_INTERVALS = (
    ("1m", 60_000),
    ("5m", 300_000),
    ("15m", 900_000),
    ("1h", 3_600_000),
    ("6h", 21_600_000),
    ("1d", 86_400_000),
    ("7d", 604_800_000),
    ("30d", 2_592_000_000),
)


def _stories() -> dict[str, Any]:
    """The number of stories: distinct cluster ids (near exact below 40,000)."""
    return {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}}


def _cluster_summary() -> dict[str, Any]:
    """Per cluster: its number of sites and its first and last ingest time."""
    return {
        "sites": {"cardinality": {"field": "site"}},
        "first": {"min": {"field": "ingested"}},
        "last": {"max": {"field": "ingested"}},
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
                            "sort": [{"ingested": "asc"}, FOUNDER_FIRST],
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
        "aggs": {"stories": _stories()},
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
        matching: page filters (``plugin.queries.page_filters``) at least one page of a
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
    if sort not in CLUSTER_SORTS:
        raise InputError(f"sort must be one of {', '.join(CLUSTER_SORTS)}, got {sort!r}")
    if order not in ("asc", "desc"):
        raise InputError(f"order must be 'asc' or 'desc', got {order!r}")
    if min_size < 1:
        raise InputError(f"min_size must be >= 1, got {min_size}")
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


def _representative_first() -> list[dict[str, Any]]:
    # an editor's choice first (missing counts as not chosen), then the first page seen
    return [
        {"newsfold.representative": {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}},
        {"ingested": "asc"},
        FOUNDER_FIRST,
        {"newsfold.url_key": {"order": "asc", "missing": "_last"}},
    ]


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
    """Search body: a cluster's pages with everything the admin detail shows (representative first, then oldest).

    Args:
        cluster_id: the cluster.
        size: at most this many pages (bodies included, so keep it modest).

    Returns:
        The body; ``hits.total`` is the true cluster size.
    """
    return {
        "query": {"term": {CLUSTER_ID: cluster_id}},
        "size": size,
        "sort": _representative_first(),
        "_source": MEMBER_SOURCE,
        "track_total_hits": True,
    }


def duplicate_overview(*, sites: int = 30) -> dict[str, Any]:
    """Search body: pages, stories, pages that matched an earlier copy (overall and per site), ingest time span.

    A page is a duplicate when it has a ``matched_id`` (it was folded into an
    earlier page's cluster when ingested). Per site: the ``sites`` sites with
    the most pages.

    Args:
        sites: how many sites to break down.

    Returns:
        The body (aggregations ``stories``, ``duplicates``, ``sites``, ``ingested``).
    """
    duplicate = {"filter": {"exists": {"field": "newsfold.matched_id"}}}
    return {
        "size": 0,
        "track_total_hits": True,
        "aggs": {
            "stories": _stories(),
            "duplicates": duplicate,
            "sites": {"terms": {"field": "site", "size": sites}, "aggs": {"duplicates": duplicate}},
            "ingested": {"stats": {"field": "ingested"}},
        },
    }


def cluster_size_counts(*, max_clusters: int = MAX_LIST_CLUSTERS) -> dict[str, Any]:
    """Search body: the page count of every cluster with at least two pages (largest first, at most ``max_clusters``).

    The caller bins the ``doc_count`` values; single-page stories are the
    story count minus these clusters. Costs what :func:`cluster_list` costs.

    Args:
        max_clusters: the bucket cap.

    Returns:
        The body (aggregations ``clusters`` and ``stories``).
    """
    return {
        "size": 0,
        "aggs": {
            "clusters": {"terms": {"field": CLUSTER_ID, "size": max_clusters, "min_doc_count": 2}},
            "stories": _stories(),
        },
    }


def similarity_distribution(*, interval: float = 0.05) -> dict[str, Any]:
    """Search body: histograms of the similarity of accepted matches and of the nearest rejected candidate.

    ``similarity`` is the estimated Jaccard to the page a duplicate matched;
    ``nearest_rejected`` the highest estimate among candidates that failed
    verification. Both on [0, 1] with empty bins kept.

    Args:
        interval: the bin width.

    Returns:
        The body (histogram aggregations ``accepted`` and ``rejected``).

    Raises:
        ValueError: the interval is not in (0, 1].
    """
    if not 0 < interval <= 1:
        raise InputError(f"interval must be in (0, 1], got {interval}")

    def histogram(field: str) -> dict[str, Any]:
        return {
            "histogram": {
                "field": field,
                "interval": interval,
                "min_doc_count": 0,
                "extended_bounds": {"min": 0, "max": 1},
            }
        }

    return {
        "size": 0,
        "aggs": {"accepted": histogram("newsfold.similarity"), "rejected": histogram("newsfold.nearest_rejected")},
    }


def rate_interval(start_ms: int, end_ms: int, *, max_buckets: int = 60) -> tuple[str, int]:
    """The shortest interval of :data:`RATE_INTERVALS` that covers ``[start, end]`` in at most ``max_buckets`` bins.

    Args:
        start_ms: the first instant, epoch milliseconds.
        end_ms: the last instant.
        max_buckets: bins wanted at most (the longest interval is used when none fits).

    Returns:
        ``(Elasticsearch fixed interval, its length in milliseconds)``.
    """
    span = max(0, int(end_ms) - int(start_ms))
    for name, length in RATE_INTERVALS:
        if span // length + 1 <= max_buckets:
            return name, length
    return RATE_INTERVALS[-1]


def ingest_rate(*, start_ms: int, end_ms: int, max_buckets: int = 60) -> dict[str, Any]:
    """Search body: pages ingested per interval between two instants (a ``date_histogram`` on ``ingested``).

    Args:
        start_ms: the first ingest, epoch milliseconds.
        end_ms: the last ingest.
        max_buckets: bins wanted at most; the interval is chosen by :func:`rate_interval`.

    Returns:
        The body (``aggregations.rate``; empty intervals are kept).
    """
    interval, _ = rate_interval(start_ms, end_ms, max_buckets=max_buckets)
    return {
        "size": 0,
        "aggs": {
            "rate": {
                "date_histogram": {
                    "field": "ingested",
                    "fixed_interval": interval,
                    "min_doc_count": 0,
                    "extended_bounds": {"min": int(start_ms), "max": int(end_ms)},
                }
            }
        },
    }


def rejection_reasons(*, size: int = 20) -> dict[str, Any]:
    """Search body for the rejected-pages index: rejected pages by reason, most frequent first.

    Args:
        size: at most this many reasons.

    Returns:
        The body (``aggregations.reasons``; ``hits.total`` counts every rejected page).
    """
    return {
        "size": 0,
        "track_total_hits": True,
        "aggs": {"reasons": {"terms": {"field": "reason", "size": size}}},
    }


def syndication_sites(
    *, filters: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (), sites: int = 30
) -> dict[str, Any]:
    """Search body: the ``sites`` sites with the most pages among those ``filters`` keep, each with its stories
    and the wires its pages credit (``plugin.provenance``).

    Returns:
        The body (aggregation ``sites``: ``stories``, ``wires`` per site); one :func:`syndication_site` per site
        gives its own stories.
    """
    return {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": list(filters)}},
        "aggs": {"sites": {"terms": {"field": "site", "size": sites, "order": [{"_count": "desc"}, {"_key": "asc"}]},
                           "aggs": {"stories": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}},
                                    "wires": {"terms": {"field": "newsfold.wire", "size": 10}},
                                    "decided": {"filter": {"exists": {"field": "newsfold.origin_id"}}}}}},
    }  # fmt: skip


def syndication_site(site: str, *, filters: list[dict[str, Any]] | tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    """Search body: of one site's pages among those ``filters`` keep, the ones of stories it originated
    (``newsfold.origin_site`` is the site) and their number of stories."""
    own = {"term": {"newsfold.origin_site": site}}
    return {
        "size": 0,
        "query": {"bool": {"filter": [*filters, {"term": {"site": site}}]}},
        "aggs": {"own": {"filter": own, "aggs": {"stories": {"cardinality": {"field": CLUSTER_ID,
                                                                             "precision_threshold": 40000}}}}},
    }  # fmt: skip
