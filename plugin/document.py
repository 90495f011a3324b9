"""The stored-document format: what newsfold writes into ``_source``, and reading it back.

A document carries two groups of fields:

- **fold fields** (:data:`FOLD_FIELDS`): what newsfold needs to find and keep a
  page's cluster (band keys, signature, cluster id, evidence keys, the match
  that folded it). ``ingest`` writes exactly these into any index, newsfold's
  own or a host's, with partial updates, so a host's own fields are never
  touched. Their mapping is the component template (``plugin.index``).
- **content fields** (:data:`CONTENT_FIELDS`): the article as newsfold's own
  index shows it (title, body, url, site, language, dates). A host index has
  its own; newsfold writes them only into its own index.

Everything that builds or reads ``_source`` goes through this module: the
ingest path, the corrections, the reindex, the web and the admin.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newsfold.plugin.cluster import NO_SIGNALS, SiteSignals
from newsfold.plugin.headlines import lede, title_affixes
from newsfold.plugin.signature import Signature

if TYPE_CHECKING:
    from collections.abc import Mapping

    import numpy as np

    from newsfold.plugin.cluster import Match
    from newsfold.plugin.extract import Article

#: the one object field holding every fold field in a document
FOLD = "newsfold"
#: the fold fields (inside ``newsfold``) and their Elasticsearch mapping
FOLD_FIELDS: dict[str, dict[str, Any]] = {
    "cluster_id": {"type": "keyword"},
    "band_keys": {"type": "keyword", "doc_values": False},
    "signature": {"type": "binary"},
    "shingle_count": {"type": "integer"},
    "token_count": {"type": "integer"},
    "cjk_features": {"type": "keyword", "index": False, "doc_values": False},
    "content_hash": {"type": "keyword"},
    "url_key": {"type": "keyword", "ignore_above": 2048},
    "title_key": {"type": "keyword", "ignore_above": 1024},
    "site_key": {"type": "keyword"},
    "day": {"type": "keyword"},
    "similarity": {"type": "float"},
    "matched_id": {"type": "keyword"},
    "nearest_rejected": {"type": "float"},
    "representative": {"type": "boolean"},
    "folded": {"type": "date"},
    "passages": {"type": "object", "enabled": False},
    #: set on the page that founds a story, to the story's name, until ``ingest`` commits the story (its
    #: outcome ``new``); a story whose founder still holds it is pending and yields to a committed one in a merge
    "founding": {"type": "keyword"},
    # provenance (plugin.provenance): the agency this page credits, and its story's origin, written on every
    # page of the story (the wire when versions credit one, else the site of its earliest version)
    "wire": {"type": "keyword", "ignore_above": 256},
    "origin_wire": {"type": "keyword", "ignore_above": 256},
    "origin_site": {"type": "keyword"},
    "origin_id": {"type": "keyword"},
}
#: the story-level provenance fields (kept by ``plugin.provenance.refresh_origins``, never by a page's own write)
ORIGIN_FIELDS = ("origin_wire", "origin_site", "origin_id")
#: the article fields of newsfold's own index (a host index keeps its own)
CONTENT_FIELDS = ("title", "body", "url", "site", "lang", "published", "ingested", "title_affixes", "lede", "image")


def path(name: str) -> str:
    """The full field path of a fold field (``cluster_id`` -> ``newsfold.cluster_id``), for queries."""
    return f"{FOLD}.{name}"


#: the collapse field of a folded search
CLUSTER_ID = path("cluster_id")
#: what the band lookup and the verifier read of a candidate
LOOKUP_SOURCE = [
    path(f)
    for f in (
        "cluster_id",
        "signature",
        "shingle_count",
        "token_count",
        "cjk_features",
        "site_key",
        "title_key",
        "url_key",
        "day",
    )
]
#: what a search result shows of a version (newsfold's own index)
VERSION_SOURCE = ["title", "url", "site", "lang", "published", "ingested", "lede", "image",
                  *(path(f) for f in ("cluster_id", "signature", "shingle_count", "passages", "representative",
                                      "wire", "origin_wire", "origin_site", "origin_id"))]
#: what the unchanged check reads
UNCHANGED_SOURCE = [path("content_hash"), CLUSTER_ID]
#: what the founding protocol reads of a page (``plugin.founding``)
FOUNDING_SOURCE = [CLUSTER_ID, path("founding")]


def fold_mapping() -> dict[str, Any]:
    """The mapping of the ``newsfold`` object field (strict: only the fold fields)."""
    return {FOLD: {"type": "object", "dynamic": "strict", "properties": copy.deepcopy(FOLD_FIELDS)}}


def fold_of(source: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fold fields of a ``_source`` (empty for a document newsfold has not folded)."""
    fold = (source or {}).get(FOLD)
    return fold if isinstance(fold, dict) else {}


def cluster_of(source: dict[str, Any] | None) -> str | None:
    """The cluster id of a ``_source``, or None."""
    return fold_of(source).get("cluster_id")


def flat(source: dict[str, Any] | None) -> dict[str, Any]:
    """A ``_source`` with its fold fields lifted to the top level (for display code and reports)."""
    source = source or {}
    out = {k: v for k, v in source.items() if k != FOLD}
    out.update(fold_of(source))
    return out


def fold_update(**fields: Any) -> dict[str, Any]:
    """The ``doc`` of a partial update that sets some fold fields."""
    return {FOLD: fields}


@dataclass(frozen=True)
class Page:
    """One page to ingest: raw bytes (or decoded HTML) and what is known about it."""

    html: bytes | str
    url: str | None = None
    id: str | None = None
    site: str | None = None
    lang: str | None = None
    published: str | None = None


@dataclass
class SignedPage:
    """A page ready to index: the article, its signature and its band keys."""

    page_id: str
    url: str | None
    url_key: str | None
    site: str | None
    article: Article
    signature: Signature
    band_keys: list[str]
    content_hash: str
    published: str | None = None
    title_key: str | None = None
    features: np.ndarray | None = None  # feature hashes counted by StoryStats when the page starts a story
    nearest_rejected: float | None = None  # best Jaccard among candidates that failed verification
    # the text's passage keys (plugin.novelty), compared with the story's reference
    passages: dict[str, Any] | None = None

    def day(self) -> str | None:
        """The page's publication day (YYYY-MM-DD) when known."""
        published = self.article.published or self.published
        return published[:10] if published else None

    def fold_fields(
        self,
        *,
        cluster_id: str,
        match: Match | None,
        representative: bool,
        folded: str,
        founding: str | None = None,
    ) -> dict[str, Any]:
        """``{"newsfold": {...}}``: every fold field of this page, so a re-ingest leaves nothing stale."""
        return {FOLD: {
            "cluster_id": cluster_id,
            "band_keys": self.band_keys,
            "signature": self.signature.encode(),
            "shingle_count": self.signature.shingle_count,
            "token_count": self.signature.token_count,
            "cjk_features": self.signature.cjk_features or None,
            "content_hash": self.content_hash,
            "url_key": self.url_key,
            "title_key": self.title_key,
            "site_key": self.site,
            "day": self.day(),
            "similarity": round(match.similarity, 4) if match else None,
            "matched_id": match.page_id if match else None,
            "nearest_rejected": round(self.nearest_rejected, 4) if self.nearest_rejected is not None else None,
            "representative": True if representative else None,
            "folded": folded,
            "passages": self.passages,
            "wire": self.article.wire,
            "founding": founding,
        }}

    def own_document(self, *, cluster_id: str, match: Match | None, ingested: str) -> dict[str, Any]:
        """The whole ``_source`` of this page in newsfold's own index (fold and article fields)."""
        doc = self.fold_fields(cluster_id=cluster_id, match=match, representative=False, folded=ingested)
        doc.update(self.content_fields(ingested=ingested))
        return doc

    def content_fields(self, *, ingested: str) -> dict[str, Any]:
        """The article fields newsfold's own index stores."""
        return {
            "title": self.article.title,
            "body": self.article.text,
            "url": self.url,
            "site": self.site,
            "lang": self.article.lang,
            # a date the page states wins over one given from outside (often a crawl date)
            "published": self.article.published or self.published,
            "ingested": ingested,
            "title_affixes": title_affixes(self.article.title) or None,
            "lede": lede(self.article.text),
            "image": self.article.image,
        }


@dataclass
class Outcome:
    """What happened to one page."""

    page_id: str
    status: str  # new, duplicate, merged, updated, unchanged, rejected (deleted, missing: delete_pages)
    cluster_id: str | None = None
    similarity: float | None = None
    matched_id: str | None = None
    reason: str | None = None
    detail: str | None = None
    #: the stories this page's call folded into ``cluster_id`` and that no longer exist (status ``merged``)
    merged_clusters: list[str] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Candidate:
    """An indexed page as the verifier sees it (read back from its fold fields)."""

    page_id: str
    cluster_id: str
    signature: Signature
    site: str | None = None
    title_key: str | None = None
    url_key: str | None = None
    day: str | None = None


def read_signature(source: dict[str, Any]) -> Signature | None:
    """The stored signature of a ``_source`` (None when the page has none)."""
    src = source[FOLD] if isinstance(source.get(FOLD), dict) else source  # stored, or lifted by flat()
    if not src.get("signature"):
        return None
    return Signature.decode(
        src["signature"],
        shingle_count=int(src.get("shingle_count") or 0),
        token_count=int(src.get("token_count") or 0),
        cjk_features=src.get("cjk_features") or "",
    )


def read_candidate(hit: dict[str, Any]) -> Candidate | None:
    """A search or mget hit as a :class:`Candidate`; None for a document newsfold has not folded."""
    sig = read_signature(hit.get("_source") or {})
    src = fold_of(hit.get("_source"))
    if sig is None or not src.get("cluster_id"):
        return None
    day = src.get("day")
    return Candidate(
        hit["_id"],
        src["cluster_id"],
        sig,
        site=src.get("site_key"),
        title_key=src.get("title_key"),
        url_key=src.get("url_key"),
        day=day if isinstance(day, str) else None,
    )


def site_signals(a: SignedPage | Candidate, b: SignedPage | Candidate) -> SiteSignals:
    """The per-site signals of a pair (URL and title only count within one site)."""
    if not a.site or a.site != b.site:
        return NO_SIGNALS
    day_a, day_b = (x.day() if isinstance(x, SignedPage) else x.day for x in (a, b))
    return SiteSignals(
        same_site=True,
        same_title=bool(a.title_key) and a.title_key == b.title_key and day_a is not None and day_a == day_b,
        same_url=bool(a.url_key) and a.url_key == b.url_key,
    )
