"""The records a search hands out: a :class:`Version` for any hit of a page, a :class:`StoryHit` for a story.

An Elasticsearch hit (``{"_id", "_score", "_source", "highlight", ...}``) is
read here once, and everything above (the web's search, stories, feeds and
admin, the JSON API) reads the frozen record, never the raw ``_source``: its
public fields (``plugin.hits.PUBLIC_FIELDS``), story, wire, origin, relation
to the story's reference, a picture address safe to show, and its decoded
signature. Modelled on elasticsearch-py's ``Hit``.

Pure: no server is contacted.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from newsfold.plugin.fold.document import flat, fold_of, read_signature
from newsfold.plugin.hits import PUBLIC_FIELDS
from newsfold.plugin.search.version_relations import relation_of
from newsfold.plugin.sign.signature import Signature
from newsfold.plugin.urls import public_host

__all__ = ["Origin", "StoryHit", "Version", "checked_image", "decode_signature"]


@dataclass(frozen=True)
class Origin:
    """Where a story started, as its pages store it: the wire it credits, else the site, and the page's id."""

    id: str
    wire: str | None = None
    site: str | None = None

    def as_json(self) -> dict[str, Any]:
        """``{"wire", "site", "id"}``, as the JSON API and the templates show it."""
        return {"wire": self.wire, "site": self.site, "id": self.id}


@dataclass(frozen=True)
class Version:
    """One page of a story as a hit returned it (a search hit, a top hit, or a document read by id).

    ``image`` is a picture address safe to send a reader's browser to (:func:`checked_image`), ``relation``
    the page's relation to its story's reference (``plugin.sign.novelty``; None when unknown), ``signature``
    its decoded MinHash signature (None when missing or unreadable). ``stored`` holds every stored field
    read, the fold fields lifted to the top level (``plugin.fold.document.flat``), for the admin's evidence.
    """

    id: str
    cluster_id: str | None = None
    title: str | None = None
    url: str | None = None
    site: str | None = None
    lang: str | None = None
    published: str | None = None
    ingested: str | None = None
    lede: str | None = None
    image: str | None = None
    wire: str | None = None
    origin: Origin | None = None
    representative: bool = False
    relation: dict[str, Any] | None = None
    signature: Signature | None = field(default=None, repr=False, compare=False)
    score: float | None = None
    fragments: tuple[str, ...] = ()
    title_highlight: str | None = None
    stored: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_hit(cls, hit: Mapping[str, Any], references: Mapping[str, Mapping[str, Any]] | None = None) -> Version:
        """The record of a raw hit (or a document of ``get``/``mget``); ``references`` (``cluster id -> reference
        hit``, ``plugin.search.version_relations.read_references``) give it its relation."""
        source = hit.get("_source") or {}
        fold = fold_of(source)
        highlight = hit.get("highlight") or {}
        titles = highlight.get("title") or []
        score = hit.get("_score")
        stored = flat(source)
        for key in ("bands", "signature", "band_keys"):  # the signature is read once, into ``signature``
            stored.pop(key, None)
        return cls(
            id=str(hit.get("_id")),
            cluster_id=fold.get("cluster_id"),
            **{name: source.get(name) for name in PUBLIC_FIELDS},
            ingested=source.get("ingested"),
            lede=source.get("lede"),
            image=checked_image(source.get("image")),
            wire=fold.get("wire"),
            origin=Origin(id=fold["origin_id"], wire=fold.get("origin_wire"), site=fold.get("origin_site"))
            if fold.get("origin_id")
            else None,
            representative=fold.get("representative") is True,
            relation=relation_of(hit, references) if references else None,
            signature=decode_signature(source),
            score=float(score) if isinstance(score, int | float) else None,
            fragments=tuple(highlight.get("body") or ()),
            title_highlight=titles[0] if titles else None,
            stored=stored,
        )

    @classmethod
    def from_source(cls, page_id: str, source: Mapping[str, Any]) -> Version:
        """The record of a stored ``_source`` known by its id."""
        return cls.from_hit({"_id": page_id, "_source": dict(source)})

    def public(self) -> dict[str, Any]:
        """The public fields (``plugin.hits.PUBLIC_FIELDS``), None for a field the page lacks."""
        return {name: getattr(self, name) for name in PUBLIC_FIELDS}


@dataclass(frozen=True)
class StoryHit:
    """A story as a search found it: the version it shows (its face), the hit that matched (whose marked words
    ``shown`` carries), its other versions and its size."""

    shown: Version
    matched: Version
    versions: tuple[Version, ...] = ()
    size: int = 1

    @property
    def cluster_id(self) -> str | None:
        return self.shown.cluster_id or self.matched.cluster_id


def checked_image(value: object) -> str | None:
    """A stored picture address, only when it is an absolute http(s) URL on a public host (an index written
    before extraction checked hosts may hold others: a reader's browser must not be sent to them)."""
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        return None
    try:
        host = urlsplit(value).hostname
    except ValueError:
        return None
    return value if public_host(host) else None


def decode_signature(source: Mapping[str, Any]) -> Signature | None:
    """The stored signature of a ``_source`` (stored or flattened), or None when it is missing or unreadable."""
    try:
        return read_signature(dict(source))
    except (binascii.Error, ValueError, TypeError):
        return None


def versions_of_bucket(bucket: Mapping[str, Any] | None) -> Sequence[Mapping[str, Any]]:
    """The raw version hits of a ``versions_of`` bucket (none for no bucket)."""
    hits: Sequence[Mapping[str, Any]] = (bucket or {}).get("versions", {}).get("hits", {}).get("hits", [])
    return hits


def page_clusters(response: Mapping[str, Any]) -> list[str]:
    """The stories of a folded search's page, in its order, once each (what ``versions_of`` is asked about)."""
    hits = response.get("hits", {}).get("hits", [])
    return list(dict.fromkeys(c for hit in hits if (c := fold_of(hit.get("_source")).get("cluster_id"))))


def story_hits(
    response: Mapping[str, Any], versions: Mapping[str, Any] | None = None, *, agg: str = "clusters"
) -> list[StoryHit]:
    """The stories of a folded search's page, each read once into a :class:`StoryHit`.

    Args:
        response: the folded search's response (one hit per story, ``plugin.search.queries.collapsed_search``).
        versions: the response of ``versions_of(...)`` wrapped by ``with_references`` (its buckets under
            ``agg``), or None: the stories then have no other versions and no relations.

    Each story shows its face (``plugin.search.story_face``: the editor's representative, else the fullest
    version, else the earliest) when ``versions`` carries it (``with_faces``), else the hit that matched;
    the matched hit's marked words (its passage) are shown under the face's headline.
    """
    from newsfold.plugin.search.story_face import read_face
    from newsfold.plugin.search.version_relations import read_references

    buckets: dict[str, Mapping[str, Any]] = {}
    references: dict[str, Any] = {}
    if versions is not None:
        buckets = {b["key"]: b for b in (versions.get("aggregations") or {}).get(agg, {}).get("buckets", [])}
        references = read_references(versions, agg=agg)
    out = []
    hit: dict[str, Any]
    for hit in response.get("hits", {}).get("hits", []):
        bucket = buckets.get(fold_of(hit.get("_source")).get("cluster_id") or "")
        raw_versions = versions_of_bucket(bucket)
        matched = Version.from_hit(hit, references)
        face = read_face(bucket)
        shown = matched
        if face is not None and face.get("_id") != matched.id:
            shown = Version.from_hit(face, references)
            shown = replace(shown, fragments=matched.fragments, title_highlight=matched.title_highlight)
        others = tuple(Version.from_hit(v, references) for v in raw_versions if v.get("_id") != shown.id)
        size = int(bucket["doc_count"]) if bucket else 1 + len(others)
        out.append(StoryHit(shown=shown, matched=matched, versions=others, size=size))
    return out


def read_versions(response: Mapping[str, Any]) -> list[Version]:
    """The hits of a search response (or the found documents of an ``mget``), each read into a :class:`Version`."""
    if "docs" in response:
        return [Version.from_hit(doc) for doc in response["docs"] if doc.get("found")]
    return [Version.from_hit(hit) for hit in response.get("hits", {}).get("hits", [])]
