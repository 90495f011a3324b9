"""One story: its versions oldest first, its reference, first publisher and timeline: query builders and readers.

:func:`story` builds one page of a story's versions (with its reference, the version an editor made
representative else the earliest, its first publisher and the counts); :func:`story_times` the times of its
versions, which :func:`timeline_bins` bins; :func:`read_story` reads both responses. Each version carries its
relation to the reference (``plugin.search.version_relations``). Times before 1990 or more than a day
ahead are not believed (``plugin.search.page_dates``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.document import CLUSTER_ID, fold_of, path
from newsfold.plugin.fold.lookups import MAX_WINDOW
from newsfold.plugin.fold.origin_order import BELIEVED_FIRST, sort_clauses
from newsfold.plugin.fold.provenance import read_origin, read_site_count, story_aggs
from newsfold.plugin.hits import ARTICLE_SOURCE, FOLD_SOURCE
from newsfold.plugin.search.page_dates import PLAUSIBLE_RANGE, epoch_millis, iso_millis, plausible_times
from newsfold.plugin.search.public_query import check_page
from newsfold.plugin.search.story_face import FACE_AGG, face_agg, read_face
from newsfold.plugin.search.version_relations import reference_sort, time_sort
from newsfold.plugin.sign.novelty import relation

#: versions one page of a story lists at most
MAX_VERSIONS_PAGE = 100
#: bars of a story's timeline at most
TIMELINE_BUCKETS = 40
#: versions a story's timeline shows at most (the first ones)
MAX_TIMELINE_VERSIONS = 1000
#: what a story's version shows (newsfold's own index)
STORY_SOURCE = [*ARTICLE_SOURCE, *(path(f) for f in FOLD_SOURCE)]


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
    check_page(page, size, MAX_WINDOW)
    if size > MAX_VERSIONS_PAGE:
        raise InputError(f"at most {MAX_VERSIONS_PAGE} versions a page, got {size}")
    believed = [*sort_clauses(BELIEVED_FIRST), *time_sort(time_field, "asc")]
    return {
        "query": {"term": {CLUSTER_ID: cluster_id}},
        "from": (page - 1) * size,
        "size": size,
        "sort": time_sort(time_field, "asc"),
        "_source": source,
        "track_total_hits": True,
        "aggs": {
            "reference": {"top_hits": {"size": 1, "sort": reference_sort(time_field), "_source": source}},
            FACE_AGG: face_agg(source, time_field=time_field),  # the page the story shows (plugin.search.story_face)
            # the earliest version with a believable date (one dated in the year 1 is no first publisher), by what
            # provenance believes of the times (a back-dated copy seen later is not first)
            "first": {
                "filter": {"range": {time_field: PLAUSIBLE_RANGE}},
                "aggs": {"hit": {"top_hits": {"size": 1, "sort": believed, "_source": source}}},
            },
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


def _chosen(reference: Mapping[str, Any] | None) -> bool:
    """Whether the story's origin is its reference because an editor made it representative."""
    fold = fold_of((reference or {}).get("_source"))
    return bool(reference and fold.get("representative") and fold.get("origin_id") == reference.get("_id"))


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
        when = epoch_millis((hit.get("_source") or {}).get(time_field))
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
        "sites": read_site_count(aggs.get("all_sites") or {}),  # publishers: subdomains are one site
        "first_time": iso_millis(span[0]),
        "latest_time": iso_millis(span[1]),
        "undated": total - int(aggs["dated"]["value"] or 0) + implausible,
        "implausible_dates": implausible,
        "reference": _version(reference, reference) if reference else None,
        "first": _version(first_hits[0], reference) if first_hits else None,
        "face": _version(face, reference) if (face := read_face(aggs)) else None,
        "versions": versions,
        "page": page,
        "page_size": size,
        "total_pages": max(1, -(-total // size)),
        "timeline": bins,
        "timeline_interval": interval,
        "origin": read_origin(aggs, versions=total, stored=fold_of(reference.get("_source")) if reference else None,
                              chosen=_chosen(reference)),
    }
