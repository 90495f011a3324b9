"""A story's reference version, and what each version holds of it: query builders and readers.

A story's reference is the version an editor made representative, else the earliest (:func:`reference_sort`).
:func:`references` looks up the references of some stories (:func:`with_references` asks for them inside a
body that lists stories already); :func:`relation_of` reads what a version holds of its story's reference and
what it adds (``plugin.sign.novelty``), and :func:`add_relations` does it for every hit of a folded search,
newsfold's own and a host's ``fold_query`` results alike.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.document import CLUSTER_ID, fold_of, path
from newsfold.plugin.fold.lookups import FOUNDER_FIRST
from newsfold.plugin.fold.origin_order import BELIEVED_FIRST, sort_clauses
from newsfold.plugin.sign.novelty import relation

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

PASSAGES = path("passages")
REPRESENTATIVE = path("representative")


def reference_sort(time_field: str) -> list[dict[str, Any]]:
    """A story's reference first: the representative an editor picked, then the earliest version by what
    provenance believes of the versions' times (``plugin.fold.origin_rule``: a back-dated copy is not the earliest)."""
    return [
        {REPRESENTATIVE: {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}},
        *sort_clauses(BELIEVED_FIRST),
        *time_sort(time_field, "asc"),
    ]


def time_sort(time_field: str, order: str) -> list[dict[str, Any]]:
    """Versions by time (``order``), ties by ingest time, the founder first, then by URL: the same order every time."""
    tiebreak = [] if time_field == "ingested" else [{"ingested": {"order": order, "unmapped_type": "date"}}]
    return [{time_field: {"order": order, "missing": "_last"}}, *tiebreak, FOUNDER_FIRST,
            {path("url_key"): {"order": "asc", "unmapped_type": "keyword"}}]  # fmt: skip


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
        "sort": reference_sort(time_field),
        "_source": list(dict.fromkeys([*source, CLUSTER_ID])),
    }


def with_references(body: dict[str, Any], *, agg: str, time_field: str = "published") -> dict[str, Any]:
    """A copy of a search body whose ``terms`` aggregation on the cluster id also returns each story's reference.

    For a body that lists stories already (newsfold's ``versions_of``): the
    references come in the same request, read by :func:`read_references` with the same ``agg``.
    """
    out = copy.deepcopy(body)
    sub = out["aggs"][agg].setdefault("aggs", {})
    sub["reference"] = {"top_hits": {"size": 1, "sort": reference_sort(time_field), "_source": [PASSAGES]}}
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
    inner hit gets ``newsfold_relation`` (see ``plugin.sign.novelty``; None when
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
