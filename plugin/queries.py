"""Elasticsearch query builders of the search and of the lookups; they return dicts and never execute them.

Read by ingest (``plugin.batch`` and ``plugin.regroup``: band lookups, cluster pages), by
corrections (``plugin.corrections``, ``plugin.constraints``), by the public
search (newsfold's own in ``web``, a host's through :func:`fold_query`). The
admin pages' aggregations are in ``plugin.admin_queries``.
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from typing import Any

from newsfold.plugin.document import CLUSTER_ID, LOOKUP_SOURCE, VERSION_SOURCE, cluster_of
from newsfold.plugin.errors import InputError, check_type

#: from + size of a search at most (Elasticsearch's index.max_result_window default): pages beyond it are refused
MAX_WINDOW = 10_000

MAX_QUERY_CHARS = 500
MAX_QUERY_TERMS = 32
#: the simple_query_string operators a public query may use: no fuzzy (~N after a word), no phrase slop
#: (~N after a phrase) and no prefix (word*): each of those can make one query cost the server minutes
PUBLIC_QUERY_FLAGS = "AND|OR|NOT|PHRASE|PRECEDENCE|WHITESPACE|ESCAPE"
#: the server-side time limit of a public search (Elasticsearch returns what it found by then)
SEARCH_TIMEOUT = "2s"
REPRESENTATIVE_BOOST = 2.0  # added to the relevance score of an editor-chosen representative
SORTS = ("relevance", "date")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: what the term cap counts: each word, each ``|``, ``(`` and ``)``, and a ``+`` or ``-`` that starts a word
#: (``the|the|the`` is three terms and two operators, however few its spaces)
_QUERY_PARTS = re.compile(r"""[|()]|(?:^|(?<=[\s(|]))[+-]|[^\s|()"+-][^\s|()"]*""")


# ------------------------------------------------------------------ lookups (ingest, corrections)
def band_lookup(
    keys: list[str],
    *,
    size: int = 50,
    exclude_ids: list[str] | None = None,
    min_bands: int = 1,
    exclude_cluster: str | None = None,
) -> dict[str, Any]:
    """Search body finding indexed pages sharing at least ``min_bands`` band keys.

    Each key is a ``constant_score`` term clause, so a hit's score is the
    number of bands it shares: the most similar candidates come first.
    ``exclude_cluster`` leaves out the pages of one cluster (the reconcile
    step only looks for other clusters).
    """
    query: dict[str, Any] = {
        "bool": {
            "should": [{"constant_score": {"filter": {"term": {"newsfold.band_keys": k}}}} for k in keys],
            "minimum_should_match": min_bands,
        }
    }
    must_not: list[dict[str, Any]] = []
    if exclude_ids:
        must_not.append({"ids": {"values": list(exclude_ids)}})
    if exclude_cluster:
        must_not.append({"term": {CLUSTER_ID: exclude_cluster}})
    if must_not:
        query["bool"]["must_not"] = must_not
    return {"query": query, "size": size, "_source": LOOKUP_SOURCE}


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


# ------------------------------------------------------------------ the public search
def parse_day(value: str, name: str) -> dt.date:
    """A day given as ``YYYY-MM-DD`` (the one date format of every date argument and filter).

    Raises:
        ValueError: ``value`` is not such a day; the message calls it ``name``.
    """
    try:
        if not _ISO_DATE.match(value):
            raise InputError(value)
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(f"{name} must be a date like 2024-05-31, got {value[:40]!r}") from None


def page_filters(
    *,
    site: str | None = None,
    lang: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    q: str | None = None,
) -> list[dict[str, Any]]:
    """Filter clauses for pages of a site, in a language, published in a date range and containing text.

    Args:
        site: pages of this site.
        lang: pages in this language.
        date_from: first day (``YYYY-MM-DD``) of ``published``, inclusive.
        date_to: last day, inclusive.
        q: text in the title or body (:func:`text_query`, all words; unscored here).

    Returns:
        The clauses (empty for no filter).

    Raises:
        ValueError: a date is malformed, the range is empty or the text query too long.
    """
    out: list[dict[str, Any]] = []
    if site:
        out.append({"term": {"site": site}})
    if lang:
        out.append({"term": {"lang": lang}})
    start = parse_day(date_from, "date_from") if date_from else None
    end = parse_day(date_to, "date_to") if date_to else None
    if start and end and start > end:
        raise InputError(f"the date range is empty: {start.isoformat()} is after {end.isoformat()}")
    published = {}
    if start:
        published["gte"] = start.isoformat()
    if end and end < dt.date.max:
        # "up to and including that day": before the next midnight, the same on every Elasticsearch version
        published["lt"] = (end + dt.timedelta(days=1)).isoformat()
    if published:  # 9999-12-31 and nothing else is no bound at all
        out.append({"range": {"published": published}})
    if checked_query(q):
        out.append(text_query(q))
    return out


def checked_query(q: str | None) -> str:
    """A public query string, stripped and checked against the limits.

    Raises:
        ValueError: more than ``MAX_QUERY_CHARS`` characters, or more than ``MAX_QUERY_TERMS`` words and
            operators together (the message says which).
    """
    q = (q or "").strip()
    if len(q) > MAX_QUERY_CHARS:
        raise InputError(f"the query has {len(q):,} characters; the limit is {MAX_QUERY_CHARS}")
    parts = _QUERY_PARTS.findall(q)
    if len(parts) > MAX_QUERY_TERMS:
        operators = sum(part in "|()+-" for part in parts)
        raise InputError(
            f"the query has {len(parts) - operators} words and {operators} operators; ask with at most "
            f"{MAX_QUERY_TERMS} words and operators (| ( ) + -) together"
        )
    return q


def text_query(q: str | None) -> dict[str, Any]:
    """The full-text part of a public search: every word must match, titles count double.

    Quotes, ``-word``, ``|`` and parentheses work; fuzziness, phrase slop and
    prefixes are switched off (``PUBLIC_QUERY_FLAGS``), so their characters
    are read as text.

    Raises:
        ValueError: see :func:`checked_query`.
    """
    q = checked_query(q)
    if not q:
        return {"match_all": {}}
    return {
        "simple_query_string": {
            "query": q,
            "fields": ["title^2", "body"],
            "default_operator": "and",
            "flags": PUBLIC_QUERY_FLAGS,
        }
    }


def collapsed_search(
    q: str,
    *,
    page: int = 1,
    size: int = 10,
    sort: str = "relevance",
    site: str | None = None,
    lang: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    precision_threshold: int = 40000,
    representative_boost: float = REPRESENTATIVE_BOOST,
    filters: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    """newsfold's own story search: one hit per story, folded by :func:`fold_query` as a host's search is.

    The hit of each story is its best-matching version; a version an editor
    made the story's representative is preferred: by relevance it gets
    ``representative_boost`` added to its score (which also lifts its story a
    little), by date it wins among versions of the same date. ``hits.total`` counts
    documents; :func:`story_count` of the response is the number of stories.
    Pages use from/size (collapse only pages with ``search_after`` when
    sorting on the collapse field). The versions of each story are fetched
    apart (:func:`versions_of`, one aggregation for the whole page), so no
    inner hits are asked for. ``filters`` are more filter clauses (such as
    ``plugin.provenance.originals_filter``).

    Raises:
        ValueError: the query is too long, the page out of range, the sort
            unknown or a date not ``YYYY-MM-DD`` (the message says which).
    """
    q = checked_query(q)
    if page < 1 or size < 1 or page * size > MAX_WINDOW:
        raise InputError(f"page {page} of size {size} is out of range (at most {MAX_WINDOW:,} results)")
    if sort not in SORTS:
        raise InputError(f"sort must be 'relevance' or 'date', got {sort[:40]!r}")
    must = text_query(q)
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
        body["highlight"] = {
            "fields": {"body": {"fragment_size": 180, "number_of_fragments": 2}, "title": {"number_of_fragments": 0}},
            "pre_tags": ["<mark>"],
            "post_tags": ["</mark>"],
            "encoder": "html",
        }
    if sort == "date" or not q:
        body["sort"] = [
            {"published": {"order": "desc", "missing": "_last"}},
            {"newsfold.representative": {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}},
            {"ingested": "desc"},
        ]
    return fold_query(body, versions=0, precision_threshold=precision_threshold)


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
        "query": {"bool": {"must": [text_query(q)], "filter": page_filters(date_from=date_from, date_to=date_to)}},
        "size": 0,
        "timeout": SEARCH_TIMEOUT,
        "aggs": with_story_counts({
            "sites": {"terms": {"field": "site", "size": sites}},
            "langs": {"terms": {"field": "lang", "size": langs}},
        }),
    }  # fmt: skip


def versions_of(cluster_ids: list[str], *, per_cluster: int = 20) -> dict[str, Any]:
    """Search body listing the versions of several clusters in one request.

    Unlike collapse ``inner_hits`` (one extra search per group, and only the
    versions that match the query), this returns every version of each story
    with the true cluster size as the bucket's ``doc_count``: an editor's
    representative first, then the oldest.
    """
    return {
        "query": {"terms": {CLUSTER_ID: list(cluster_ids)}},
        "size": 0,
        "aggs": {
            "clusters": {
                "terms": {"field": CLUSTER_ID, "size": max(1, len(cluster_ids))},
                "aggs": {
                    "versions": {
                        "top_hits": {
                            "size": per_cluster,
                            "_source": VERSION_SOURCE,
                            "sort": [REPRESENTATIVE_FIRST, {"ingested": "asc"}, FOUNDER_FIRST, URL_ORDER],
                        }
                    }
                },
            }
        },
    }


# ------------------------------------------------------------------ corrections (plugin.corrections)
DECISION_SOURCE = ["id", "kind", "at", "pages", "must_link", "cannot_link", "released", "not_representative"]


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
    yet would hide the others of its kind. ``fold_search`` (``plugin.search``)
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

    Adds two sub-aggregations to every aggregation in ``aggs`` (``terms``,
    ``date_histogram``, ``histogram``, ``range``, ``filters``...):
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
    for name, agg in out.items():
        check_type(agg, dict, f"aggs[{name!r}]")
        subs = agg.setdefault("aggs", agg.pop("aggregations", {}))
        subs[STORIES_AGG] = {"cardinality": {"field": FOLD_FIELD, "precision_threshold": precision_threshold}}
        subs[UNFOLDED_AGG] = {"missing": {"field": FOLD_FIELD}}
    return out


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
