"""Query builders of ingest and corrections: band lookups, a story's pages, names in use, the corrections log.

They return search bodies and never execute them. Read by ingest (``plugin.fold.batch``,
``plugin.fold.founding``, ``plugin.fold.regroup``, ``plugin.fold.store``) and by corrections
(``plugin.fold.constraints``, ``plugin.edit.corrections``, ``plugin.edit.correction_log``). The public
search's builders are in ``plugin.search.queries``.
"""

from __future__ import annotations

from typing import Any

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.document import CLUSTER_ID, LOOKUP_SOURCE, VERSION_SOURCE, path

#: the field the band lookup asks: the terms of the stored signature's band tokens (fold layout 8)
BAND_KEYS = path("bands") + ".terms"
#: the band keys of pages stored at fold layout 7 or before (asked while an index searched may hold some)
LEGACY_BAND_KEYS = path("band_keys")

#: what every search the fold decides on carries: an answer from every shard, or an error. Elasticsearch otherwise
#: answers a search some of whose shards failed (not started, on a node just lost, over a circuit breaker, refusing
#: the query) with 200 and the hits of the other shards (``_shards.failed``): a band lookup would miss the copies on
#: the failed shard and split a story, a relabel would stop with pages left in the losing cluster, a name check would
#: miss a name in use. The error instead is a 503 the workers retry (429 for a rejection), or a 400 for a query a
#: shard refused. A reader's search (``plugin.search``) keeps Elasticsearch's default: fewer hits, not an error page.
WHOLE: dict[str, Any] = {"allow_partial_search_results": False}

#: from + size of a search at most (Elasticsearch's index.max_result_window default): pages beyond it are refused
MAX_WINDOW = 10_000


#: the band lookup's query shapes: ``terms_set`` (one query over all keys; Elasticsearch 8.10 and later) and
#: ``bool`` (one ``constant_score`` term clause per key, for a server that refuses the first)
BAND_SHAPES = ("terms_set", "bool")


def band_lookup(
    keys: list[str],
    *,
    size: int = 50,
    exclude_ids: list[str] | None = None,
    min_bands: int = 1,
    exclude_cluster: str | None = None,
    shape: str = "terms_set",
    legacy_keys: list[str] | None = None,
) -> dict[str, Any]:
    """Search body finding indexed pages sharing at least ``min_bands`` band keys.

    A hit's score is the number of bands it shares (the band keys are mapped
    with the ``boolean`` similarity: a matching key scores 1), so the most
    similar candidates come first. ``terms_set`` with a constant
    ``minimum_should_match`` finds the same pages as a ``bool`` of one
    ``constant_score`` term clause per key, for 15-17% less node CPU
    (docs/scaling.md, "The lookup's query shape"). ``exclude_cluster`` leaves
    out the pages of one cluster (the reconcile step only looks for other
    clusters). ``legacy_keys`` (``plugin.sign.signature.band_keys``) also find pages stored at fold layout 7
    or before, whose keys are in another field and form: a page holds one field or the other, so its score
    is still its number of shared bands.
    """
    if shape not in BAND_SHAPES:
        raise InputError(f"shape must be one of {BAND_SHAPES}, got {shape!r}")
    match = _shared_keys(BAND_KEYS, keys, min_bands, shape)
    if legacy_keys:
        match = {"bool": {"should": [match, _shared_keys(LEGACY_BAND_KEYS, legacy_keys, min_bands, shape)]}}
    must_not: list[dict[str, Any]] = []
    if exclude_ids:
        must_not.append({"ids": {"values": list(exclude_ids)}})
    if exclude_cluster:
        must_not.append({"term": {CLUSTER_ID: exclude_cluster}})
    query = {"bool": {"must": [match], "must_not": must_not}} if must_not else match
    return {"query": query, "size": size, "_source": LOOKUP_SOURCE}


def _shared_keys(field: str, keys: list[str], min_bands: int, shape: str) -> dict[str, Any]:
    """The query matching pages with at least ``min_bands`` of ``keys`` in ``field``, scoring one per key."""
    if shape == "terms_set":
        return {"terms_set": {field: {"terms": list(keys), "minimum_should_match": min_bands}}}
    clauses = [{"constant_score": {"filter": {"term": {field: k}}}} for k in keys]
    return {"bool": {"should": clauses, "minimum_should_match": min_bands}}


#: a sort clause that puts the page that founded its story (matched to no copy) before the copies, on a tie
FOUNDER_FIRST = {"newsfold.matched_id": {"order": "asc", "missing": "_first", "unmapped_type": "keyword"}}
#: an editor's representative first in a story's versions (missing counts as not chosen)
REPRESENTATIVE_FIRST = {"newsfold.representative": {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}}
#: the last tie-break of version lists: the normalised URL
URL_ORDER = {"newsfold.url_key": {"order": "asc", "unmapped_type": "keyword"}}


def cluster_members(cluster_id: str, *, size: int = 1000, search_after: list[Any] | None = None) -> dict[str, Any]:
    """Search body listing a cluster's pages (oldest first, paged by ``search_after``)."""
    body: dict[str, Any] = {
        "query": {"term": {CLUSTER_ID: cluster_id}},
        "size": size,
        "sort": [{"ingested": "asc"}, FOUNDER_FIRST, {"newsfold.url_key": "asc"}],
        "_source": VERSION_SOURCE + ["newsfold.similarity", "newsfold.matched_id"],
        "track_total_hits": True,
    }
    if search_after:
        body["search_after"] = search_after
    return body


def cluster_ids_only(cluster_id: str, *, size: int = 1000) -> dict[str, Any]:
    """Search body returning only the ids of a cluster's pages (for relabelling)."""
    return {"query": {"term": {CLUSTER_ID: cluster_id}}, "size": size, "_source": False}


def names_in_use(names: list[str], *, exclude_ids: list[str]) -> dict[str, Any]:
    """Search body: which of ``names`` some page (other than ``exclude_ids``) carries as its cluster id."""
    query: dict[str, Any] = {"bool": {"filter": [{"terms": {CLUSTER_ID: list(names)}}]}}
    if exclude_ids:
        query["bool"]["must_not"] = [{"ids": {"values": list(exclude_ids)}}]
    return {"query": query, "size": 0, "aggs": {"names": {"terms": {"field": CLUSTER_ID, "size": len(names)}}}}


def cluster_pages(cluster_ids: list[str], *, size: int = 10_000, source: list[str] | bool = False) -> dict[str, Any]:
    """Search body: the pages of some clusters (ids, and ``source`` fields when asked)."""
    return {"query": {"terms": {CLUSTER_ID: list(cluster_ids)}}, "size": size, "_source": source}


# ------------------------------------------------------------------ corrections (plugin.edit.corrections)
DECISION_SOURCE = [
    "id",
    "kind",
    "at",
    "pages",
    "must_link",
    "cannot_link",
    "released",
    "not_representative",
    "representative",
]


def corrections_touching(page_ids: list[str], *, size: int = 10_000) -> dict[str, Any]:
    """Search body: the corrections that say something about any of ``page_ids`` (their decisions only)."""
    return {"query": {"terms": {"touches": list(page_ids)}}, "size": size, "_source": DECISION_SOURCE}


def corrections_since(since: str | None, *, size: int = 1000, search_after: list[Any] | None = None) -> dict[str, Any]:
    """Search body: the pages touched by corrections made at or after ``since`` (all when None), oldest first."""
    body: dict[str, Any] = {
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
) -> dict[str, Any]:
    """Search body: the corrections log, newest first, optionally of one cluster and/or one page."""
    filters: list[dict[str, Any]] = []
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


# ------------------------------------------------------------------ folding a search (newsfold's own and a host's)
