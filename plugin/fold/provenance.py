"""Where a story came from: its origin, kept on every page of the story, and the evidence for it.

Each version records the agency it credits (``newsfold.wire``, read at
extraction: ``plugin.extract.credits``). A story's **origin** is

1. the wire most of its crediting versions name, when any version credits one
   (the origin version is the earliest of those crediting it); else
2. the earliest version (by the time field, then ingest time, then URL key):
   its site is the story's origin site.

:func:`refresh_origins` writes the origin onto every page of the stories a
batch touched (``newsfold.origin_wire``, ``origin_site``, ``origin_id``), so
filters such as "this site's own stories" (:func:`originals_filter`) and "no
wire stories" (:func:`no_wire_filter`) are plain term filters that page like
any other search. A batch writes its pages with their story's origin already
(:func:`story_origin` for a story it founds, the stored origin of the story a
page joins), so a page is written once; only pages whose stored origin then
differs from the story's are rewritten: a story whose origin changes costs one
update per page. One or two searches and at most one bulk request per batch.

The evidence shown with an origin ("credited by 31 of 40 versions",
"earliest by 2 h") comes from aggregations of the story's own request
(:func:`story_aggs`, read by :func:`read_origin`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from newsfold.plugin.fold.by_id import search_whole
from newsfold.plugin.fold.document import CLUSTER_ID, FOLD, fold_of, path
from newsfold.plugin.fold.origin_order import (
    MAX_WIRES,
    WIRE_RANK,
    earliest_first,
    sort_clauses,
    sort_key,
    source_value,
    terms_order,
)
from newsfold.plugin.fold.origin_rule import VISIBLE_SOURCES, Version, Wire, decide, support

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from newsfold.plugin.settings import Settings

WIRE = path("wire")
WIRE_BY = path("wire_by")
ORIGIN_WIRE = path("origin_wire")
ORIGIN_SITE = path("origin_site")
ORIGIN_ID = path("origin_id")
SITE_KEY = path("site_key")
#: a page's publisher (registrable domain): what coverage and provenance count
DOMAIN = path("domain")
BELIEVED_TIME = path("believed_time")
ARCHIVE_AGED = path("archive_aged")
REPRESENTATIVE = path("representative")
#: stories handled per request
MAX_STORIES = 1000
MAX_PAGES = 10_000


def _time_sort(time_field: str) -> list[dict[str, Any]]:
    """Versions earliest first, as provenance believes (``plugin.fold.origin_order.earliest_first``)."""
    return sort_clauses(earliest_first(time_field))


def site_count() -> dict[str, Any]:
    """Aggregations counting the sites (publishers) of some pages: registrable domains, and the hosts of pages
    written before the domain was stored (read by :func:`read_site_count`)."""
    return {"domains": {"cardinality": {"field": DOMAIN}},
            "legacy": {"filter": {"bool": {"must_not": [{"exists": {"field": DOMAIN}}]}},
                       "aggs": {"hosts": {"cardinality": {"field": SITE_KEY}}}}}  # fmt: skip


def read_site_count(aggs: Mapping[str, Any]) -> int:
    """The sites counted by the :func:`site_count` aggregations of a bucket."""
    legacy = aggs.get("legacy") or {}
    hosts = int((legacy.get("hosts") or {}).get("value") or 0) if legacy.get("doc_count") else 0
    return int((aggs.get("domains") or {}).get("value") or 0) + hosts


def _visible() -> dict[str, Any]:
    """Filter: pages whose credit a reader sees (or whose credit's place was not stored)."""
    return {"bool": {"should": [{"terms": {WIRE_BY: list(VISIBLE_SOURCES)}},
                                {"bool": {"must_not": [{"exists": {"field": WIRE_BY}}]}}]}}  # fmt: skip


def wire_aggs(*, top: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Aggregation: the wires a story's versions credit, each with its sites, visible sites (and earliest page)."""
    sub: dict[str, Any] = {**site_count(), "visible": {"filter": _visible(), "aggs": site_count()}}
    if top is not None:
        sub["first"] = {"top_hits": dict(top)}
    return {"terms": {"field": WIRE, "size": MAX_WIRES, "order": terms_order(WIRE_RANK)}, "aggs": sub}


def read_wires(bucket: Mapping[str, Any]) -> list[Wire]:
    """The wires of a :func:`wire_aggs` aggregation, with the support of their sites."""
    out = []
    for w in (bucket.get("wires") or {}).get("buckets", []):
        first = _version(next(iter((w.get("first") or {}).get("hits", {}).get("hits", [])), None))
        out.append(Wire(str(w["key"]), support(read_site_count(w), read_site_count(w.get("visible") or {})), first))
    return out


def origins_body(cluster_ids: Sequence[str], *, time_field: str = "published") -> dict[str, Any]:
    """Search body: per story, what :func:`~newsfold.plugin.fold.origin_rule.decide` weighs (its editor's choice,
    its earliest version and its wires, in the orders of ``plugin.fold.origin_order``)."""
    ids = [c for c in dict.fromkeys(cluster_ids) if c]
    top = {"size": 1, "sort": _time_sort(time_field), "_source": [SITE_KEY, WIRE]}
    return {
        "size": 0,
        "query": {"terms": {CLUSTER_ID: ids}},
        "aggs": {"stories": {"terms": {"field": CLUSTER_ID, "size": max(1, len(ids))}, "aggs": {
            "earliest": {"top_hits": top},
            "chosen": {"filter": {"term": {REPRESENTATIVE: True}}, "aggs": {"earliest": {"top_hits": top}}},
            "wires": wire_aggs(top=top),
            # what the story's pages hold now: the most common stored origin, and how many hold none
            "stored": {"terms": {"field": ORIGIN_ID, "size": 2}},
            "stored_wires": {"terms": {"field": ORIGIN_WIRE, "size": 2}},
            "unset": {"filter": {"bool": {"must_not": [{"exists": {"field": ORIGIN_ID}}]}}},
        }}},
    }  # fmt: skip


def _read(response: Mapping[str, Any]) -> dict[str, tuple[dict[str, Any], tuple[int, int, bool]]]:
    """Each story's origin, and ``(pages, pages without an origin, whether every other page holds this one)``."""
    out: dict[str, tuple[dict[str, Any], tuple[int, int, bool]]] = {}
    for bucket in ((response.get("aggregations") or {}).get("stories") or {}).get("buckets", []):
        origin = _origin(bucket)
        if origin is None:
            continue
        pages = int(bucket["doc_count"])
        unset = int(bucket.get("unset", {}).get("doc_count", pages))
        stored = bucket.get("stored", {}).get("buckets", [])
        wires = bucket.get("stored_wires", {}).get("buckets", [])
        held = pages - unset
        agree = (not held or (len(stored) == 1 and stored[0]["key"] == origin["origin_id"]
                 and int(stored[0]["doc_count"]) == held
                 and (([w["key"] for w in wires] == [origin["origin_wire"]] and int(wires[0]["doc_count"]) == held)
                      if origin["origin_wire"] else not wires)))  # fmt: skip
        out[bucket["key"]] = (origin, (pages, unset, agree))
    return out


def _version(hit: Mapping[str, Any] | None) -> Version | None:
    return _version_of((str(hit["_id"]), hit.get("_source") or {})) if hit else None


def _first(bucket: Mapping[str, Any] | None) -> Version | None:
    hits = ((bucket or {}).get("earliest") or {}).get("hits", {}).get("hits", [])
    return _version(hits[0]) if hits else None


def _origin(bucket: Mapping[str, Any]) -> dict[str, Any] | None:
    """A story's origin from its bucket (``plugin.fold.origin_rule``): an editor's choice, a wire independent
    sites agree on, else the earliest version and its own credit."""
    return decide(chosen=_first(bucket.get("chosen")), earliest=_first(bucket), wires=read_wires(bucket))


def story_origin(versions: Sequence[tuple[str, Mapping[str, Any]]], *, time_field: str = "published"
                 ) -> dict[str, Any] | None:  # fmt: skip
    """The origin of a story whose every version is given (``(id, _source)``, as about to be written): what
    :func:`origins_body` aggregates from the index, computed in memory, so a batch writes the pages of a story it
    founds with their origin at once. Ties the index would break by its own order may come out otherwise;
    :func:`refresh_origins`, which runs after the write, then corrects the pages."""
    earliest = earliest_first(time_field)
    ordered = sorted(versions, key=lambda v: sort_key(earliest, source_value(v[1])))
    if not ordered:
        return None
    chosen = next((_version_of(v) for v in ordered if fold_of(v[1]).get("representative")), None)
    credits: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for v in ordered:
        if wire := fold_of(v[1]).get("wire"):
            credits.setdefault(wire, []).append(v)
    ranked = sorted(credits.items(), key=lambda kv: _wire_rank(*kv))[:MAX_WIRES]
    wires = [Wire(name, support(_sites(vs)[0], _sites([v for v in vs if _shown(v[1])])[0]), _version_of(vs[0]))
             for name, vs in ranked]  # fmt: skip
    return decide(chosen=chosen, earliest=_version_of(ordered[0]), wires=wires)


def _version_of(version: tuple[str, Mapping[str, Any]]) -> Version:
    fold = fold_of(version[1])
    return Version(version[0], fold.get("site_key"), fold.get("wire"))


def _wire_rank(wire: str, versions: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[Any, ...]:
    """The sort key of a wire by :data:`~newsfold.plugin.fold.origin_order.WIRE_RANK`, as :func:`wire_aggs` ranks it."""
    values = {"domains": _sites(versions)[1], "_count": len(versions), "_key": wire}
    return sort_key(WIRE_RANK, values.__getitem__)


def _sites(versions: Sequence[tuple[str, Mapping[str, Any]]]) -> tuple[int, int]:
    """``(sites, registrable domains)`` of some versions, as :func:`site_count` counts them."""
    folds = [fold_of(s) for _, s in versions]
    domains = {f["domain"] for f in folds if f.get("domain")}
    legacy = {f["site_key"] for f in folds if not f.get("domain") and f.get("site_key")}
    return len(domains) + len(legacy), len(domains)


def _shown(source: Mapping[str, Any]) -> bool:
    """:func:`_visible`: a credit a reader sees, or one whose place was not stored."""
    by = fold_of(source).get("wire_by")
    return not by or by in VISIBLE_SOURCES


def _same(field: str, value: object) -> dict[str, Any]:
    return {"term": {field: value}} if value is not None else {"bool": {"must_not": [{"exists": {"field": field}}]}}


def stale_body(origins: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Search body: the pages of some stories whose stored origin differs from ``origins`` (ids and cluster ids)."""
    should = []
    for cluster, origin in origins.items():
        matches = [_same(ORIGIN_ID, origin["origin_id"]), _same(ORIGIN_WIRE, origin["origin_wire"]),
                   _same(ORIGIN_SITE, origin["origin_site"])]  # fmt: skip
        mine = [{"term": {CLUSTER_ID: cluster}}]
        should.append({"bool": {"filter": mine, "must_not": [{"bool": {"filter": matches}}]}})
    return {"size": MAX_PAGES, "query": {"bool": {"should": should, "minimum_should_match": 1}},
            "_source": [CLUSTER_ID]}  # fmt: skip


def refresh_origins(
    cluster_ids: Sequence[str],
    *,
    new_pages: Mapping[str, Sequence[str]] | None = None,
    client: Elasticsearch,
    settings: Settings,
    index: str | None = None,
    time_field: str = "published",
    refresh: bool | str = False,
) -> int:
    """Write each story's origin onto those of its pages that do not hold it yet.

    Args:
        cluster_ids: the stories to bring up to date (at most :data:`MAX_STORIES` per request; more are chunked).
        new_pages: per story, the pages just written (they hold no origin yet). When a story's origin is
            the one its other pages hold and only these lack it, they are updated without a search.
        client: an Elasticsearch client.
        settings: newsfold's settings (``index`` defaults to ``settings.index``).
        index: the index or alias.
        time_field: the date field that orders versions.
        refresh: passed to the bulk request.

    Returns:
        The number of pages updated.
    """
    from newsfold.plugin.fold.store import bulk_write

    index = index or settings.index
    ids = [c for c in dict.fromkeys(cluster_ids) if c]
    updated = 0
    for start in range(0, len(ids), MAX_STORIES):
        chunk = ids[start : start + MAX_STORIES]
        found = _read(search_whole(client, index, body=origins_body(chunk, time_field=time_field)).body)
        actions: list[dict[str, Any]] = []
        search: dict[str, dict[str, Any]] = {}
        for cluster, (origin, (_pages, unset, agree)) in found.items():
            mine = list((new_pages or {}).get(cluster, ()))
            if agree and not unset:  # every page holds it (a batch writes its pages with their origin)
                continue
            if agree and unset <= len(mine):  # only the new pages lack the origin the others hold
                actions += [{"_op_type": "update", "_index": index, "_id": pid, "doc": {FOLD: dict(origin)}}
                            for pid in mine]  # fmt: skip
            elif not agree or unset:
                search[cluster] = origin
        stale = search_whole(client, index, body=stale_body(search))["hits"]["hits"] if search else []
        origins = search
        for hit in stale:
            wanted = origins.get(fold_of(hit.get("_source")).get("cluster_id") or "")
            if wanted is not None:
                actions.append({"_op_type": "update", "_index": hit["_index"], "_id": hit["_id"],
                                "doc": {FOLD: dict(wanted)}})  # fmt: skip
        bulk_write(client, actions, settings=settings, what="writing story origins", refresh=refresh)
        updated += len(actions)
    return updated


# ------------------------------------------------------------------ filters
def originals_filter(site: str | None = None) -> dict[str, Any]:
    """Filter clause: pages of the stories ``site`` originated (it published the earliest, uncredited version);
    without a site, of the stories some site originated (no wire is their origin)."""
    return {"term": {ORIGIN_SITE: site}} if site else {"exists": {"field": ORIGIN_SITE}}


def no_wire_filter() -> dict[str, Any]:
    """Filter clause: pages of stories no version credits to a wire."""
    return {"bool": {"must_not": [{"exists": {"field": ORIGIN_WIRE}}]}}


# ------------------------------------------------------------------ evidence (a story's page)
def story_aggs(*, time_field: str = "published") -> dict[str, Any]:
    """Aggregations to add to a story's request: its sites, the wires credited and the two sites that published
    first (by the time provenance believes)."""
    first_sites = {"terms": {"field": DOMAIN, "size": 2, "order": [{"first": "asc"}, {"_key": "asc"}]},
                   "aggs": {"first": {"min": {"field": BELIEVED_TIME}}}}  # fmt: skip
    return {
        "wires": wire_aggs(),
        "all_sites": {"filter": {"match_all": {}}, "aggs": site_count()},
        "first_sites": first_sites,
        # in a story newsfold saw live, the pages seen live come first (plugin.fold.origin_rule)
        "live": {"filter": {"term": {ARCHIVE_AGED: False}}, "aggs": {"first_sites": first_sites}},
    }  # fmt: skip


def _span(ms: float) -> str:
    minutes = round(ms / 60_000)
    if minutes < 60:
        return f"{minutes} min"
    hours = minutes / 60
    if hours < 48:
        return f"{round(hours)} h"
    return f"{round(hours / 24)} days"


def read_origin(
    aggs: Mapping[str, Any], *, versions: int, stored: Mapping[str, Any] | None, chosen: bool = False
) -> dict[str, Any] | None:
    """A story's ``origin``: ``{"wire", "site", "id", "evidence"}`` from :func:`story_aggs` and a page's stored fields.

    The stored origin (``stored``: any page's fold fields) says what was decided; the aggregations say why,
    counting sites (publishers), not pages. ``chosen``: the origin is the version an editor made representative.
    None when the story has no stored origin yet.
    """
    fold = stored or {}
    if not fold.get("origin_id"):
        return None
    wire, site = fold.get("origin_wire"), fold.get("origin_site")
    sites = read_site_count(aggs.get("all_sites") or {}) or versions
    if chosen:
        evidence = "chosen by an editor"
    elif wire:
        count = next((read_site_count(b) for b in aggs.get("wires", {}).get("buckets", []) if b["key"] == wire), 0)
        evidence = f"credited by {count} of {sites} site{'s' if sites != 1 else ''}"
    else:
        live = (aggs.get("live") or {}).get("first_sites", {}).get("buckets", [])
        firsts = live or aggs.get("first_sites", {}).get("buckets", [])
        times = [b["first"].get("value") for b in firsts]
        if len(firsts) < 2:
            evidence = "the only site that ran it" if sites <= 1 else ("earliest seen" if live else "earliest ingested")
        elif times[0] is None or times[1] is None:
            evidence = "earliest ingested"
        elif times[1] == times[0]:
            evidence = "earliest, at the same time as another site"
        else:
            evidence = f"earliest by {_span(times[1] - times[0])}"
    return {"wire": wire, "site": site, "id": fold.get("origin_id"), "evidence": evidence}
