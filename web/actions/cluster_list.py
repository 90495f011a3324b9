"""Listing clusters for the admin: the filters and order of the list, and one page of its rows.

The queries come from ``plugin.admin.admin_queries``; one cluster's detail is ``web/admin/cluster_detail.py``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from elasticsearch import Elasticsearch

from newsfold.plugin.admin import admin_queries
from newsfold.plugin.errors import InputError
from newsfold.plugin.search.hits import read_versions
from newsfold.plugin.search.public_query import page_filters, parse_day
from newsfold.plugin.settings import Settings
from newsfold.web.actions import review_queue
from newsfold.web.formatting import page_count
from newsfold.web.validation import MAX_FILTER_CHARS, filter_text, query_text

MAX_PAGE = 10_000
#: page filters matching at most this many clusters list them by id; more are matched inside the aggregation
MAX_CLUSTERS_BY_ID = 1000
DAY_MS = 86_400_000


def _day_ms(name: str, value: str) -> int:
    day = parse_day(value, name)
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000)


def _whole(name: str, value: str, *, low: int, high: int) -> int:
    if not (value.isascii() and value.isdigit()) or len(value) > 7:
        raise InputError(f"{name} must be a whole number, got {value[:20]!r}")
    number = int(value)
    if not low <= number <= high:
        raise InputError(f"{name} must be between {low:,} and {high:,}, got {number:,}")
    return number


@dataclass(frozen=True)
class ClusterListParams:
    """The cluster list's filters, order and page, as in its URL.

    Dates are ``YYYY-MM-DD`` in UTC and inclusive; ``first_*`` bound the
    first ingest of a cluster, ``last_*`` its latest. ``site``, ``lang`` and
    ``q`` pick clusters with at least one matching page; sizes and dates are
    those of the whole cluster.
    """

    min_size: int = 2
    max_size: int | None = None
    first_from: str | None = None
    first_to: str | None = None
    last_from: str | None = None
    last_to: str | None = None
    site: str | None = None
    lang: str | None = None
    q: str | None = None
    sort: str = "size"
    order: str = "desc"
    page: int = 1

    @classmethod
    def from_args(cls, args: Mapping[str, str]) -> ClusterListParams:
        """Read and check the request arguments.

        Raises:
            ValueError: a value is malformed or out of range; the message names it.
        """
        values: dict = {}
        raw = {f.name: (args.get(f.name) or "").strip() for f in fields(cls)}
        values["q"] = query_text(raw["q"]) or None
        for name in ("site", "lang"):
            values[name] = filter_text(raw[name], name)
        if raw["min_size"]:
            values["min_size"] = _whole("min_size", raw["min_size"], low=1, high=1_000_000)
        if raw["max_size"]:
            values["max_size"] = _whole("max_size", raw["max_size"], low=1, high=1_000_000)
        if values.get("max_size") is not None and values["max_size"] < values.get("min_size", 2):
            raise InputError(f"max_size {values['max_size']} is below min_size {values.get('min_size', 2)}")
        for name in ("first_from", "first_to", "last_from", "last_to"):
            if raw[name]:
                _day_ms(name, raw[name])
                values[name] = raw[name]
        for prefix in ("first", "last"):
            low, high = values.get(f"{prefix}_from"), values.get(f"{prefix}_to")
            if low and high and low > high:
                raise InputError(f"{prefix}_from {low} is after {prefix}_to {high}")
        if raw["sort"]:
            if raw["sort"] not in admin_queries.CLUSTER_SORTS:
                raise InputError(
                    f"sort must be one of {', '.join(admin_queries.CLUSTER_SORTS)}, got {raw['sort'][:40]!r}"
                )
            values["sort"] = raw["sort"]
        if raw["order"]:
            if raw["order"] not in ("asc", "desc"):
                raise InputError(f"order must be 'asc' or 'desc', got {raw['order'][:40]!r}")
            values["order"] = raw["order"]
        elif raw["sort"]:
            values["order"] = admin_queries.DEFAULT_ORDERS.get(raw["sort"], "desc")
        if raw["page"]:
            values["page"] = _whole("page", raw["page"], low=1, high=MAX_PAGE)
        return cls(**values)

    @classmethod
    def for_form(cls, args: Mapping[str, str]) -> dict:
        """What the user typed, unchecked and cut to size, to refill the form above an error."""
        return {f.name: (args.get(f.name) or "").strip()[:MAX_FILTER_CHARS] for f in fields(cls)}

    def url_args(self, page: int | None = None, **changes) -> dict:
        """Arguments for ``url_for`` that reproduce this list (another page, or with changes)."""
        args = {f.name: getattr(self, f.name) for f in fields(self)}
        args.update(changes)
        args["page"] = page or (1 if changes else self.page)
        defaults = ClusterListParams()
        return {k: v for k, v in args.items() if v is not None and v != getattr(defaults, k)}

    def sort_args(self, sort: str) -> dict:
        """The list sorted by ``sort``; asking again for the current sort flips the order."""
        if sort == self.sort:
            return self.url_args(sort=sort, order="asc" if self.order == "desc" else "desc")
        return self.url_args(sort=sort, order=admin_queries.DEFAULT_ORDERS.get(sort, "desc"))

    @property
    def has_page_filters(self) -> bool:
        return bool(self.site or self.lang or self.q)

    def seen_bounds(self, prefix: str) -> tuple[int | None, int | None]:
        """Epoch-millisecond bounds of ``first`` or ``last`` seen; the ``to`` day is included whole."""
        low, high = getattr(self, f"{prefix}_from"), getattr(self, f"{prefix}_to")
        return (
            _day_ms(f"{prefix}_from", low) if low else None,
            _day_ms(f"{prefix}_to", high) + DAY_MS - 1 if high else None,
        )


@dataclass
class ClusterList:
    """One page of the cluster list and the counts of the whole list."""

    params: ClusterListParams
    page_size: int
    total: int
    rows: list[dict] = field(default_factory=list)
    truncated: bool = False

    @property
    def total_pages(self) -> int:
        return page_count(self.total, self.page_size)


def _metric_time(agg: Mapping) -> str | int | float | None:
    """A min/max date aggregation's value: its string form, else the epoch milliseconds."""
    return agg.get("value_as_string") or agg.get("value")


def cluster_row(bucket: Mapping, sample: Mapping | None = None) -> dict:
    """A row of a cluster table: size, sites, first/last seen, first/latest published and the weakest similarity
    from the cluster's terms bucket.

    The title, site and languages come from the ``sample`` top hit and
    ``langs`` terms of ``sample`` (a bucket of ``cluster_samples``), else of
    the bucket itself (``largest_clusters`` asks for its sample inline).
    """
    shown = bucket if sample is None else sample
    pages = read_versions(shown.get("sample", {}))
    page = pages[0].public() if pages else {}
    return {
        "cluster_id": bucket["key"],
        "size": bucket["doc_count"],
        "sites": bucket["sites"]["value"],
        "first_seen": _metric_time(bucket["first"]),
        "last_seen": _metric_time(bucket["last"]),
        "first_published": _metric_time(bucket.get("published", {})),
        "latest_published": _metric_time(bucket["newest"]) if bucket.get("newest", {}).get("value") else None,
        "weakest_similarity": review_queue.weakest_similarity(bucket),
        "title": page.get("title"),
        "site": page.get("site"),
        "langs": [b["key"] for b in shown.get("langs", {}).get("buckets", [])],
    }


def select_buckets(
    buckets: list[Mapping],
    *,
    max_size: int | None = None,
    first_seen: tuple[int | None, int | None] = (None, None),
    last_seen: tuple[int | None, int | None] = (None, None),
    matching: bool = False,
) -> list[Mapping]:
    """The cluster buckets within the size and first/last-seen bounds (epoch ms), order kept.

    With ``matching``, only buckets whose ``matching`` sub-aggregation counted a page.
    """

    def within(value, bounds: tuple[int | None, int | None]) -> bool:
        low, high = bounds
        if low is None and high is None:
            return True
        if value is None:
            return False
        return (low is None or value >= low) and (high is None or value <= high)

    return [
        b
        for b in buckets
        if (max_size is None or b["doc_count"] <= max_size)
        and within(b["first"].get("value"), first_seen)
        and within(b["last"].get("value"), last_seen)
        and (not matching or b["matching"]["doc_count"] > 0)
    ]


def _page_filter_scope(
    es: Elasticsearch, settings: Settings, params: ClusterListParams
) -> tuple[list[str] | None, list[dict] | None]:
    """The clusters the page filters pick, by id (``[]``: none), or the filters to match inside the aggregation.

    Selective filters list the few clusters they pick by id; broad ones count matching pages in every
    cluster instead (a terms query of thousands of ids costs more than that). ``(None, None)``: no filter.
    """
    if not params.has_page_filters:
        return None, None
    body = admin_queries.clusters_with_pages(
        site=params.site, lang=params.lang, q=params.q, max_clusters=MAX_CLUSTERS_BY_ID + 1
    )
    found = es.search(index=settings.index, **body)["aggregations"]["clusters"]
    cluster_ids = [b["key"] for b in found["buckets"]]
    if len(cluster_ids) > MAX_CLUSTERS_BY_ID or found.get("sum_other_doc_count"):
        return None, page_filters(site=params.site, lang=params.lang, q=params.q)
    return cluster_ids, None


def load_cluster_list(
    es: Elasticsearch,
    settings: Settings,
    params: ClusterListParams,
    *,
    page_size: int,
    max_clusters: int = admin_queries.MAX_LIST_CLUSTERS,
) -> ClusterList:
    """Run the cluster list: page filters first (when given), then the cluster aggregation, then sample titles.

    Page filters that pick at most ``MAX_CLUSTERS_BY_ID`` clusters restrict
    the aggregation to those ids (fast for a site or a rare word); broader
    ones are applied inside the aggregation (one pass over the index). The
    size and date bounds are applied to the returned buckets.

    Raises:
        ValueError: the text query is too long.
    """
    cluster_ids, matching = _page_filter_scope(es, settings, params)
    if cluster_ids == []:
        return ClusterList(params=params, page_size=page_size, total=0)
    corrections = review_queue.corrections_per_story(es, settings) if params.sort == "corrected" else None
    if corrections is not None:  # only the stories with corrections, ordered by how many
        cluster_ids = [c for c in (corrections if cluster_ids is None else cluster_ids) if c in corrections]
        if not cluster_ids:
            return ClusterList(params=params, page_size=page_size, total=0)
    body = admin_queries.cluster_list(
        cluster_ids=cluster_ids,
        matching=matching,
        min_size=params.min_size,
        sort=params.sort,
        order=params.order,
        max_clusters=max_clusters,
        single_shard=settings.shards == 1,
    )
    raw = es.search(index=settings.index, **body)["aggregations"]["clusters"]["buckets"]
    buckets = select_buckets(
        raw if corrections is None else review_queue.by_corrections(raw, corrections, params.order),
        max_size=params.max_size,
        first_seen=params.seen_bounds("first"),
        last_seen=params.seen_bounds("last"),
        matching=matching is not None,
    )
    start = (params.page - 1) * page_size
    shown = buckets[start : start + page_size]
    result = ClusterList(params=params, page_size=page_size, total=len(buckets), truncated=len(raw) >= max_clusters)
    samples: dict[str, Mapping] = {}
    if shown:
        res = es.search(index=settings.index, **admin_queries.cluster_samples([b["key"] for b in shown]))
        samples = {b["key"]: b for b in res["aggregations"]["clusters"]["buckets"]}
    result.rows = [cluster_row(bucket, samples.get(bucket["key"], {})) for bucket in shown]
    review_queue.add_queue_fields(es, settings, result.rows, corrections)
    return result
