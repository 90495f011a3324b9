"""Elasticsearch query builders. They return dicts and never execute them."""

from __future__ import annotations

import copy
import datetime as dt
import re

from newsfold.plugin.document import CLUSTER_ID, LOOKUP_SOURCE, VERSION_SOURCE, cluster_of

MAX_QUERY_CHARS = 500
MAX_QUERY_TERMS = 32
#: the simple_query_string operators a public query may use: no fuzzy (~N after a word), no phrase slop
#: (~N after a phrase) and no prefix (word*): each of those can make one query cost the server minutes
PUBLIC_QUERY_FLAGS = "AND|OR|NOT|PHRASE|PRECEDENCE|WHITESPACE|ESCAPE"
#: the server-side time limit of a public search (Elasticsearch returns what it found by then)
SEARCH_TIMEOUT = "2s"
REPRESENTATIVE_BOOST = 2.0  # added to the relevance score of an editor-chosen representative
SORTS = ("relevance", "date")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def band_lookup(
    keys: list[str],
    *,
    size: int = 50,
    exclude_ids: list[str] | None = None,
    min_bands: int = 1,
    exclude_cluster: str | None = None,
) -> dict:
    """Search body finding indexed pages sharing at least ``min_bands`` band keys.

    Each key is a ``constant_score`` term clause, so a hit's score is the
    number of bands it shares: the most similar candidates come first.
    ``exclude_cluster`` leaves out the pages of one cluster (the reconcile
    step only looks for other clusters).
    """
    query: dict = {
        "bool": {
            "should": [{"constant_score": {"filter": {"term": {"newsfold.band_keys": k}}}} for k in keys],
            "minimum_should_match": min_bands,
        }
    }
    must_not: list[dict] = []
    if exclude_ids:
        must_not.append({"ids": {"values": list(exclude_ids)}})
    if exclude_cluster:
        must_not.append({"term": {CLUSTER_ID: exclude_cluster}})
    if must_not:
        query["bool"]["must_not"] = must_not
    return {"query": query, "size": size, "_source": LOOKUP_SOURCE}


def cluster_members(cluster_id: str, *, size: int = 1000, search_after: list | None = None) -> dict:
    """Search body listing a cluster's pages (oldest first, paged by ``search_after``)."""
    body: dict = {
        "query": {"term": {CLUSTER_ID: cluster_id}},
        "size": size,
        "sort": [{"ingested": "asc"}, {"newsfold.url_key": "asc"}],
        "_source": VERSION_SOURCE + ["newsfold.similarity", "newsfold.matched_id"],
        "track_total_hits": True,
    }
    if search_after:
        body["search_after"] = search_after
    return body


def cluster_ids_only(cluster_id: str, *, size: int = 1000) -> dict:
    """Search body returning only the ids of a cluster's pages (for relabelling)."""
    return {"query": {"term": {CLUSTER_ID: cluster_id}}, "size": size, "_source": False}


def _filters(
    *, site: str | None = None, lang: str | None = None, date_from: str | None = None, date_to: str | None = None
) -> list[dict]:
    out: list[dict] = []
    if site:
        out.append({"term": {"site": site}})
    if lang:
        out.append({"term": {"lang": lang}})
    if date_from or date_to:
        start, end = _day(date_from, "date_from"), _day(date_to, "date_to")
        if start and end and start > end:
            raise ValueError(f"the date range is empty: {start.isoformat()} is after {end.isoformat()}")
        rng = {}
        if start:
            rng["gte"] = start.isoformat()
        if end and end < dt.date.max:
            # "up to and including that day": before the next midnight, the same on every Elasticsearch version
            rng["lt"] = (end + dt.timedelta(days=1)).isoformat()
        if not rng:  # 9999-12-31 and nothing else: no bound at all
            return out
        out.append({"range": {"published": rng}})
    return out


def _day(value: str | None, name: str) -> dt.date | None:
    """An inclusive date bound given as ``YYYY-MM-DD``."""
    if not value:
        return None
    try:
        if not _ISO_DATE.match(value):
            raise ValueError(value)
        return dt.date.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{name} must be a date like 2024-05-31, got {value[:40]!r}") from None


def checked_query(q: str | None) -> str:
    """A public query string, stripped and checked against the limits.

    Raises:
        ValueError: more than ``MAX_QUERY_CHARS`` characters or ``MAX_QUERY_TERMS`` words (the message says which).
    """
    q = (q or "").strip()
    if len(q) > MAX_QUERY_CHARS:
        raise ValueError(f"the query has {len(q)} characters; the limit is {MAX_QUERY_CHARS}")
    words = len(q.split())
    if words > MAX_QUERY_TERMS:
        raise ValueError(f"the query has {words} words; ask with at most {MAX_QUERY_TERMS} words")
    return q


def text_query(q: str | None) -> dict:
    """The full-text part of a public search: every word must match, titles count double.

    Quotes, ``-word``, ``|`` and parentheses work; fuzziness, phrase slop and
    prefixes are switched off (``PUBLIC_QUERY_FLAGS``), so their characters
    are read as text.

    Raises:
        ValueError: see :func:`checked_query`.
    """
    q = checked_query(q)
    if not q:
        return {"match_all": {}}
    return {
        "simple_query_string": {
            "query": q,
            "fields": ["title^2", "body"],
            "default_operator": "and",
            "flags": PUBLIC_QUERY_FLAGS,
        }
    }


def collapsed_search(
    q: str,
    *,
    page: int = 1,
    size: int = 10,
    sort: str = "relevance",
    site: str | None = None,
    lang: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    precision_threshold: int = 40000,
    representative_boost: float = REPRESENTATIVE_BOOST,
) -> dict:
    """newsfold's own story search: one hit per story, folded by :func:`fold_query` as a host's search is.

    The hit of each story is its best-matching version; a version an editor
    made the story's representative is preferred: by relevance it gets
    ``representative_boost`` added to its score (which also lifts its story a
    little), by date it wins among versions of the same date. ``hits.total`` counts
    documents; :func:`story_count` of the response is the number of stories.
    Pages use from/size (collapse only pages with ``search_after`` when
    sorting on the collapse field). The versions of each story are fetched
    apart (:func:`versions_of`, one aggregation for the whole page), so no
    inner hits are asked for.

    Raises:
        ValueError: the query is too long, the page out of range, the sort
            unknown or a date not ``YYYY-MM-DD`` (the message says which).
    """
    q = checked_query(q)
    if page < 1 or size < 1 or page * size > 10_000:
        raise ValueError(f"page {page} of size {size} is out of range (at most 10,000 results)")
    if sort not in SORTS:
        raise ValueError(f"sort must be 'relevance' or 'date', got {sort[:40]!r}")
    must = text_query(q)
    body: dict = {
        "query": {
            "bool": {
                "must": [must],
                "filter": _filters(site=site, lang=lang, date_from=date_from, date_to=date_to),
                "should": [representative_clause(representative_boost)] if representative_boost > 0 else [],
            }
        },
        "from": (page - 1) * size,
        "size": size,
        "_source": VERSION_SOURCE,
        "track_total_hits": True,
        "timeout": SEARCH_TIMEOUT,
    }
    if q:
        body["highlight"] = {
            "fields": {"body": {"fragment_size": 180, "number_of_fragments": 2}, "title": {"number_of_fragments": 0}},
            "pre_tags": ["<mark>"],
            "post_tags": ["</mark>"],
            "encoder": "html",
        }
    if sort == "date" or not q:
        body["sort"] = [
            {"published": {"order": "desc", "missing": "_last"}},
            {"newsfold.representative": {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}},
            {"ingested": "desc"},
        ]
    return fold_query(body, versions=0, precision_threshold=precision_threshold)


def representative_clause(boost: float = REPRESENTATIVE_BOOST) -> dict:
    """A should clause adding ``boost`` to the score of a story's editor-chosen representative."""
    return {"constant_score": {"filter": {"term": {"newsfold.representative": True}}, "boost": boost}}


def search_facets(
    q: str, *, date_from: str | None = None, date_to: str | None = None, sites: int = 500, langs: int = 100
) -> dict:
    """Search body: the sites and languages of the pages matching ``q`` in a date range (the filter choices).

    The site and language filters are left out on purpose, so that choosing
    one site still offers the others.

    Args:
        q: the full-text query (empty: every page).
        date_from: first day (``YYYY-MM-DD``) of ``published``, inclusive.
        date_to: last day, inclusive.
        sites: at most this many sites (the most frequent first).
        langs: at most this many languages.

    Returns:
        A ``size: 0`` body with terms aggregations ``sites`` and ``langs``.

    Raises:
        ValueError: the query is too long or a date is malformed.
    """
    return {
        "query": {"bool": {"must": [text_query(q)], "filter": _filters(date_from=date_from, date_to=date_to)}},
        "size": 0,
        "timeout": SEARCH_TIMEOUT,
        "aggs": {
            "sites": {"terms": {"field": "site", "size": sites}},
            "langs": {"terms": {"field": "lang", "size": langs}},
        },
    }


def versions_of(cluster_ids: list[str], *, per_cluster: int = 20) -> dict:
    """Search body listing the versions of several clusters in one request.

    Unlike collapse ``inner_hits`` (one extra search per group, and only the
    versions that match the query), this returns every version of each story
    with the true cluster size as the bucket's ``doc_count``.
    """
    return {
        "query": {"terms": {CLUSTER_ID: list(cluster_ids)}},
        "size": 0,
        "aggs": {
            "clusters": {
                "terms": {"field": CLUSTER_ID, "size": max(1, len(cluster_ids))},
                "aggs": {
                    "versions": {
                        "top_hits": {"size": per_cluster, "_source": VERSION_SOURCE, "sort": [{"ingested": "asc"}]}
                    }
                },
            }
        },
    }


def largest_clusters(*, size: int = 50) -> dict:
    """Search body: the clusters with the most pages."""
    return {
        "size": 0,
        "aggs": {
            "clusters": {
                "terms": {"field": CLUSTER_ID, "size": size, "min_doc_count": 2, "order": {"_count": "desc"}},
                "aggs": {
                    "sites": {"cardinality": {"field": "site"}},
                    "first": {"min": {"field": "ingested"}},
                    "last": {"max": {"field": "ingested"}},
                    "sample": {
                        "top_hits": {"size": 1, "_source": ["title", "site", "url"], "sort": [{"ingested": "asc"}]}
                    },
                },
            }
        },
    }


def totals() -> dict:
    """Search body: page and story counts of the whole index."""
    return {
        "size": 0,
        "track_total_hits": True,
        "aggs": {"stories": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}}},
    }


# Admin: cluster list, cluster detail and statistics.

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


def _text_filter(q: str | None) -> list[dict]:
    return [text_query(q)] if checked_query(q) else []


def page_filters(*, site: str | None = None, lang: str | None = None, q: str | None = None) -> list[dict]:
    """Filter clauses for pages of a site, in a language and containing text in the title or body.

    Args:
        site: pages of this site.
        lang: pages in this language.
        q: text in the title or body (``simple_query_string``, all words).

    Returns:
        The clauses (empty for no filter).

    Raises:
        ValueError: the text query is too long.
    """
    return _filters(site=site, lang=lang) + _text_filter(q)


def clusters_with_pages(
    *, site: str | None = None, lang: str | None = None, q: str | None = None, max_clusters: int = MAX_LIST_CLUSTERS
) -> dict:
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
    matching: list[dict] | None = None,
    min_size: int = 2,
    sort: str = "size",
    order: str = "desc",
    max_clusters: int = MAX_LIST_CLUSTERS,
    single_shard: bool = True,
) -> dict:
    """Search body: clusters with their size, site count and first/last ingest time, in the order asked for.

    One ``terms`` aggregation on ``cluster_id`` (``min_doc_count`` = the
    minimum size) ordered by the sort key (page count, the ``min``/``max`` of
    ``ingested``, or the ``cardinality`` of ``site``; ties by cluster id). The
    caller applies the maximum size and the first/last-seen ranges to the
    returned buckets (no script needed, and it knows when the cap was hit) and
    slices the page out, so the total is exact below the cap.

    How it scales: the aggregation visits every page the query matches and
    holds one bucket per cluster of at least ``min_size`` pages, so its cost
    grows with the number of such clusters, not with the page asked for
    (a ``composite`` aggregation pages cheaply but only in cluster-id order,
    so it cannot sort by size or date). At most ``max_clusters`` buckets come
    back: beyond that the list holds the first ``max_clusters`` clusters in the
    chosen order and the other filters apply within them. On one shard
    ``shard_min_doc_count`` keeps single pages out of the shard's top buckets,
    so ordering and cap are exact; across shards a cluster's pages may sit on
    different shards, ordering by a sub-aggregation is approximate
    (``shard_size``) and small clusters may crowd out others in a date order.
    An index with millions of multi-page clusters would need a cluster-summary
    index (one document per cluster) paged with ``search_after`` instead.

    Args:
        cluster_ids: only these clusters (from :func:`clusters_with_pages`); None for all.
        matching: page filters (:func:`page_filters`) at least one page of a
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
        raise ValueError(f"sort must be one of {', '.join(CLUSTER_SORTS)}, got {sort!r}")
    if order not in ("asc", "desc"):
        raise ValueError(f"order must be 'asc' or 'desc', got {order!r}")
    if min_size < 1:
        raise ValueError(f"min_size must be >= 1, got {min_size}")
    terms: dict = {
        "field": CLUSTER_ID,
        "size": max_clusters,
        "min_doc_count": min_size,
        "order": [{CLUSTER_SORTS[sort]: order}, {"_key": "asc"}],
    }
    if single_shard:
        terms["shard_min_doc_count"] = min_size
    aggs: dict = {
        "sites": {"cardinality": {"field": "site"}},
        "first": {"min": {"field": "ingested"}},
        "last": {"max": {"field": "ingested"}},
    }
    if matching:
        aggs["matching"] = {"filter": {"bool": {"filter": list(matching)}}}
    query: dict = {"terms": {CLUSTER_ID: list(cluster_ids)}} if cluster_ids is not None else {"match_all": {}}
    return {"size": 0, "query": query, "aggs": {"clusters": {"terms": terms, "aggs": aggs}}}


def _representative_first() -> list[dict]:
    # an editor's choice first (missing counts as not chosen), then the first page seen
    return [
        {"newsfold.representative": {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}},
        {"ingested": "asc"},
        {"newsfold.url_key": {"order": "asc", "missing": "_last"}},
    ]


def cluster_samples(cluster_ids: list[str]) -> dict:
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


def cluster_detail(cluster_id: str, *, size: int = 200) -> dict:
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


def duplicate_overview(*, sites: int = 30) -> dict:
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
            "stories": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}},
            "duplicates": duplicate,
            "sites": {"terms": {"field": "site", "size": sites}, "aggs": {"duplicates": duplicate}},
            "ingested": {"stats": {"field": "ingested"}},
        },
    }


def cluster_size_counts(*, max_clusters: int = MAX_LIST_CLUSTERS) -> dict:
    """Search body: the page count of every cluster with at least two pages (largest first, at most ``max_clusters``).

    The caller bins the ``doc_count`` values; single-page stories are the
    story count minus these clusters. Cost grows with the number of
    multi-page clusters (see :func:`cluster_list`).

    Args:
        max_clusters: the bucket cap.

    Returns:
        The body (aggregations ``clusters`` and ``stories``).
    """
    return {
        "size": 0,
        "aggs": {
            "clusters": {"terms": {"field": CLUSTER_ID, "size": max_clusters, "min_doc_count": 2}},
            "stories": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}},
        },
    }


def similarity_distribution(*, interval: float = 0.05) -> dict:
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
        raise ValueError(f"interval must be in (0, 1], got {interval}")

    def histogram(field: str) -> dict:
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


def ingest_rate(*, start_ms: int, end_ms: int, max_buckets: int = 60) -> dict:
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


def rejection_reasons(*, size: int = 20) -> dict:
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


# ------------------------------------------------------------------ corrections (plugin.corrections)
DECISION_SOURCE = ["id", "kind", "at", "pages", "must_link", "cannot_link", "released", "not_representative"]


def corrections_touching(page_ids: list[str], *, size: int = 10_000) -> dict:
    """Search body: the corrections that say something about any of ``page_ids`` (their decisions only)."""
    return {"query": {"terms": {"touches": list(page_ids)}}, "size": size, "_source": DECISION_SOURCE}


def corrections_since(since: str | None, *, size: int = 1000, search_after: list | None = None) -> dict:
    """Search body: the pages touched by corrections made at or after ``since`` (all when None), oldest first."""
    body: dict = {
        "query": {"range": {"at": {"gte": since}}} if since else {"match_all": {}},
        "sort": [{"at": "asc"}, {"id": "asc"}],
        "size": size,
        "_source": ["touches"],
    }
    if search_after:
        body["search_after"] = search_after
    return body


def corrections_log(
    *, cluster_id: str | None = None, page_id: str | None = None, offset: int = 0, size: int = 50
) -> dict:
    """Search body: the corrections log, newest first, optionally of one cluster and/or one page."""
    filters: list[dict] = []
    if cluster_id:
        filters.append({"term": {"clusters": cluster_id}})
    if page_id:
        filters.append({"term": {"touches": page_id}})
    return {
        "query": {"bool": {"filter": filters}} if filters else {"match_all": {}},
        "sort": [{"at": "desc"}, {"id": "desc"}],
        "from": offset,
        "size": size,
        "track_total_hits": True,
    }


def cluster_pages(cluster_ids: list[str], *, size: int = 10_000, source: list[str] | bool = False) -> dict:
    """Search body: the pages of some clusters (ids, and ``source`` fields when asked)."""
    return {"query": {"terms": {CLUSTER_ID: list(cluster_ids)}}, "size": size, "_source": source}


FOLD_FIELD = CLUSTER_ID
VERSIONS_NAME = "newsfold_versions"
STORIES_AGG = "newsfold_stories"
UNFOLDED_AGG = "newsfold_unfolded"
_NOT_WITH_COLLAPSE = ("collapse", "search_after", "scroll", "rescore")


def fold_query(body: dict, *, versions: int = 3, precision_threshold: int = 40000) -> dict:
    """Turn a host's own search body into a folded one: one hit per story.

    Everything of the host's body is kept (query, filters, ``post_filter``,
    sort, from/size, highlight, ``_source``, aggregations). Added:

    - ``collapse`` on ``cluster_id``, with inner hits named
      ``newsfold_versions``: up to ``versions`` other versions of each story,
      in the host's sort order (the hit itself is among them and is left out
      by :func:`folded_hits`), with the same ``_source`` and highlight;
    - aggregation ``newsfold_stories`` (the number of folded stories
      matching) and ``newsfold_unfolded`` (matching documents newsfold has not
      folded yet); :func:`story_count` adds them up.

    Elasticsearch puts every document without the collapse field into one
    shared group, so a document the host indexed but newsfold has not folded
    yet would hide the others of its kind. ``fold_search`` (``plugin.search``)
    runs this body and, only when ``newsfold_unfolded`` is not zero, a second
    search for those documents, each its own story.

    Args:
        body: the host's search body (not changed).
        versions: how many other versions per story to return (0: none).
        precision_threshold: of the ``newsfold_stories`` cardinality (exact up to this many stories).

    Returns:
        A new body for ``client.search``.

    Raises:
        ValueError: the body uses what collapse cannot be combined with
            (``collapse``, ``search_after``, ``scroll``, ``rescore``), or ``versions`` is negative.
    """
    if not isinstance(body, dict):
        raise ValueError("the search body must be a JSON object")
    clash = [k for k in _NOT_WITH_COLLAPSE if k in body]
    if clash:
        raise ValueError(f"a folded search cannot use {', '.join(clash)} (Elasticsearch's collapse does not allow it)")
    if versions < 0:
        raise ValueError(f"versions must be >= 0, got {versions}")
    out = copy.deepcopy(body)
    collapse: dict = {"field": FOLD_FIELD}
    if versions:
        inner: dict = {"name": VERSIONS_NAME, "size": versions + 1}
        for key in ("sort", "_source", "highlight"):
            if key in body:
                inner[key] = copy.deepcopy(body[key])
        collapse["inner_hits"] = inner
    out["collapse"] = collapse
    aggs = out.setdefault("aggs", out.pop("aggregations", {}))
    aggs[STORIES_AGG] = {"cardinality": {"field": FOLD_FIELD, "precision_threshold": precision_threshold}}
    aggs[UNFOLDED_AGG] = {"missing": {"field": FOLD_FIELD}}
    return out


def story_count(response: dict) -> int:
    """The number of stories matching a folded search: folded stories plus documents not folded yet."""
    aggs = response.get("aggregations") or {}
    folded = int((aggs.get(STORIES_AGG) or {}).get("value") or 0)
    unfolded = int((aggs.get(UNFOLDED_AGG) or {}).get("doc_count") or 0)
    return folded + unfolded


def folded_hits(response: dict) -> list[dict]:
    """The stories of a folded response: ``{"hit", "versions", "other_versions"}`` per story.

    ``versions`` are the other versions returned (the hit itself left out);
    ``other_versions`` counts every other matching version of the story.
    """
    out = []
    for hit in response.get("hits", {}).get("hits", []):
        folded = bool((hit.get("fields") or {}).get(FOLD_FIELD)) or bool(cluster_of(hit.get("_source")))
        if not folded:  # a document not folded yet: its own story, no versions
            out.append({"hit": hit, "versions": [], "other_versions": 0})
            continue
        inner = (hit.get("inner_hits") or {}).get(VERSIONS_NAME, {}).get("hits", {})
        returned = inner.get("hits", [])
        # the hit is one of its inner hits (asked for versions + 1): leave it out, keep at most ``versions``
        others = [h for h in returned if h.get("_id") != hit.get("_id")][: max(0, len(returned) - 1)]
        total = inner.get("total", {})
        count = total.get("value", 0) if isinstance(total, dict) else int(total or 0)
        out.append({"hit": hit, "versions": others, "other_versions": max(0, count - 1)})
    return out
