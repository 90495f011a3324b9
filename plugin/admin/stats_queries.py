"""Query builders of the statistics page: duplicates per site, cluster sizes, similarities, ingest rate,
rejections and syndication.

Only the web's statistics (``web.actions.stats``) read these; the overview and the cluster list are in
``plugin.admin.admin_queries``. Like those, they return dicts and never execute them. What the
statistics cost on a large index is worked out in docs/scaling.md ("The admin's cluster list and statistics").
"""

from __future__ import annotations

from typing import Any

from newsfold.plugin.admin.admin_queries import MAX_LIST_CLUSTERS, story_cardinality
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.document import CLUSTER_ID
from newsfold.plugin.fold.lookups import MAX_WINDOW
from newsfold.plugin.fold.provenance import DOMAIN, SITE_KEY

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
            "stories": story_cardinality(),
            "duplicates": duplicate,
            "sites": {"terms": {"field": "site", "size": sites}, "aggs": {"duplicates": duplicate}},
            "ingested": {"stats": {"field": "ingested"}},
        },
    }


def cluster_size_counts(*, max_clusters: int = MAX_LIST_CLUSTERS) -> dict[str, Any]:
    """Search body: the page count of every cluster with at least two pages (largest first, at most ``max_clusters``).

    The caller bins the ``doc_count`` values; single-page stories are the
    story count minus these clusters. Costs what ``plugin.admin.admin_queries.cluster_list`` costs.

    Args:
        max_clusters: the bucket cap.

    Returns:
        The body (aggregations ``clusters`` and ``stories``).
    """
    return {
        "size": 0,
        "aggs": {
            "clusters": {"terms": {"field": CLUSTER_ID, "size": max_clusters, "min_doc_count": 2}},
            "stories": story_cardinality(),
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


#: hosts of one publisher (registrable domain) a syndication row reads at most
MAX_HOSTS = 100


def syndication_sites(
    *, filters: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (), sites: int = 30
) -> dict[str, Any]:
    """Search body: the ``sites`` sites (publishers: registrable domains, so subdomains are one site) with the
    most pages among those ``filters`` keep, each with its stories, its hosts and the wires its pages credit
    (``plugin.fold.provenance``).

    Returns:
        The body (aggregation ``sites``: ``stories``, ``hosts``, ``wires`` per site); one
        :func:`syndication_site` per site gives its own stories.
    """
    return {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": list(filters)}},
        "aggs": {"sites": {"terms": {"field": DOMAIN, "size": sites, "order": [{"_count": "desc"}, {"_key": "asc"}]},
                           "aggs": {"stories": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}},
                                    "hosts": {"terms": {"field": SITE_KEY, "size": MAX_HOSTS}},
                                    "wires": {"terms": {"field": "newsfold.wire", "size": 10}},
                                    "decided": {"filter": {"exists": {"field": "newsfold.origin_id"}}}}}},
    }  # fmt: skip


def syndication_site(
    site: str,
    *,
    hosts: list[str] | tuple[str, ...] = (),
    filters: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """Search body: of one publisher's pages (``site``: its registrable domain) among those ``filters`` keep, the
    ones of stories it originated (``newsfold.origin_site`` is one of its ``hosts``) and their number of stories."""
    own = {"terms": {"newsfold.origin_site": sorted({*hosts, site})}}
    return {
        "size": 0,
        "query": {"bool": {"filter": [*filters, {"term": {DOMAIN: site}}]}},
        "aggs": {"own": {"filter": own, "aggs": {"stories": {"cardinality": {"field": CLUSTER_ID,
                                                                             "precision_threshold": 40000}}}}},
    }  # fmt: skip


def rejected_pages(*, reason: str | None = None, offset: int = 0, size: int = 50) -> dict[str, Any]:
    """Search body of the rejected-pages index: one page of the records, newest first, optionally of one reason.

    Raises:
        InputError: offset or size out of range (the window is ``MAX_WINDOW`` records).
    """
    if offset < 0 or not 1 <= size <= 1000 or offset + size > MAX_WINDOW:
        raise InputError(f"offset {offset} and size {size} are out of range (at most {MAX_WINDOW:,} records)")
    return {
        "query": {"term": {"reason": reason}} if reason else {"match_all": {}},
        "from": offset,
        "size": size,
        "sort": [{"at": {"order": "desc"}}, {"page_id": {"order": "asc"}}],
        "track_total_hits": True,
    }
