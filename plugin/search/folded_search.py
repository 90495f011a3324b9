"""Running a folded search on a host's index: exact even while some documents are not folded yet."""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Sequence
from typing import Any

from elastic_transport import ObjectApiResponse
from elasticsearch import BadRequestError, Elasticsearch

from newsfold.plugin.errors import (
    IndexMismatchError,
    InputError,
    check_type,
    item_refusal,
    refusals_as_server_errors,
)
from newsfold.plugin.search.queries import (
    ALL_VERSIONS_KEY,
    FOLD_FIELD,
    UNFOLDED_AGG,
    VERSIONS_NAME,
    fold_query,
    story_count,
)


@refusals_as_server_errors("folded search")
def fold_search(
    client: Elasticsearch, body: dict[str, Any], *, index: str, versions: int = 3, count_all: bool = False
) -> dict[str, Any]:
    """Run the host's search body folded by story and return an Elasticsearch-shaped response.

    One search when every matching document is folded (the usual case).
    When some are not (newsfold has not ingested them yet, or never will),
    Elasticsearch would put them all in one collapse group; then the folded
    stories and the unfolded documents are fetched separately (one
    ``msearch``) and merged in the body's order, each unfolded document its
    own story. Aggregations always cover every matching document.

    Args:
        client: an Elasticsearch client.
        body: the host's search body (any query, filters, sort, from/size,
            highlight and aggregations; not ``collapse``, ``search_after``,
            ``scroll`` or ``rescore``).
        index: the index or alias to search.
        versions: other versions per story (see ``fold_query``). With 0 the
            hits still carry how many other versions match (one small
            counting search, skipped when the first search shows one
            matching version per story).
        count_all: also count every story's versions in the whole index,
            matching the body or not (one more search, a ``terms``
            aggregation on the stories of the page): ``folded_hits`` then
            gives ``other_versions_all`` beside ``other_versions_matching``.

    Returns:
        The response of the folded body: ``hits.hits`` one per story with
        ``inner_hits.newsfold_versions``, ``hits.total`` counting documents,
        and the ``newsfold_stories`` / ``newsfold_unfolded`` aggregations
        (``story_count(response)`` is the number of stories).

    Raises:
        InputError: see ``fold_query`` (from + size over 10,000 included).
        IndexMismatchError: the index does not have newsfold's fields.
        ServerError: the second search (of documents not folded yet) failed.
    """
    check_type(index, str, "index")
    check_type(count_all, bool, "count_all")
    fold_query(body, versions=versions)  # checks the body and versions, from + size included, before any request
    folded = fold_query(body, versions=0)  # the versions come from one more search, not from inner hits
    try:
        first = client.search(index=index, body=folded)
    except BadRequestError as exc:
        if FOLD_FIELD in str(exc) and "no mapping found" in str(exc):
            raise IndexMismatchError(
                f"{index} has no newsfold fields ({FOLD_FIELD} is not mapped): compose component_template() into "
                "its index template, or call ensure_fold_fields(), then ingest its documents (docs/embedding.md)"
            ) from exc
        raise
    out = _merge_unfolded(client, body, index, folded, first)
    if versions or not _one_version_each(body, first):
        _attach_versions(client, body, index, out["hits"]["hits"], versions)  # checked above; 0: the counts alone
    else:
        _attach_single_versions(out["hits"]["hits"])
    if count_all:
        _count_all_versions(client, index, out["hits"]["hits"])
    return out


@refusals_as_server_errors("versions of folded hits")
def fold_versions(
    client: Elasticsearch, body: dict[str, Any], hits: Sequence[dict[str, Any]], *, index: str, versions: int = 3
) -> list[dict[str, Any]]:
    """Give folded hits their other versions matching ``body``, when a reader opens them: one search.

    ``fold_search(..., versions=0)`` answers a results page for about the cost
    of the same search unfolded; the versions of one story (or of every hit
    of the page) then cost one more search, only when someone asks for them
    (docs/embedding.md, "Versions on demand"). ``folded_hits`` reads them as
    it reads those of ``fold_search(..., versions=N)``.

    Args:
        client: an Elasticsearch client.
        body: the host's search body the hits came from (its query,
            ``post_filter``, sort, ``_source`` and highlight apply).
        hits: hits of a ``fold_search`` response (``response["hits"]["hits"]``,
            all or some); each gets ``inner_hits.newsfold_versions``. A hit
            newsfold has not folded keeps what it has (it is its own story).
        index: the index or alias searched.
        versions: other versions per story (at least 1).

    Returns:
        ``hits``, as a list.

    Raises:
        InputError: ``versions`` is not at least 1, or ``hits`` is not hits.
        ServerError: Elasticsearch refused the search.
    """
    check_type(index, str, "index")
    check_type(body, dict, "body")
    check_type(versions, int, "versions")
    if versions < 1:
        raise InputError(f"versions must be at least 1, got {versions}")
    if isinstance(hits, dict | str | bytes) or not all(isinstance(h, dict) for h in hits):
        raise InputError("hits must be a list of hits from a fold_search response (response['hits']['hits'])")
    listed = list(hits)
    _attach_versions(client, body, index, listed, versions)
    return listed


def _attach_versions(
    client: Elasticsearch, body: dict[str, Any], index: str, hits: list[dict[str, Any]], versions: int
) -> None:
    """Give every folded hit its best ``versions + 1`` matching versions, as collapse inner hits would.

    One search for the whole page (a ``terms`` aggregation on the stories'
    cluster ids with a ``top_hits`` in the body's sort, ``_source`` and
    highlight), where collapse's inner hits cost Elasticsearch one more search
    per story: 4.1-4.4x an unfolded search on a real node against about 1.3x
    this way (docs/measurements.md). With ``versions`` 0 the hits get their counts
    of matching versions alone: the same aggregation without ``top_hits``, its
    query in filter context (nothing is scored).
    """
    clusters = sorted({c for h in hits if (c := _cluster(h))})
    if not clusters:
        return
    filters: list[dict[str, Any]] = [{"terms": {FOLD_FIELD: clusters}}]
    if body.get("post_filter"):
        filters.append(copy.deepcopy(body["post_filter"]))
    query = copy.deepcopy(body.get("query") or {"match_all": {}})
    stories: dict[str, Any] = {"terms": {"field": FOLD_FIELD, "size": len(clusters)}}
    if versions:
        top: dict[str, Any] = {"size": versions + 1}
        for key in ("sort", "_source", "highlight"):
            if key in body:
                top[key] = copy.deepcopy(body[key])
        stories["aggs"] = {"top": {"top_hits": top}}
        where: dict[str, Any] = {"bool": {"must": [query], "filter": filters}}
    else:
        where = {"bool": {"filter": [query, *filters]}}
    search = {"size": 0, "track_total_hits": False, "query": where, "aggs": {"stories": stories}}
    if "timeout" in body:
        search["timeout"] = body["timeout"]
    res = client.search(index=index, body=search)
    found = {b["key"]: b for b in res["aggregations"]["stories"]["buckets"]}
    for h in hits:
        bucket = found.get(_cluster(h))
        if bucket is None:
            continue  # a document not folded: it has its own inner hits already
        shown = bucket["top"]["hits"]["hits"] if versions else []
        inner = {"total": {"value": int(bucket["doc_count"]), "relation": "eq"}, "hits": shown}
        h.setdefault("inner_hits", {})[VERSIONS_NAME] = {"hits": inner}


def _one_version_each(body: dict[str, Any], first: ObjectApiResponse[Any]) -> bool:
    """Whether the first response proves that every matching story has one matching version: its documents are
    as many as its stories. (The story count never counts too many: two stories may share a hash, never one story
    counted twice. A ``post_filter`` makes the counts disagree, since aggregations run before it.)"""
    total = first["hits"].get("total") or {}
    if body.get("post_filter") or not isinstance(total, dict) or total.get("relation") != "eq":
        return False
    return story_count(first.body) == int(total.get("value", -1))


def _attach_single_versions(hits: list[dict[str, Any]]) -> None:
    """Every folded hit's story has no other matching version (:func:`_one_version_each`)."""
    for h in hits:
        if _cluster(h):
            h.setdefault("inner_hits", {})[VERSIONS_NAME] = {"hits": {"total": {"value": 1, "relation": "eq"},
                                                                       "hits": []}}  # fmt: skip


def _cluster(hit: dict[str, Any]) -> str | None:
    cluster: str | None = ((hit.get("fields") or {}).get(FOLD_FIELD) or [None])[0]
    return cluster


def _count_all_versions(client: Elasticsearch, index: str, hits: list[dict[str, Any]]) -> None:
    """Put each story's number of versions in the whole index on its hit (``ALL_VERSIONS_KEY``)."""
    clusters = sorted({c for h in hits if (c := _cluster(h))})
    counts: dict[str, int] = {}
    if clusters:
        body = {"size": 0, "query": {"terms": {FOLD_FIELD: clusters}},
                "aggs": {"c": {"terms": {"field": FOLD_FIELD, "size": len(clusters)}}}}  # fmt: skip
        res = client.search(index=index, body=body)
        counts = {b["key"]: int(b["doc_count"]) for b in res["aggregations"]["c"]["buckets"]}
    for h in hits:
        cluster = _cluster(h)
        h[ALL_VERSIONS_KEY] = counts.get(cluster, 1) if cluster else 1


def _merge_unfolded(
    client: Elasticsearch, body: dict[str, Any], index: str, folded: dict[str, Any], first: ObjectApiResponse[Any]
) -> dict[str, Any]:
    """The first response, or, when some matching documents are not folded, the two searches merged."""
    unfolded = (first.get("aggregations") or {}).get(UNFOLDED_AGG, {}).get("doc_count", 0)
    if not unfolded:
        out = dict(first)
        out["hits"] = dict(first["hits"])
        return out
    start, size = int(body.get("from", 0) or 0), int(body.get("size", 10) if body.get("size") is not None else 10)
    window = {"from": 0, "size": start + size}
    stories = {**folded, **window, "post_filter": _and(body.get("post_filter"), {"exists": {"field": FOLD_FIELD}})}
    stories.pop("aggs", None)
    loose = {**copy.deepcopy(body), **window}
    loose["post_filter"] = _and(body.get("post_filter"), {"bool": {"must_not": [{"exists": {"field": FOLD_FIELD}}]}})
    loose.pop("aggs", None)
    loose.pop("aggregations", None)
    res_stories, res_loose = client.msearch(searches=[{"index": index}, stories, {"index": index}, loose])["responses"]
    for res in (res_stories, res_loose):
        if "error" in res:
            raise item_refusal("folded search failed", res)
    for hit in res_loose["hits"]["hits"]:  # each unfolded document is its own story with no other versions
        hit.setdefault("inner_hits", {})[VERSIONS_NAME] = {
            "hits": {"total": {"value": 1, "relation": "eq"}, "hits": [copy.deepcopy(hit)]}
        }
    order = functools.cmp_to_key(_comparator(body.get("sort")))
    merged = sorted(res_stories["hits"]["hits"] + res_loose["hits"]["hits"], key=order)
    out = dict(first)
    out["hits"] = dict(first["hits"])
    out["hits"]["hits"] = merged[start : start + size]
    return out


def _and(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    return b if not a else {"bool": {"filter": [a, b]}}


def _comparator(sort: Any) -> Callable[[dict[str, Any], dict[str, Any]], int]:
    """Order hits as Elasticsearch did: by their ``sort`` values when the body sorts, else by score."""
    if not sort:
        return lambda x, y: _cmp(y.get("_score") or 0.0, x.get("_score") or 0.0)
    clauses = sort if isinstance(sort, list) else [sort]
    orders: list[str] = []
    for clause in clauses:
        if isinstance(clause, str):
            orders.append("desc" if clause == "_score" else "asc")
        else:
            ((name, spec),) = clause.items()
            default = "desc" if name == "_score" else "asc"
            orders.append(spec.get("order", default) if isinstance(spec, dict) else spec)

    def compare(x: dict[str, Any], y: dict[str, Any]) -> int:
        for i, order in enumerate(orders):
            a, b = _at(x.get("sort"), i), _at(y.get("sort"), i)
            if a is None or b is None:  # missing values sort last
                c = (a is None) - (b is None)
            elif order == "asc":
                c = _cmp(a, b)
            else:
                c = _cmp(b, a)
            if c:
                return c
        return 0

    return compare


def _at(values: Sequence[Any] | None, i: int) -> Any:  # a sort value: any JSON scalar
    return values[i] if values and i < len(values) else None


def _cmp(a: Any, b: Any) -> int:
    try:
        order: int = (a > b) - (a < b)
        return order
    except TypeError:
        return (str(a) > str(b)) - (str(a) < str(b))
