"""Query builders and readers of folded searches; the builders return dicts and never execute them.

A host folds its own search with :func:`fold_query` (run by ``plugin.search.folded_search``) and reads it
back with :func:`folded_hits` and :func:`story_count`; its facets count stories with
:func:`with_story_counts` and :func:`story_buckets`. newsfold's own search (``web``) is
:func:`collapsed_search` folded the same way, with :func:`search_facets` and :func:`versions_of`. What a
public query may ask is checked in ``plugin.search.public_query``; the lookups of ingest and corrections
are in ``plugin.fold.lookups``; the admin pages' aggregations in ``plugin.admin.admin_queries``.
"""

from __future__ import annotations

import copy
from typing import Any

from newsfold.plugin.errors import InputError, check_type
from newsfold.plugin.fold.document import CLUSTER_ID, VERSION_SOURCE, cluster_of
from newsfold.plugin.fold.lookups import FOUNDER_FIRST, MAX_WINDOW, REPRESENTATIVE_FIRST, URL_ORDER
from newsfold.plugin.search.public_query import checked_search_text, page_filters, search_text_query
from newsfold.plugin.search.request import REPRESENTATIVE_BOOST as REPRESENTATIVE_BOOST  # re-exported: 0.x home
from newsfold.plugin.search.request import SORTS as SORTS
from newsfold.plugin.search.request import SearchRequest

#: the server-side time limit of a public search (Elasticsearch returns what it found by then)
SEARCH_TIMEOUT = "2s"


def collapsed_search(request: SearchRequest | str | None = None, /, **keywords: Any) -> dict[str, Any]:
    """newsfold's own story search: one hit per story, folded by :func:`fold_query` as a host's search is.

    Args:
        request: the search (``plugin.search.request.SearchRequest``). Deprecated alias, kept from newsfold
            0.x: the words, with the request's fields as keyword arguments (``page``, ``size``, ``sort``,
            ``site``, ``lang``, ``date_from``, ``date_to``, ``filters``, ``precision_threshold``,
            ``representative_boost``).

    The hit of each story is its best-matching version; a version an editor
    made the story's representative is preferred: by relevance it gets
    ``representative_boost`` added to its score (which also lifts its story a
    little), by date it wins among versions of the same date. ``hits.total`` counts
    documents; :func:`story_count` of the response is the number of stories.
    Pages use from/size (collapse only pages with ``search_after`` when
    sorting on the collapse field). The versions of each story are fetched
    apart (:func:`versions_of`, one aggregation for the whole page), so no
    inner hits are asked for. ``filters`` are more filter clauses (such as
    ``plugin.fold.provenance.originals_filter``). A ``q`` of more than 32 words
    is a pasted passage: the stories holding it (``public_query.passage_query``).
    ``plugin.search.hits.story_hits`` reads the response.

    Raises:
        InputError: the query is too long, the page out of range, the sort
            unknown or a date not ``YYYY-MM-DD`` (the message says which).
    """
    asked = SearchRequest.of(request, **keywords)
    q, page, size, sort = asked.q, asked.page, asked.size, asked.sort
    site, lang, date_from, date_to = asked.site, asked.lang, asked.date_from, asked.date_to
    representative_boost, filters = asked.representative_boost, [dict(f) for f in asked.filters]
    precision_threshold = asked.precision_threshold
    q = checked_search_text(q)
    if page < 1 or size < 1 or page * size > MAX_WINDOW:
        raise InputError(f"page {page} of size {size} is out of range (at most {MAX_WINDOW:,} results)")
    if sort not in SORTS:
        raise InputError(f"sort must be 'relevance' or 'date', got {sort[:40]!r}")
    must = search_text_query(q)
    body: dict[str, Any] = {
        "query": {
            "bool": {
                "must": [must],
                "filter": [*page_filters(site=site, lang=lang, date_from=date_from, date_to=date_to), *filters],
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
        body["highlight"] = _highlight()
    if sort == "date" or not q:
        body["sort"] = _newest_first()
    return fold_query(body, versions=0, precision_threshold=precision_threshold)


def _highlight() -> dict[str, Any]:
    """The highlight of a public search: two fragments of the body, the whole title, the text HTML-escaped."""
    return {
        "fields": {"body": {"fragment_size": 180, "number_of_fragments": 2}, "title": {"number_of_fragments": 0}},
        "pre_tags": ["<mark>"],
        "post_tags": ["</mark>"],
        "encoder": "html",
    }


def _newest_first() -> list[dict[str, Any]]:
    """The order of a search by date (and of one without words): newest first, an editor's representative
    first among versions of one date, then the latest ingested."""
    return [
        {"published": {"order": "desc", "missing": "_last"}},
        {"newsfold.representative": {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}},
        {"ingested": "desc"},
    ]


def representative_clause(boost: float = REPRESENTATIVE_BOOST) -> dict[str, Any]:
    """A should clause adding ``boost`` to the score of a story's editor-chosen representative."""
    return {"constant_score": {"filter": {"term": {"newsfold.representative": True}}, "boost": boost}}


def search_facets(
    q: str, *, date_from: str | None = None, date_to: str | None = None, sites: int = 500, langs: int = 100
) -> dict[str, Any]:
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
        A ``size: 0`` body with terms aggregations ``sites`` and ``langs``,
        each bucket counting stories too (:func:`with_story_counts`).

    Raises:
        ValueError: the query is too long or a date is malformed.
    """
    return {
        "query": {
            "bool": {"must": [search_text_query(q)], "filter": page_filters(date_from=date_from, date_to=date_to)}
        },
        "size": 0,
        "timeout": SEARCH_TIMEOUT,
        "aggs": with_story_counts({
            "sites": {"terms": {"field": "site", "size": sites}},
            "langs": {"terms": {"field": "lang", "size": langs}},
        }),
    }  # fmt: skip


def versions_of(
    cluster_ids: list[str], *, per_cluster: int = 20, scored_by: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Search body listing the versions of several clusters in one request.

    Unlike collapse ``inner_hits`` (one extra search per group, and only the
    versions that match the query), this returns every version of each story
    with the true cluster size as the bucket's ``doc_count``: an editor's
    representative first, then the oldest. With ``scored_by`` (the search's
    query: :func:`search_query` of a :func:`collapsed_search` body), each version
    also carries its ``_score`` for it, 0 when it does not match (a host may rank a story's versions by it).
    """
    query: dict[str, Any] = {"terms": {CLUSTER_ID: list(cluster_ids)}}
    versions: dict[str, Any] = {
        "size": per_cluster,
        "_source": VERSION_SOURCE,
        "sort": [REPRESENTATIVE_FIRST, {"ingested": "asc"}, FOUNDER_FIRST, URL_ORDER],
    }
    if scored_by is not None:
        query = {"bool": {"filter": [query], "should": [scored_by]}}
        versions["track_scores"] = True
    return {
        "query": query,
        "size": 0,
        "aggs": {
            "clusters": {
                "terms": {"field": CLUSTER_ID, "size": max(1, len(cluster_ids))},
                "aggs": {"versions": {"top_hits": versions}},
            }
        },
    }


def search_query(body: dict[str, Any]) -> dict[str, Any]:
    """The query of a :func:`collapsed_search` body without the representative's nudge: what a version must
    match to be a hit of that search (its words and filters)."""
    clauses = body["query"]["bool"]
    return {"bool": {"must": copy.deepcopy(clauses["must"]), "filter": copy.deepcopy(clauses["filter"])}}


FOLD_FIELD = CLUSTER_ID
VERSIONS_NAME = "newsfold_versions"
STORIES_AGG = "newsfold_stories"
UNFOLDED_AGG = "newsfold_unfolded"
_NOT_WITH_COLLAPSE = ("collapse", "search_after", "scroll", "rescore")


def fold_query(body: dict[str, Any], *, versions: int = 3, precision_threshold: int = 40000) -> dict[str, Any]:
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
    yet would hide the others of its kind. ``fold_search`` (``plugin.search.folded_search``)
    runs this body and, only when ``newsfold_unfolded`` is not zero, a second
    search for those documents, each its own story.

    Args:
        body: the host's search body (not changed).
        versions: how many other versions per story to return (0: none).
        precision_threshold: of the ``newsfold_stories`` cardinality (exact up to this many stories).

    Returns:
        A new body for ``client.search``.

    Raises:
        InputError: (a ``ValueError``) the body uses what collapse cannot be combined with
            (``collapse``, ``search_after``, ``scroll``, ``rescore``), ``versions`` is negative, or
            from + size is over 10,000 (Elasticsearch's window).
        InputTypeError: (a ``TypeError``) an argument of the wrong type.
    """
    check_type(body, dict, "body")
    check_type(versions, int, "versions")
    check_type(precision_threshold, int, "precision_threshold")
    window = body.get("from", 0) or 0, body.get("size", 10) if body.get("size") is not None else 10
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in window):
        raise InputError(f"from and size must be whole numbers >= 0, got {window[0]!r} and {window[1]!r}")
    if sum(window) > MAX_WINDOW:
        raise InputError(f"from + size must be at most {MAX_WINDOW:,}, got {sum(window):,}")
    clash = [k for k in _NOT_WITH_COLLAPSE if k in body]
    if clash:
        raise InputError(f"a folded search cannot use {', '.join(clash)} (Elasticsearch's collapse does not allow it)")
    if versions < 0:
        raise InputError(f"versions must be >= 0, got {versions}")
    out = copy.deepcopy(body)
    collapse: dict[str, Any] = {"field": FOLD_FIELD}
    if versions:
        inner: dict[str, Any] = {"name": VERSIONS_NAME, "size": versions + 1}
        for key in ("sort", "_source", "highlight"):
            if key in body:
                inner[key] = copy.deepcopy(body[key])
        collapse["inner_hits"] = inner
    out["collapse"] = collapse
    aggs = out.setdefault("aggs", out.pop("aggregations", {}))
    aggs[STORIES_AGG] = {"cardinality": {"field": FOLD_FIELD, "precision_threshold": precision_threshold}}
    aggs[UNFOLDED_AGG] = {"missing": {"field": FOLD_FIELD}}
    return out


def story_count(response: dict[str, Any]) -> int:
    """The number of stories matching a folded search: folded stories plus documents not folded yet."""
    aggs = response.get("aggregations") or {}
    folded = int((aggs.get(STORIES_AGG) or {}).get("value") or 0)
    unfolded = int((aggs.get(UNFOLDED_AGG) or {}).get("doc_count") or 0)
    return folded + unfolded


#: where ``fold_search(..., count_all=True)`` puts a story's number of versions in the whole index, on its hit
ALL_VERSIONS_KEY = "newsfold_all_versions"


def folded_hits(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The stories of a folded response, one dict per story.

    - ``hit``: the story's best-ranked version;
    - ``versions``: the other versions returned (the hit itself left out);
    - ``other_versions_matching``: how many other versions of the story match
      the search (its query and filters); ``other_versions`` is the same
      number under its older name;
    - ``other_versions_all``: how many other versions the story has in the
      index, matching or not; only when the response comes from
      ``fold_search(..., count_all=True)``, else None.
    """
    out = []
    for hit in response.get("hits", {}).get("hits", []):
        everywhere = hit.get(ALL_VERSIONS_KEY)
        all_others = max(0, int(everywhere) - 1) if isinstance(everywhere, int) else None
        folded = bool((hit.get("fields") or {}).get(FOLD_FIELD)) or bool(cluster_of(hit.get("_source")))
        if not folded:  # a document not folded yet: its own story, no versions
            out.append(_story(hit, [], 0, 0 if all_others is not None else None))
            continue
        inner = (hit.get("inner_hits") or {}).get(VERSIONS_NAME, {}).get("hits", {})
        returned = inner.get("hits", [])
        # the hit is one of its inner hits (asked for versions + 1): leave it out, keep at most ``versions``
        others = [h for h in returned if h.get("_id") != hit.get("_id")][: max(0, len(returned) - 1)]
        total = inner.get("total", {})
        count = total.get("value", 0) if isinstance(total, dict) else int(total or 0)
        out.append(_story(hit, others, max(0, count - 1), all_others))
    return out


def _story(
    hit: dict[str, Any], versions: list[dict[str, Any]], matching: int, everywhere: int | None
) -> dict[str, Any]:
    return {"hit": hit, "versions": versions, "other_versions": matching, "other_versions_matching": matching,
            "other_versions_all": everywhere}  # fmt: skip


def with_story_counts(aggs: dict[str, Any], *, precision_threshold: int = 40_000) -> dict[str, Any]:
    """Make bucket aggregations count stories as well as documents (for facets: "politics: 4 stories").

    Adds two sub-aggregations to every bucket aggregation in ``aggs``, at any
    depth (``terms``, ``date_histogram``, ``histogram``, ``range``,
    ``filters``... :data:`BUCKET_AGGS`; metrics such as ``max`` are left as they are):
    ``newsfold_stories`` (a cardinality of the cluster id, exact up to
    ``precision_threshold`` stories per bucket, then an estimate within a few
    percent) and ``newsfold_unfolded`` (documents not folded yet, each its own
    story). Read the buckets with :func:`story_buckets`. A story with versions
    in two buckets (filed under two sections) counts in each.

    Returns:
        A new aggregations dict (``aggs`` is not changed).

    Raises:
        InputTypeError: ``aggs`` is not a dict of aggregation dicts.
    """
    check_type(aggs, dict, "aggs")
    check_type(precision_threshold, int, "precision_threshold")
    out = copy.deepcopy(aggs)
    _add_story_counts(out, precision_threshold, "aggs")
    return out


#: aggregations whose buckets hold documents of the searched index (so a story count means something there)
BUCKET_AGGS = frozenset(
    "terms multi_terms rare_terms significant_terms significant_text date_histogram histogram auto_date_histogram "
    "variable_width_histogram range date_range ip_range ip_prefix filters filter global missing adjacency_matrix "
    "composite geohash_grid geotile_grid geohex_grid geo_distance categorize_text sampler diversified_sampler "
    "random_sampler time_series".split()
)


def _add_story_counts(aggs: dict[str, Any], precision_threshold: int, where: str) -> None:
    """Add the story counts to the bucket aggregations of ``aggs`` and of their sub-aggregations, in place.

    Metric and pipeline aggregations take no sub-aggregations and are left as
    they are; so are ``nested``, ``reverse_nested``, ``children`` and
    ``parent``, whose buckets hold other documents than the index's own.
    """
    for name, agg in aggs.items():
        check_type(agg, dict, f"{where}[{name!r}]")
        kinds = set(agg) - {"aggs", "aggregations", "meta"}
        if not kinds & BUCKET_AGGS:
            continue
        subs = agg.setdefault("aggs", agg.pop("aggregations", {}))
        check_type(subs, dict, f"{where}[{name!r}].aggs")
        _add_story_counts(subs, precision_threshold, f"{where}[{name!r}].aggs")
        subs[STORIES_AGG] = {"cardinality": {"field": FOLD_FIELD, "precision_threshold": precision_threshold}}
        subs[UNFOLDED_AGG] = {"missing": {"field": FOLD_FIELD}}


def story_buckets(aggregation: dict[str, Any]) -> list[dict[str, Any]]:
    """The buckets of an aggregation built with :func:`with_story_counts`, with their story counts.

    Returns:
        ``[{"key", "key_as_string" (when given), "stories", "documents"}]`` in the
        aggregation's order (a keyed aggregation's buckets get their key).
    """
    buckets = aggregation.get("buckets", [])
    items = buckets.items() if isinstance(buckets, dict) else ((b.get("key"), b) for b in buckets)
    out = []
    for key, b in items:
        stories = int((b.get(STORIES_AGG) or {}).get("value") or 0) + int(
            (b.get(UNFOLDED_AGG) or {}).get("doc_count") or 0
        )
        row = {"key": key, "stories": stories, "documents": int(b.get("doc_count", 0))}
        if "key_as_string" in b:
            row["key_as_string"] = b["key_as_string"]
        out.append(row)
    return out
