"""The stored-document format: what newsfold writes into ``_source``, and reading it back.

A document carries two groups of fields:

- **fold fields** (:data:`FOLD_FIELDS`): what newsfold needs to find and keep a
  page's cluster (band keys, signature, cluster id, evidence keys, the match
  that folded it). ``ingest`` writes exactly these into any index, newsfold's
  own or a host's, with partial updates, so a host's own fields are never
  touched. Their mapping is the component template (``plugin.fold.index``).
- **content fields** (:data:`CONTENT_FIELDS`): the article as newsfold's own
  index shows it (title, body, url, site, language, dates). A host index has
  its own; newsfold writes them only into its own index.

Everything that builds or reads ``_source`` goes through this module: the
ingest path, the corrections, the reindex, the web and the admin.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newsfold.plugin.extract.headlines import lede, title_affixes
from newsfold.plugin.fold.cluster import NO_SIGNALS, SiteSignals
from newsfold.plugin.fold.origin_rule import believed_time
from newsfold.plugin.hits import ARTICLE_SOURCE, COMPARE_SOURCE, FOLD_SOURCE
from newsfold.plugin.sign.signature import Signature, tokens_signature
from newsfold.plugin.sign.signed_page import Page as Page  # re-exported: the 0.1 path newsfold.plugin.fold.document
from newsfold.plugin.sign.signed_page import SignedPage
from newsfold.plugin.urls import registrable_domain

if TYPE_CHECKING:
    from newsfold.plugin.fold.cluster import Match

#: the one object field holding every fold field in a document
FOLD = "newsfold"
#: the fold fields (inside ``newsfold``) and their Elasticsearch mapping
FOLD_FIELDS: dict[str, dict[str, Any]] = {
    "cluster_id": {"type": "keyword"},
    #: the signature, stored once (fold layout 8): its band tokens joined by spaces (``plugin.sign.signature.
    #: band_tokens``). Not indexed as a whole; its ``terms`` sub-field (whitespace-split, no frequencies, no
    #: norms, a match scoring 1) is what the band lookup asks, and Elasticsearch derives it again from
    #: ``_source`` on every write, a host's partial update included
    "bands": {
        "type": "keyword",
        "index": False,
        "doc_values": False,
        "fields": {
            "terms": {
                "type": "text",
                "analyzer": "whitespace",
                "index_options": "docs",
                "norms": False,
                "similarity": "boolean",
            }
        },
    },
    #: layouts up to 7: the band keys and the signature (32-bit values, base64), read and looked up until
    #: ``newsfold reindex`` (or a host's re-ingest) rewrites the page
    "band_keys": {"type": "keyword", "doc_values": False, "similarity": "boolean"},
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
    #: set on the page that founds a story, to the story's name; the story is pending until ``ingest`` commits it
    #: (its outcome ``new``) or a merge claims it, each by creating its mark in the founding index
    #: (``plugin.fold.founding``); a pending story yields to a committed one in a merge
    "founding": {"type": "keyword"},
    #: fold layout 8 and before: the token of the commit that cleared ``founding`` on the page (now on the mark)
    "committed_by": {"type": "keyword", "index": False, "doc_values": False},
    # provenance (plugin.fold.provenance): the agency this page credits, and its story's origin, written on every
    # page of the story (the wire when versions credit one, else the site of its earliest version)
    "wire": {"type": "keyword", "ignore_above": 256},
    "origin_wire": {"type": "keyword", "ignore_above": 256},
    "origin_site": {"type": "keyword"},
    "origin_id": {"type": "keyword"},
    # what provenance believes of the page (plugin.fold.origin_rule): where its credit was read (a visible credit
    # weighs more than metadata), its publisher (registrable domain: subdomains are one site), its time (the claim,
    # bounded by its first sighting; none when implausible) and whether it was first seen long after its claim
    "wire_by": {"type": "keyword", "ignore_above": 64},
    "domain": {"type": "keyword"},
    "believed_time": {"type": "date"},
    "archive_aged": {"type": "boolean"},
    #: when newsfold first saw the page (its first write; a re-ingest of changed content keeps it)
    "first_seen": {"type": "date"},
}
#: the story-level provenance fields: a batch writes its pages with their story's origin, and
#: ``plugin.fold.provenance.refresh_origins`` keeps every page of the story up to date after it
ORIGIN_FIELDS = ("origin_wire", "origin_site", "origin_id")
#: the article fields of newsfold's own index (a host index keeps its own)
CONTENT_FIELDS = (
    "title", "body", "url", "site", "lang", "published", "ingested", "title_affixes", "lede", "image", "section",
)  # fmt: skip


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
        "bands",
        "signature",
        "shingle_count",
        "token_count",
        "cjk_features",
        "site_key",
        "title_key",
        "url_key",
        "day",
        "origin_wire",
        "origin_site",
        "origin_id",
    )
]
#: what a search result shows of a version (newsfold's own index): a hit, and what compares it with its story's others
VERSION_SOURCE = [*ARTICLE_SOURCE, *(path(f) for f in (*FOLD_SOURCE, *COMPARE_SOURCE))]
#: what the unchanged check reads (and the first sighting a changed page keeps); ``band_keys``: a page of fold
#: layout 7 or before is not unchanged, its re-ingest moves it to the current layout
UNCHANGED_SOURCE = [path("content_hash"), CLUSTER_ID, path("first_seen"), path("band_keys")]
#: what the founding protocol reads of a page (``plugin.fold.founding``)
FOUNDING_SOURCE = [CLUSTER_ID, path("founding"), path("folded")]


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


def fold_fields(
    page: SignedPage,
    *,
    cluster_id: str,
    match: Match | None,
    representative: bool,
    folded: str,
    founding: str | None = None,
    first_seen: str | None = None,
) -> dict[str, Any]:
    """``{"newsfold": {...}}``: every fold field of a signed page, so a re-ingest leaves nothing stale.

    ``first_seen``: when a page written before was first seen (default: ``folded``, now); its time for
    provenance is bounded by its first sighting, not by its latest update.
    """
    seen = first_seen or folded
    believed, archive_aged = believed_time(claimed_time(page), seen=seen)
    return {
        FOLD: {
            "cluster_id": cluster_id,
            "bands": " ".join(page.band_keys),
            "band_keys": None,  # a page stored at layout 7 or before loses its old copies
            "signature": None,
            "shingle_count": page.signature.shingle_count,
            "token_count": page.signature.token_count,
            "cjk_features": page.signature.cjk_features or None,
            "content_hash": page.content_hash,
            "url_key": page.url_key,
            "title_key": page.title_key,
            "site_key": page.site,
            "day": page.day(),
            "similarity": round(match.similarity, 4) if match else None,
            "matched_id": match.page_id if match else None,
            "nearest_rejected": round(page.nearest_rejected, 4) if page.nearest_rejected is not None else None,
            "representative": True if representative else None,
            "folded": folded,
            "passages": page.passages,
            "wire": page.article.wire,
            "wire_by": page.article.wire_by if page.article.wire else None,
            "domain": registrable_domain(page.site or page.url),
            "believed_time": believed,
            "archive_aged": archive_aged if believed else None,
            "first_seen": seen,
            "founding": founding,
            "committed_by": None,
        }
    }


def without_nulls(doc: dict[str, Any]) -> dict[str, Any]:
    """A partial update's ``doc`` without the fields it would set to null (at both levels: article, fold)."""
    out = {k: v for k, v in doc.items() if v is not None}
    if isinstance(out.get(FOLD), dict):
        out[FOLD] = {k: v for k, v in out[FOLD].items() if v is not None}
    return out


def own_document(page: SignedPage, *, cluster_id: str, match: Match | None, ingested: str) -> dict[str, Any]:
    """The whole ``_source`` of a signed page in newsfold's own index (fold and article fields)."""
    doc = fold_fields(page, cluster_id=cluster_id, match=match, representative=False, folded=ingested)
    doc.update(content_fields(page, ingested=ingested))
    return doc


def content_fields(page: SignedPage, *, ingested: str) -> dict[str, Any]:
    """The article fields newsfold's own index stores."""
    return {
        "title": page.article.title,
        "body": page.article.text,
        "url": page.url,
        "site": page.site,
        "lang": page.article.lang,
        "published": claimed_time(page),
        "ingested": ingested,
        "title_affixes": title_affixes(page.article.title) or None,
        "lede": lede(page.article.text),
        "image": page.article.image,
        "section": page.article.section,
    }


def claimed_time(page: SignedPage) -> str | None:
    """The time a page claims: the date it states wins over one given from outside (often a crawl date), but
    a page that states only its day keeps the time of day given with it for that day."""
    stated, given = page.article.published, page.published
    if stated and len(stated) == 10 and given and len(given) > 10 and given[:10] == stated:
        return given
    return stated or given


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
    #: the origin its story's pages hold (``ORIGIN_FIELDS``; None before provenance wrote one)
    origin: dict[str, Any] | None = None


def read_signature(source: dict[str, Any]) -> Signature | None:
    """The stored signature of a ``_source`` (None when the page has none)."""
    src = source[FOLD] if isinstance(source.get(FOLD), dict) else source  # stored, or lifted by flat()
    shingles, tokens = int(src.get("shingle_count") or 0), int(src.get("token_count") or 0)
    cjk = str(src.get("cjk_features") or "")
    if src.get("bands"):
        return Signature(tokens_signature(str(src["bands"])), shingles, tokens, cjk)
    if src.get("signature"):  # fold layout 7 or before
        return Signature.decode(src["signature"], shingle_count=shingles, token_count=tokens, cjk_features=cjk)
    return None


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
        origin={f: src.get(f) for f in ORIGIN_FIELDS} if src.get("origin_id") else None,
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
