"""The editor's queue on top of the cluster list: each story's weakest pair, its corrections and the filter values.

``/admin/clusters?sort=weakest`` (and ``/api/clusters?sort=weakest``) list stories from the weakest pair up: the
order is a ``min`` sub-aggregation of ``newsfold.similarity`` (each page's similarity to the page it joined) in
the cluster list's ``terms`` aggregation (``plugin.admin.admin_queries``), so no page is read to sort. This module
adds, for the one page of rows shown, which pair that similarity belongs to; counts corrections per story for
``sort=corrected``; and lists the sites and languages the filters offer. docs/admin.md describes the queue.
"""

from __future__ import annotations

from collections.abc import Mapping

from elasticsearch import Elasticsearch, NotFoundError

from newsfold.plugin.admin import admin_queries
from newsfold.plugin.fold.document import CLUSTER_ID
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.search.hits import Version, read_versions
from newsfold.plugin.settings import Settings

#: values offered by the site and language filters, most pages first
MAX_FILTER_SITES = 500
MAX_FILTER_LANGS = 100


def weakest_similarity(bucket: Mapping) -> float | None:
    """A cluster bucket's weakest similarity; None when no page of it joined by a similarity."""
    value = bucket.get("weakest", {}).get("value")
    if value is None or value >= admin_queries.NO_PAIR:
        return None
    return round(float(value), 4)


def _clusters_of(es: Elasticsearch, settings: Settings, page_ids: list[str]) -> dict[str, str]:
    """The cluster each of these pages is in now (pages no longer indexed are left out)."""
    if not page_ids:
        return {}
    res = es.search(
        index=settings.index, query={"ids": {"values": page_ids}}, size=len(page_ids), source_includes=[CLUSTER_ID]
    )
    return {v.id: v.cluster_id for v in read_versions(res.body) if v.cluster_id}


def add_queue_fields(
    es: Elasticsearch, settings: Settings, rows: list[dict], corrections: Mapping[str, int] | None
) -> None:
    """Set each row's ``weakest_pair`` and ``corrections`` (None unless counted), in place.

    ``weakest_pair`` is ``{"page_id", "matched_id"}`` of the row's weakest similarity: ``matched_id`` is None
    when the page it joined is no longer in the story (an editor split it out since); a row without a
    similarity gets None.
    """
    for row in rows:
        row["weakest_pair"] = None
        row["corrections"] = corrections.get(row["cluster_id"], 0) if corrections is not None else None
    wanted = [r["cluster_id"] for r in rows if r.get("weakest_similarity") is not None]
    if not wanted:
        return
    res = es.search(index=settings.index, **admin_queries.weakest_pairs(wanted))
    pairs: dict[str, tuple[str, str | None]] = {}
    for bucket in res["aggregations"]["clusters"]["buckets"]:
        hits = bucket["weakest"]["hits"]["hits"]
        if hits:
            weakest = Version.from_hit(hits[0])
            pairs[bucket["key"]] = (weakest.id, weakest.stored.get("matched_id"))
    where = _clusters_of(es, settings, sorted({m for _, m in pairs.values() if m}))
    for row in rows:
        found = pairs.get(row["cluster_id"])
        if found:
            page_id, matched = found
            in_story = matched if matched and where.get(matched) == row["cluster_id"] else None
            row["weakest_pair"] = {"page_id": page_id, "matched_id": in_story}


def corrections_per_story(
    es: Elasticsearch, settings: Settings, *, limit: int = admin_queries.MAX_LIST_CLUSTERS
) -> dict[str, int]:
    """How many of the latest ``limit`` corrections named a page of each story, by the story's cluster id now."""
    try:
        res = es.search(index=corrections_index(settings), **admin_queries.corrections_named_pages(size=limit))
    except NotFoundError:
        return {}
    named = [list(dict.fromkeys(h.get("_source", {}).get("pages") or [])) for h in res["hits"]["hits"]]
    where = _clusters_of(es, settings, sorted({p for pages in named for p in pages})[:limit])
    counts: dict[str, int] = {}
    for pages in named:
        for cluster_id in {where[p] for p in pages if p in where}:
            counts[cluster_id] = counts.get(cluster_id, 0) + 1
    return counts


def by_corrections(buckets: list[Mapping], counts: Mapping[str, int], order: str) -> list[Mapping]:
    """Cluster buckets ordered by their number of corrections (ties by cluster id)."""
    sign = -1 if order == "desc" else 1
    return sorted(buckets, key=lambda b: (sign * counts.get(b["key"], 0), b["key"]))


def filter_values(es: Elasticsearch, settings: Settings) -> dict[str, list[tuple[str, int]]]:
    """The sites and languages of the index with their page counts, for the filters' lists (by name; the ones
    with the most pages when there are more than the lists hold)."""
    res = es.search(
        index=settings.index,
        size=0,
        aggs={
            "sites": {"terms": {"field": "site", "size": MAX_FILTER_SITES}},
            "langs": {"terms": {"field": "lang", "size": MAX_FILTER_LANGS}},
        },
    )
    aggs = res.get("aggregations", {})
    return {
        name: sorted((b["key"], b["doc_count"]) for b in aggs.get(name, {}).get("buckets", []))
        for name in ("sites", "langs")
    }
