"""Top stories: the stories of a time window ranked by coverage or by their latest version.

What folding makes possible once copies share a ``newsfold.cluster_id``: :func:`top_stories` ranks the
stories of a window by coverage (distinct publishers, from ``newsfold.domain``) or by their latest version,
ties going to the more recent story. Windows are counted back from the newest page in the index
(:func:`newest`), so an archive from years ago works too. The stories' reference versions come from
``plugin.search.version_relations``; one story's page is ``plugin.search.story_versions``.

The builders return dicts and never execute them; the readers take the
responses. The time of a page is one date field (``published`` in newsfold's
own index; a host names its own). Pages without a value have no place in a
window: they are listed under ``all`` only, after the dated ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.document import CLUSTER_ID
from newsfold.plugin.fold.provenance import DOMAIN
from newsfold.plugin.search.page_dates import PLAUSIBLE_RANGE, epoch_millis, iso_millis
from newsfold.plugin.search.public_query import check_page
from newsfold.plugin.search.version_relations import (
    add_relations as add_relations,  # 0.1: plugin.search.story_queries
)
from newsfold.plugin.search.version_relations import read_references

#: the windows of top stories, in milliseconds back from the newest page (None: every page)
WINDOWS: dict[str, int | None] = {"24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000, "all": None}
WINDOW_NAMES = {"24h": "Last 24 hours", "7d": "7 days", "30d": "30 days", "all": "All"}
SORTS = ("coverage", "latest")
#: stories a top-stories list reaches at most (page x size); deeper pages are refused
MAX_STORIES = 1000


def _check_window(window: str) -> None:
    if window not in WINDOWS:
        raise InputError(f"window must be one of {', '.join(WINDOWS)}, got {str(window)[:40]!r}")


def newest(*, time_field: str = "published", filters: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Search body: the page with the newest ``time_field`` (the windows count back from it).

    A sorted search of one hit: on the stand-in ten times cheaper than a ``max`` aggregation. Only a
    plausible time counts (``plugin.search.page_dates``): one page dated in the year 9999 must not empty every window.
    """
    return {
        "size": 1,
        "query": {"bool": {"filter": [*filters, {"range": {time_field: PLAUSIBLE_RANGE}}]}},
        "sort": [{time_field: {"order": "desc"}}],
        "_source": [time_field],
    }


def read_newest(response: Mapping[str, Any], time_field: str = "published") -> int | None:
    """The newest time of a :func:`newest` response, epoch milliseconds (None: no page has one)."""
    hits = response.get("hits", {}).get("hits", [])
    return epoch_millis((hits[0].get("_source") or {}).get(time_field)) if hits else None


def window_filter(window: str, *, anchor_ms: int | None, time_field: str = "published") -> list[dict[str, Any]]:
    """The filter of a window counted back from ``anchor_ms`` (empty for ``all`` or an index without dates).

    Raises:
        ValueError: an unknown window.
    """
    _check_window(window)
    span = WINDOWS[window]
    if span is None or anchor_ms is None:
        return []
    # up to the anchor: anything newer has an implausible date (see :func:`newest`)
    return [{"range": {time_field: {"gte": anchor_ms - span, "lte": anchor_ms, "format": "epoch_millis"}}}]


def top_stories(
    *,
    window: str = "all",
    sort: str = "coverage",
    page: int = 1,
    size: int = 10,
    anchor_ms: int | None = None,
    time_field: str = "published",
    filters: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """Search body: one page of the stories of a window, by coverage or by latest version.

    One ``terms`` aggregation on the cluster id over the pages of the window
    (and the caller's filters: those choose which pages count, so with a
    language the coverage is the sites that ran the story in it), ordered by
    the number of distinct sites then the newest version (``coverage``), or
    the other way round (``latest``), ties by cluster id. The aggregation
    returns the first ``page * size`` stories and :func:`page_buckets` cuts
    the page out of them (no ``bucket_sort``: it lives in Elasticsearch's
    ``aggregations`` module, which a minimal node lacks). Each bucket carries its page count, sites and newest
    time; the stories' reference versions come from a second, cheap
    request (``plugin.search.version_relations.references``). On one shard the order is exact; across
    shards it is approximate like any ``terms`` order on a sub-aggregation.

    Args:
        window: ``24h``, ``7d``, ``30d`` or ``all``.
        sort: ``coverage`` or ``latest``.
        page: 1-based page.
        size: stories per page.
        anchor_ms: the newest page's time (:func:`newest`); windows count back from it.
        time_field: the date field of a page.
        filters: more filter clauses (site, language, dates, a host's own).

    Returns:
        The body; :func:`read_top_stories` reads its response.

    Raises:
        ValueError: an unknown window or sort, or a page beyond ``MAX_STORIES``.
    """
    _check_window(window)
    if sort not in SORTS:
        raise InputError(f"sort must be 'coverage' or 'latest', got {str(sort)[:40]!r}")
    check_page(page, size, MAX_STORIES)
    by_coverage, by_time = {"coverage": "desc"}, {"newest": "desc"}
    order = [by_coverage, by_time] if sort == "coverage" else [by_time, by_coverage]
    return {
        "size": 0,
        "track_total_hits": True,
        "query": {"bool": {"filter": [*window_filter(window, anchor_ms=anchor_ms, time_field=time_field), *filters]}},
        "aggs": {
            "stories": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}},
            "top": {
                "terms": {"field": CLUSTER_ID, "size": page * size, "order": [*order, {"_key": "asc"}]},
                "aggs": {
                    "coverage": {"cardinality": {"field": DOMAIN}},  # publishers: subdomains are one site
                    "newest": {"max": {"field": time_field}},
                },
            },
        },
    }


def page_buckets(response: Mapping[str, Any], *, page: int, size: int) -> list[dict[str, Any]]:
    """The buckets of page ``page`` (of ``size`` stories) in a :func:`top_stories` response, in order."""
    buckets: list[dict[str, Any]] = ((response.get("aggregations") or {}).get("top") or {}).get("buckets", [])
    return buckets[(page - 1) * size : page * size]


def read_top_stories(
    response: Mapping[str, Any], references: Mapping[str, Any] | None = None, *, page: int = 1, size: int | None = None
) -> tuple[int, list[dict[str, Any]]]:
    """``(stories in the window, the page of stories)`` of a :func:`top_stories` response.

    ``page`` and ``size`` are the ones the body was built with (default: every
    returned story, which is the first page).

    Each story: ``cluster_id``, ``sites`` (coverage), ``pages``, ``latest``
    (ISO time or None) and ``reference`` (``id`` plus its
    ``_source``, fold fields left inside ``newsfold``), read from the
    :func:`~newsfold.plugin.search.version_relations.references` response of the page's cluster ids (None without it).
    """
    aggs = response.get("aggregations") or {}
    total = int((aggs.get("stories") or {}).get("value") or 0)
    found = read_references(references) if references is not None else {}
    out = []
    buckets = (aggs.get("top") or {}).get("buckets", [])
    for bucket in page_buckets(response, page=page, size=size) if size else buckets:
        hit = found.get(bucket["key"])
        ref = {"id": hit["_id"], **hit.get("_source", {})} if hit else None
        out.append({
            "cluster_id": bucket["key"],
            "sites": int(bucket["coverage"]["value"] or 0),
            "pages": int(bucket["doc_count"]),
            "latest": iso_millis(bucket["newest"].get("value")),
            "reference": ref,
        })  # fmt: skip
    return total, out
