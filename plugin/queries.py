"""Elasticsearch query builders. They return dicts and never execute them."""

from __future__ import annotations

LOOKUP_SOURCE = ["cluster_id", "signature", "shingle_count", "token_count"]
VERSION_SOURCE = ["title", "url", "site", "lang", "published", "ingested", "cluster_id", "signature", "shingle_count"]
MAX_QUERY_CHARS = 500


def band_lookup(keys: list[str], *, size: int = 50, exclude_ids: list[str] | None = None, min_bands: int = 1) -> dict:
    """Search body finding indexed pages sharing at least ``min_bands`` band keys.

    Each key is a ``constant_score`` term clause, so a hit's score is the
    number of bands it shares: the most similar candidates come first.
    """
    query: dict = {
        "bool": {
            "should": [{"constant_score": {"filter": {"term": {"band_keys": k}}}} for k in keys],
            "minimum_should_match": min_bands,
        }
    }
    if exclude_ids:
        query["bool"]["must_not"] = [{"ids": {"values": list(exclude_ids)}}]
    return {"query": query, "size": size, "_source": LOOKUP_SOURCE}


def cluster_members(cluster_id: str, *, size: int = 1000, search_after: list | None = None) -> dict:
    """Search body listing a cluster's pages (oldest first, paged by ``search_after``)."""
    body: dict = {
        "query": {"term": {"cluster_id": cluster_id}},
        "size": size,
        "sort": [{"ingested": "asc"}, {"url_key": "asc"}],
        "_source": VERSION_SOURCE + ["similarity", "matched_id"],
        "track_total_hits": True,
    }
    if search_after:
        body["search_after"] = search_after
    return body


def cluster_ids_only(cluster_id: str, *, size: int = 1000) -> dict:
    """Search body returning only the ids of a cluster's pages (for relabelling)."""
    return {"query": {"term": {"cluster_id": cluster_id}}, "size": size, "_source": False}


def _filters(
    *, site: str | None = None, lang: str | None = None, date_from: str | None = None, date_to: str | None = None
) -> list[dict]:
    out: list[dict] = []
    if site:
        out.append({"term": {"site": site}})
    if lang:
        out.append({"term": {"lang": lang}})
    if date_from or date_to:
        rng = {}
        if date_from:
            rng["gte"] = date_from
        if date_to:
            rng["lte"] = date_to
        out.append({"range": {"published": rng}})
    return out


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
) -> dict:
    """Search body returning one hit per story (collapsed on ``cluster_id``).

    The hit of each story is its best-matching version. ``hits.total`` counts
    documents, so the number of stories comes from the ``stories``
    cardinality aggregation. Pages use from/size (collapse only pages with
    ``search_after`` when sorting on the collapse field).

    Raises:
        ValueError: the query is too long or the page is out of range.
    """
    q = (q or "").strip()
    if len(q) > MAX_QUERY_CHARS:
        raise ValueError(f"the query has {len(q)} characters; the limit is {MAX_QUERY_CHARS}")
    if page < 1 or size < 1 or page * size > 10_000:
        raise ValueError(f"page {page} of size {size} is out of range (at most 10,000 results)")
    if q:
        must: dict = {"simple_query_string": {"query": q, "fields": ["title^2", "body"], "default_operator": "and"}}
    else:
        must = {"match_all": {}}
    body: dict = {
        "query": {
            "bool": {"must": [must], "filter": _filters(site=site, lang=lang, date_from=date_from, date_to=date_to)}
        },
        "collapse": {"field": "cluster_id"},
        "from": (page - 1) * size,
        "size": size,
        "_source": VERSION_SOURCE,
        "track_total_hits": True,
        "aggs": {"stories": {"cardinality": {"field": "cluster_id", "precision_threshold": precision_threshold}}},
    }
    if q:
        body["highlight"] = {
            "fields": {"body": {"fragment_size": 180, "number_of_fragments": 2}, "title": {"number_of_fragments": 0}},
            "pre_tags": ["<mark>"],
            "post_tags": ["</mark>"],
            "encoder": "html",
        }
    if sort == "date" or not q:
        body["sort"] = [{"published": {"order": "desc", "missing": "_last"}}, {"ingested": "desc"}]
    elif sort != "relevance":
        raise ValueError(f"sort must be 'relevance' or 'date', got {sort!r}")
    return body


def versions_of(cluster_ids: list[str], *, per_cluster: int = 20) -> dict:
    """Search body listing the versions of several clusters in one request.

    Unlike collapse ``inner_hits`` (one extra search per group, and only the
    versions that match the query), this returns every version of each story
    with the true cluster size as the bucket's ``doc_count``.
    """
    return {
        "query": {"terms": {"cluster_id": list(cluster_ids)}},
        "size": 0,
        "aggs": {
            "clusters": {
                "terms": {"field": "cluster_id", "size": max(1, len(cluster_ids))},
                "aggs": {
                    "versions": {
                        "top_hits": {"size": per_cluster, "_source": VERSION_SOURCE, "sort": [{"ingested": "asc"}]}
                    }
                },
            }
        },
    }


def largest_clusters(*, size: int = 50) -> dict:
    """Search body: the clusters with the most pages."""
    return {
        "size": 0,
        "aggs": {
            "clusters": {
                "terms": {"field": "cluster_id", "size": size, "min_doc_count": 2, "order": {"_count": "desc"}},
                "aggs": {
                    "sites": {"cardinality": {"field": "site"}},
                    "first": {"min": {"field": "ingested"}},
                    "last": {"max": {"field": "ingested"}},
                    "sample": {
                        "top_hits": {"size": 1, "_source": ["title", "site", "url"], "sort": [{"ingested": "asc"}]}
                    },
                },
            }
        },
    }


def totals() -> dict:
    """Search body: page and story counts of the whole index."""
    return {
        "size": 0,
        "track_total_hits": True,
        "aggs": {"stories": {"cardinality": {"field": "cluster_id", "precision_threshold": 40000}}},
    }
