"""Running the story searches of the web UI and the API.

One collapsed search gives the page of stories (one hit per story: its
best-matching version); one ``versions_of`` request gives every story's
other versions and size. Similarities between versions are computed here
from the stored MinHash signatures.
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from elasticsearch import Elasticsearch

from plugin import queries
from plugin.settings import Settings
from plugin.signature import Signature, jaccard

MAX_PAGE_DIGITS = 6
#: fields of a version or cluster member returned to clients (never the signature)
PUBLIC_FIELDS = ("title", "url", "site", "lang", "published")


@dataclass(frozen=True)
class SearchParams:
    """What the user asked for: query, filters and page number."""

    q: str = ""
    site: str | None = None
    lang: str | None = None
    page: int = 1

    @classmethod
    def from_args(cls, args: Mapping[str, str]) -> SearchParams:
        """Read ``q``, ``site``, ``lang`` and ``page`` from request arguments.

        Raises:
            ValueError: ``page`` is not a positive whole number or absurdly large.
        """
        raw_page = (args.get("page") or "1").strip()
        if not (raw_page.isascii() and raw_page.isdigit()) or not raw_page.strip("0"):
            raise ValueError(f"page must be a positive whole number, got {raw_page[:20]!r}")
        if len(raw_page) > MAX_PAGE_DIGITS:
            shown = raw_page if len(raw_page) <= 20 else raw_page[:20] + "…"
            raise ValueError(f"page {shown} is out of range (at most 10,000 results)")
        return cls(
            q=(args.get("q") or "").strip(),
            site=(args.get("site") or "").strip() or None,
            lang=(args.get("lang") or "").strip() or None,
            page=int(raw_page),
        )

    def url_args(self, page: int | None = None) -> dict:
        """Arguments for ``url_for`` that reproduce this search (on another page)."""
        args = {"q": self.q, "site": self.site, "lang": self.lang, "page": page or self.page}
        return {k: v for k, v in args.items() if v and not (k == "page" and v == 1)}


@dataclass
class SearchResult:
    """One page of stories and the counts of the whole result."""

    params: SearchParams
    page_size: int
    stories: int
    documents: int
    results: list[dict] = field(default_factory=list)

    @property
    def total_pages(self) -> int:
        """Pages of stories, within the 10,000-result window of from/size paging."""
        return min(math.ceil(self.stories / self.page_size), 10_000 // self.page_size)

    def as_json(self) -> dict:
        return {
            "query": self.params.q,
            "page": self.params.page,
            "page_size": self.page_size,
            "stories": self.stories,
            "documents": self.documents,
            "results": [{k: v for k, v in story.items() if k != "title_highlight"} for story in self.results],
        }


def search_body(params: SearchParams, settings: Settings) -> dict:
    """The collapsed search for ``params``.

    Raises:
        ValueError: the query is too long or the page out of range (the message says which).
    """
    return queries.collapsed_search(
        params.q, page=params.page, size=settings.page_size, site=params.site, lang=params.lang
    )


def run_search(
    es: Elasticsearch, settings: Settings, params: SearchParams, body: dict, *, per_cluster: int = 20
) -> SearchResult:
    """Execute ``body`` and fetch the versions of the stories found, in two requests."""
    res = es.search(index=settings.index, **body)
    hits = res["hits"]["hits"]
    result = SearchResult(
        params=params,
        page_size=settings.page_size,
        stories=int(res.get("aggregations", {}).get("stories", {}).get("value") or 0),
        documents=int(res["hits"]["total"]["value"]),
    )
    if not hits:
        return result
    cluster_ids = list(dict.fromkeys(hit["_source"]["cluster_id"] for hit in hits))
    versions = es.search(index=settings.index, **queries.versions_of(cluster_ids, per_cluster=per_cluster))
    buckets = {b["key"]: b for b in versions["aggregations"]["clusters"]["buckets"]}
    result.results = [story(hit, buckets.get(hit["_source"]["cluster_id"])) for hit in hits]
    return result


def decode_signature(source: Mapping) -> Signature | None:
    """The stored signature of a document, or None when it is missing or unreadable."""
    data = source.get("signature")
    if not data:
        return None
    try:
        return Signature.decode(data, shingle_count=int(source.get("shingle_count") or 0))
    except (binascii.Error, ValueError, TypeError):
        return None


def similarity(a: Signature | None, b: Signature | None) -> float | None:
    """Estimated Jaccard resemblance of two signatures (None when they cannot be compared)."""
    if a is None or b is None or len(a.hashvalues) != len(b.hashvalues):
        return None
    return round(jaccard(a, b), 4)


def story(hit: dict, bucket: dict | None) -> dict:
    """A result: the shown version, its highlights and the story's other versions.

    ``size`` is the number of pages of the story; ``versions`` lists the other
    versions returned by ``versions_of`` (at most its ``per_cluster``), each
    with its similarity to the shown version.
    """
    src = hit["_source"]
    highlight = hit.get("highlight") or {}
    shown = decode_signature(src)
    others = []
    for version in (bucket or {}).get("versions", {}).get("hits", {}).get("hits", []):
        if version["_id"] == hit["_id"]:
            continue
        vsrc = version["_source"]
        others.append(
            {
                "id": version["_id"],
                **{k: vsrc.get(k) for k in PUBLIC_FIELDS},
                "similarity": similarity(shown, decode_signature(vsrc)),
            }
        )
    title_highlight = highlight.get("title") or []
    return {
        "cluster_id": src["cluster_id"],
        "id": hit["_id"],
        **{k: src.get(k) for k in PUBLIC_FIELDS},
        "highlight": list(highlight.get("body") or []),
        "title_highlight": title_highlight[0] if title_highlight else None,
        "versions": others,
        "size": int(bucket["doc_count"]) if bucket else 1 + len(others),
    }


def load_cluster(es: Elasticsearch, settings: Settings, cluster_id: str, *, limit: int = 1000) -> dict | None:
    """A cluster's members, oldest first (at most ``limit``), or None when no page has that cluster id."""
    res = es.search(index=settings.index, **queries.cluster_members(cluster_id, size=limit))
    hits = res["hits"]["hits"]
    if not hits:
        return None
    size = int(res["hits"]["total"]["value"])
    members = []
    for hit in hits:
        src = hit["_source"]
        members.append(
            {
                "id": hit["_id"],
                **{k: src.get(k) for k in PUBLIC_FIELDS},
                "ingested": src.get("ingested"),
                "similarity": src.get("similarity"),
                "matched_id": src.get("matched_id"),
            }
        )
    return {"cluster_id": cluster_id, "size": size, "members": members, "truncated": size > len(members)}
