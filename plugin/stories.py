"""Top stories, one story's versions, and version relations: query builders and readers of their responses.

What folding makes possible once copies share a ``newsfold.cluster_id``:

- **top stories** (:func:`top_stories`): the stories of a time window ranked
  by coverage (distinct sites, from ``newsfold.site_key``) or by their latest
  version, ties going to the more recent story. Windows are counted back
  from the newest page in the index (:func:`newest`), so an archive from
  years ago works too;
- **a story** (:func:`story`): its versions oldest first, its reference (the
  version an editor made representative, else the earliest), its first
  publisher and a timeline;
- **relations** (:func:`add_relations`): what each version of a folded search
  holds of its story's reference and what it adds (``plugin.novelty``),
  for newsfold's own search and for a host's ``fold_query`` results alike.

The builders return dicts and never execute them; the readers take the
responses. The time of a page is one date field (``published`` in newsfold's
own index; a host names its own). Pages without a value have no place in a
window: they are listed under ``all`` only, after the dated ones.
"""

from __future__ import annotations

import copy
import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from newsfold.plugin.document import CLUSTER_ID, ORIGIN_FIELDS, fold_of, path
from newsfold.plugin.errors import InputError
from newsfold.plugin.novelty import relation
from newsfold.plugin.provenance import read_origin, story_aggs
from newsfold.plugin.queries import FOUNDER_FIRST, MAX_WINDOW

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

#: the windows of top stories, in milliseconds back from the newest page (None: every page)
WINDOWS: dict[str, int | None] = {"24h": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000, "all": None}
WINDOW_NAMES = {"24h": "Last 24 hours", "7d": "7 days", "30d": "30 days", "all": "All"}
SORTS = ("coverage", "latest")
#: stories a top-stories list reaches at most (page x size); deeper pages are refused
MAX_STORIES = 1000
#: versions one page of a story lists at most
MAX_VERSIONS_PAGE = 100
#: bars of a story's timeline at most
TIMELINE_BUCKETS = 40
#: versions a story's timeline shows at most (the first ones)
MAX_TIMELINE_VERSIONS = 1000
SITE_FIELD = path("site_key")
PASSAGES = path("passages")
REPRESENTATIVE = path("representative")
#: what a story's version shows (newsfold's own index)
STORY_SOURCE = ["title", "url", "site", "lang", "published", "ingested", "lede", "image", CLUSTER_ID, PASSAGES,
                REPRESENTATIVE, *(path(f) for f in ("wire", *ORIGIN_FIELDS))]


def _check_window(window: str) -> None:
    if window not in WINDOWS:
        raise InputError(f"window must be one of {', '.join(WINDOWS)}, got {str(window)[:40]!r}")


def _check_page(page: int, size: int, limit: int) -> None:
    if size < 1 or page < 1 or page * size > limit:
        raise InputError(f"page {page} of {size} is out of range (at most {limit:,} results)")


#: publication times believed: from this day on, and up to a day after now (others count as undated)
EARLIEST_PLAUSIBLE = dt.datetime(1990, 1, 1, tzinfo=dt.UTC)
FUTURE_SLACK = dt.timedelta(days=1)
#: the same as a range query
_PLAUSIBLE = {"gte": EARLIEST_PLAUSIBLE.date().isoformat(), "lte": "now+1d"}


def newest(*, time_field: str = "published", filters: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Search body: the page with the newest ``time_field`` (the windows count back from it).

    A sorted search of one hit: on the stand-in ten times cheaper than a ``max`` aggregation. Only a
    plausible time counts (:func:`plausible_times`): one page dated in the year 9999 must not empty every window.
    """
    return {
        "size": 1,
        "query": {"bool": {"filter": [*filters, {"range": {time_field: _PLAUSIBLE}}]}},
        "sort": [{time_field: {"order": "desc"}}],
        "_source": [time_field],
    }


def read_newest(response: Mapping[str, Any], time_field: str = "published") -> int | None:
    """The newest time of a :func:`newest` response, epoch milliseconds (None: no page has one)."""
    hits = response.get("hits", {}).get("hits", [])
    return _epoch_millis((hits[0].get("_source") or {}).get(time_field)) if hits else None


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


def _reference_sort(time_field: str) -> list[dict[str, Any]]:
    """A story's reference first: the representative an editor picked, then the earliest version."""
    return [
        {REPRESENTATIVE: {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}},
        *_time_sort(time_field, "asc"),
    ]


def _time_sort(time_field: str, order: str) -> list[dict[str, Any]]:
    tiebreak = [] if time_field == "ingested" else [{"ingested": {"order": order, "unmapped_type": "date"}}]
    return [{time_field: {"order": order, "missing": "_last"}}, *tiebreak, FOUNDER_FIRST,
            {path("url_key"): {"order": "asc", "unmapped_type": "keyword"}}]  # fmt: skip


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
    request (:func:`references`). On one shard the order is exact; across
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
    _check_page(page, size, MAX_STORIES)
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
                    "coverage": {"cardinality": {"field": SITE_FIELD}},
                    "newest": {"max": {"field": time_field}},
                },
            },
        },
    }


def iso_millis(value: float | None) -> str | None:
    """An epoch-millisecond aggregation value as an ISO 8601 UTC time (None outside the years 1 to 9999)."""
    if value is None:
        return None
    try:
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC).isoformat().replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError):
        return None


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
    :func:`references` response of the page's cluster ids (None without it).
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


def story(
    cluster_id: str,
    *,
    page: int = 1,
    size: int = 20,
    time_field: str = "published",
    source: Sequence[str] | bool = tuple(STORY_SOURCE),
) -> dict[str, Any]:
    """Search body: one page of a story's versions (oldest first) with its reference, first publisher and timeline.

    One search: the versions are the hits (from/size); aggregations give the
    reference (representative, else earliest), the first publisher (the
    earliest version), the number of sites and the first and last times. The
    timeline reads the times of the versions (:func:`story_times`, in the same
    ``msearch``) and bins them here (:func:`timeline_bins`).

    Raises:
        ValueError: an empty cluster id or a page beyond the first 10,000 versions (``MAX_WINDOW``).
    """
    if not cluster_id:
        raise InputError("the story id is empty")
    _check_page(page, size, MAX_WINDOW)
    if size > MAX_VERSIONS_PAGE:
        raise InputError(f"at most {MAX_VERSIONS_PAGE} versions a page, got {size}")
    return {
        "query": {"term": {CLUSTER_ID: cluster_id}},
        "from": (page - 1) * size,
        "size": size,
        "sort": _time_sort(time_field, "asc"),
        "_source": source,
        "track_total_hits": True,
        "aggs": {
            "reference": {"top_hits": {"size": 1, "sort": _reference_sort(time_field), "_source": source}},
            # the earliest version with a believable date (one dated in the year 1 is no first publisher)
            "first": {
                "filter": {"range": {time_field: _PLAUSIBLE}},
                "aggs": {"hit": {"top_hits": {"size": 1, "sort": _time_sort(time_field, "asc"), "_source": source}}},
            },
            "sites": {"cardinality": {"field": SITE_FIELD}},
            "start": {"min": {"field": time_field}},
            "end": {"max": {"field": time_field}},
            "dated": {"value_count": {"field": time_field}},
            **story_aggs(time_field=time_field),
        },
    }


def story_times(cluster_id: str, *, time_field: str = "published", size: int = MAX_TIMELINE_VERSIONS) -> dict[str, Any]:
    """Search body: the times of a story's first ``size`` dated versions, oldest first (for its timeline)."""
    return {
        "query": {"bool": {"filter": [{"term": {CLUSTER_ID: cluster_id}}, {"exists": {"field": time_field}}]}},
        "size": size,
        "sort": [{time_field: "asc"}],
        "_source": [time_field],
    }


#: timeline intervals, shortest first, in milliseconds
TIMELINE_INTERVALS = (
    ("1h", 3_600_000),
    ("6h", 21_600_000),
    ("12h", 43_200_000),
    ("1d", 86_400_000),
    ("7d", 604_800_000),
    ("30d", 2_592_000_000),
    ("365d", 31_536_000_000),
)



def plausible_times(times_ms: Sequence[int], *, now: dt.datetime | None = None) -> list[int]:
    """The times (epoch ms) a timeline shows: none before 1990 nor more than a day in the future."""
    now = now or dt.datetime.now(dt.UTC)
    low = int(EARLIEST_PLAUSIBLE.timestamp() * 1000)
    high = int((now + FUTURE_SLACK).timestamp() * 1000)
    return [t for t in times_ms if low <= t <= high]


def timeline_bins(
    times_ms: Sequence[int], *, max_bins: int = TIMELINE_BUCKETS
) -> tuple[str | None, list[dict[str, Any]]]:
    """Versions per interval: the shortest interval of :data:`TIMELINE_INTERVALS` giving at most ``max_bins`` bins,
    or, for times further apart, whole years widened until they do (never more than ``max_bins`` bins).

    Returns:
        ``(interval name, [{"start": ISO time, "count": n}, ...])``, contiguous and oldest first
        (empty bins kept); ``(None, [])`` for no time.
    """
    if not times_ms:
        return None, []
    start, end = min(times_ms), max(times_ms)
    found = next(((n, ms) for n, ms in TIMELINE_INTERVALS if (end - start) // ms + 1 <= max_bins), None)
    if found is None:
        year = TIMELINE_INTERVALS[-1][1]
        years = -(-(end - start) // (year * max(1, max_bins - 1)))  # one spare bin: the first starts on a boundary
        found = (f"{years * 365}d", years * year)
    name, length = found
    first = start - start % length
    counts = [0] * int((end - first) // length + 1)
    for t in times_ms:
        counts[int((t - first) // length)] += 1
    return name, [{"start": iso_millis(first + k * length), "count": c} for k, c in enumerate(counts)]


def _version(hit: Mapping[str, Any], reference: Mapping[str, Any] | None) -> dict[str, Any]:
    """A hit as a version: id, ``_source`` fields (fold fields lifted out) and its relation to the reference."""
    src = dict(hit.get("_source") or {})
    fold = fold_of(src)
    src.pop("newsfold", None)
    same = reference is not None and hit.get("_id") == reference.get("_id")
    found = relation(fold_of(reference.get("_source")).get("passages") if reference else None,
                     fold.get("passages"), same=same)  # fmt: skip
    return {
        "id": hit.get("_id"),
        **src,
        "representative": bool(fold.get("representative")),
        "wire": fold.get("wire"),
        "relation": found.as_json() if found else None,
    }


def read_story(
    response: Mapping[str, Any],
    times: Mapping[str, Any] | None = None,
    *,
    page: int = 1,
    size: int = 20,
    time_field: str = "published",
    now: dt.datetime | None = None,
) -> dict[str, Any] | None:
    """A :func:`story` response (and its :func:`story_times` one) as ``{cluster_id, pages, sites, reference, ...}``.

    Dates before 1990 or more than a day after ``now`` (default: the clock) are
    not believed: the timeline leaves them out and counts them as undated
    (``implausible_dates`` says how many).

    Returns:
        None when no page has the cluster id.
    """
    hits = response.get("hits", {})
    total = int(hits.get("total", {}).get("value", 0))
    aggs = response.get("aggregations") or {}
    if not total:
        return None
    ref_hits = aggs["reference"]["hits"]["hits"]
    first_hits = aggs["first"]["hit"]["hits"]["hits"]
    reference = ref_hits[0] if ref_hits else None
    versions = [_version(h, reference) for h in hits.get("hits", [])]
    stamps = []
    for hit in (times or {}).get("hits", {}).get("hits", []):
        when = _epoch_millis((hit.get("_source") or {}).get(time_field))
        if when is not None:
            stamps.append(when)
    believed = plausible_times(stamps, now=now)
    interval, bins = timeline_bins(believed)
    implausible = len(stamps) - len(believed)
    span = [aggs["start"].get("value"), aggs["end"].get("value")]
    if implausible:  # the story's first and latest times from the believed ones only
        span = [min(believed), max(believed)] if believed else [None, None]
    return {
        "cluster_id": (fold_of(reference.get("_source")).get("cluster_id") if reference else None),
        "pages": total,
        "sites": int(aggs["sites"]["value"] or 0),
        "first_time": iso_millis(span[0]),
        "latest_time": iso_millis(span[1]),
        "undated": total - int(aggs["dated"]["value"] or 0) + implausible,
        "implausible_dates": implausible,
        "reference": _version(reference, reference) if reference else None,
        "first": _version(first_hits[0], reference) if first_hits else None,
        "versions": versions,
        "page": page,
        "page_size": size,
        "total_pages": max(1, -(-total // size)),
        "timeline": bins,
        "timeline_interval": interval,
        "origin": read_origin(aggs, versions=total, stored=fold_of(reference.get("_source")) if reference else None),
    }


def utc_time(value: object) -> dt.datetime | None:
    """An ISO 8601 time or date (or a datetime) as an aware UTC time (no zone: UTC); None when unreadable."""
    when = value
    if isinstance(value, str):
        try:
            when = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if not isinstance(when, dt.datetime):
        return None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)


def _epoch_millis(value: object) -> int | None:
    """An ISO 8601 time or date (UTC when no zone) as epoch milliseconds; None when unreadable."""
    when = utc_time(value)
    return int(when.timestamp() * 1000) if when is not None else None


def references(
    cluster_ids: Sequence[str], *, time_field: str = "published", source: Sequence[str] = (PASSAGES,)
) -> dict[str, Any]:
    """Search body: the reference of each of some stories (one hit per story, collapsed on the cluster id).

    Args:
        cluster_ids: the stories.
        time_field: the date field of a page.
        source: the fields to return (the cluster id is always among them).

    Raises:
        ValueError: no cluster id.
    """
    ids = [c for c in dict.fromkeys(cluster_ids) if c]
    if not ids:
        raise InputError("no story to look up")
    return {
        "query": {"terms": {CLUSTER_ID: ids}},
        "size": len(ids),
        "collapse": {"field": CLUSTER_ID},
        "sort": _reference_sort(time_field),
        "_source": list(dict.fromkeys([*source, CLUSTER_ID])),
    }


def with_references(body: dict[str, Any], *, agg: str, time_field: str = "published") -> dict[str, Any]:
    """A copy of a search body whose ``terms`` aggregation on the cluster id also returns each story's reference.

    For a body that lists stories already (newsfold's ``versions_of``): the
    references come in the same request, read by :func:`read_references` with the same ``agg``.
    """
    out = copy.deepcopy(body)
    sub = out["aggs"][agg].setdefault("aggs", {})
    sub["reference"] = {"top_hits": {"size": 1, "sort": _reference_sort(time_field), "_source": [PASSAGES]}}
    return out


def read_references(response: Mapping[str, Any], *, agg: str | None = None) -> dict[str, dict[str, Any]]:
    """``cluster id -> reference hit`` (``_id``, ``_source``) of a :func:`references` response, or of the
    aggregation ``agg`` of a body made by :func:`with_references`."""
    out: dict[str, dict[str, Any]] = {}
    if agg is None:
        for hit in response.get("hits", {}).get("hits", []):
            cluster = fold_of(hit.get("_source")).get("cluster_id")
            if cluster:
                out.setdefault(cluster, hit)
        return out
    for bucket in ((response.get("aggregations") or {}).get(agg) or {}).get("buckets", []):
        hits = bucket["reference"]["hits"]["hits"]
        if hits:
            out[bucket["key"]] = hits[0]
    return out


def relation_of(hit: Mapping[str, Any], references: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The relation (``Relation.as_json``) of one hit to its story's reference, or None when unknown."""
    src = hit.get("_source") or {}
    fold = fold_of(src)
    reference = references.get(fold.get("cluster_id") or "")
    if reference is None:
        return None
    found = relation(fold_of(reference.get("_source")).get("passages"), fold.get("passages"),
                     same=hit.get("_id") == reference.get("_id"))  # fmt: skip
    return found.as_json() if found else None


def add_relations(
    client: Elasticsearch, response: dict[str, Any], *, index: str, time_field: str = "published"
) -> dict[str, Any]:
    """Give every hit and inner version of a folded search its relation to its story's reference.

    For a host's ``fold_query`` / ``fold_search`` response: one more search
    finds each story's reference; each hit and each ``newsfold_versions``
    inner hit gets ``newsfold_relation`` (see ``plugin.novelty``; None when
    unknown). The host's ``_source`` must include ``newsfold.passages`` and
    ``newsfold.cluster_id`` (or not be filtered).

    Returns:
        The same response, changed in place.
    """
    hits = response.get("hits", {}).get("hits", [])
    cluster_ids = [fold_of(h.get("_source")).get("cluster_id") for h in hits]
    if not any(cluster_ids):
        return response
    found = client.search(index=index, body=references([c for c in cluster_ids if c], time_field=time_field))
    refs = read_references(found.body)
    for hit in hits:
        hit["newsfold_relation"] = relation_of(hit, refs)
        inner = (hit.get("inner_hits") or {}).get("newsfold_versions", {}).get("hits", {}).get("hits", [])
        for version in inner:
            version["newsfold_relation"] = relation_of(version, refs)
    return response
