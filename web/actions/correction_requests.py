"""The web's side of editor corrections: checking a request, applying it through ``plugin.edit.corrections``, the log.

Shared by the admin forms (``web.admin``) and the JSON API
(``web.api.correction_views``) so both check the same things and say the same. The
limits (id and note lengths, the log's window) are the core's own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from elasticsearch import NotFoundError

from newsfold.plugin.edit.correction_log import MAX_ID_CHARS, MAX_NOTE_CHARS, UNDO, Correction, check_page_id
from newsfold.plugin.edit.corrections import CorrectionError, cut_off_correction, list_corrections
from newsfold.plugin.edit.kinds import KINDS, CorrectionKind, kind_named
from newsfold.plugin.edit.undo import undo_correction
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.by_id import read_docs
from newsfold.plugin.fold.document import CLUSTER_ID
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.fold.lookups import MAX_WINDOW, cluster_ids_only
from newsfold.plugin.search.hits import read_versions
from newsfold.web.actions.correction_names import Names, read_names
from newsfold.web.actions.merge_check import merge_preview
from newsfold.web.formatting import Paged
from newsfold.web.resources import get_es, get_settings
from newsfold.web.validation import page_number

log = logging.getLogger(__name__)


class CorrectionFailed(Exception):
    """A correction request that cannot be applied; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@overload
def _text(
    fields: Mapping[str, Any], name: str, *, required: Literal[True] = True, limit: int = MAX_ID_CHARS
) -> str: ...
@overload
def _text(fields: Mapping[str, Any], name: str, *, required: bool, limit: int = MAX_ID_CHARS) -> str | None: ...
def _text(fields: Mapping[str, Any], name: str, *, required: bool = True, limit: int = MAX_ID_CHARS) -> str | None:
    value = fields.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise CorrectionFailed(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise CorrectionFailed(f"{name} must be a string, got {type(value).__name__}")
    value = value.strip()
    if len(value) > limit or any(ord(ch) < 32 and ch not in "\n\t" for ch in value):
        raise CorrectionFailed(f"{name} must be at most {limit} printable characters")
    return value


def page_cluster(page_id: str) -> str | None:
    """The cluster of a page (None: not folded), read in real time.

    Raises:
        CorrectionFailed: (404) there is no such page.
    """
    settings = get_settings()
    found = read_versions({"docs": read_docs(get_es(), settings.index, [page_id], source=[CLUSTER_ID])})
    if not found:
        raise CorrectionFailed(f"there is no page {page_id!r}", 404)
    return found[0].cluster_id


def _cut_off(kind: str, **named: list[str]) -> bool:
    """Whether the same correction was cut off partway (logged, not finished): the request then finishes it, and
    is not checked against the clusters, which it may have changed already (docs/corrections.md)."""
    return cut_off_correction(kind, client=get_es(), settings=get_settings(), **named) is not None


def _in_cluster(page_id: str, cluster_id: str) -> None:
    actual = page_cluster(page_id)
    if actual != cluster_id:
        raise CorrectionFailed(f"page {page_id!r} is not in cluster {cluster_id!r} (it is in {actual!r})", 409)


@dataclass
class Applied:
    """A correction that was applied, a sentence about it, and the cluster to show next (None: unknown)."""

    correction: Correction
    message: str
    cluster_id: str | None
    story: str | None = None  # a split: the story the page is in now (its new story)


def _other_member(cluster_id: str, page_id: str) -> str | None:
    """Another page of the cluster: after a split it tells where the rest of the cluster went."""
    body = cluster_ids_only(cluster_id, size=2)
    pages = read_versions(get_es().search(index=get_settings().index, **body).body)
    return next((page.id for page in pages if page.id != page_id), None)


def _has_pages(cluster_id: str) -> bool:
    query = cluster_ids_only(cluster_id)["query"]
    return bool(get_es().count(index=get_settings().index, query=query).get("count"))


def apply_correction(kind: str, *, cluster_id: str | None, fields: Mapping[str, Any], user: str | None) -> Applied:
    """Check and apply one correction of a kind of ``plugin.edit.kinds``; effects are visible to search on return.

    Args:
        kind: the kind's name (``split``, ``merge``, ``not_duplicates``, ``representative``, ...).
        cluster_id: the cluster the request was made on (None for a kind made on a pair, marked from the
            API, where the pages are only checked to exist).
        fields: the request's fields: the kind's (``CorrectionKind.fields``) and an optional ``note``.
        user: who asks (logged with the correction).

    Returns:
        The logged ``plugin.edit.corrections.Correction`` with a sentence for the
        editor and the cluster to show next (the request's cluster, or where
        its pages went when a split or merge gave them another id).

    Raises:
        CorrectionFailed: the request is invalid (400), names an unknown page
            (404), a page of another cluster (409) or a merge of two stories
            that are not similar without ``confirm`` (409).
    """
    try:
        entry = kind_named(kind)
    except CorrectionError as exc:
        raise CorrectionFailed(str(exc)) from None
    note = _text(fields, "note", required=False, limit=MAX_NOTE_CHARS)
    values: dict[str, Any] = {"cluster_id": cluster_id}
    for f in entry.fields:
        values[f.name] = _confirmed(fields.get(f.name)) if f.what == "flag" else _text(fields, f.name)
    if cluster_id is None and entry.scope == "story":
        raise CorrectionFailed(f"a {kind} correction is made on a cluster")
    try:
        return _apply(entry, values, {"user": user, "client": get_es(), "settings": get_settings(), "note": note})
    except CorrectionError as exc:
        raise CorrectionFailed(_in_headlines(str(exc), values)) from None
    except CorrectionFailed as exc:
        raise CorrectionFailed(_in_headlines(str(exc), values), exc.status) from None


def _in_headlines(message: str, values: Mapping[str, Any]) -> str:
    """A refusal's message with the pages and stories of the request (and the stories those pages are in) named
    by headline beside their ids, as every other correction message names them."""
    ids = [v for v in values.values() if isinstance(v, str) and v]
    names = read_names(ids, ids)  # an id of the other kind is simply not found
    return names.said(message)


def _apply(kind: CorrectionKind, values: dict[str, Any], common: dict[str, Any]) -> Applied:
    """Check the request against the clusters (unless it finishes a cut-off one), make it, say what changed."""
    cluster_id, ids = values["cluster_id"], [values[name] for name in kind.args]
    what = {f.name: f.what for f in kind.fields} | {"cluster_id": "story"}
    stories = [v for name, v in zip(kind.args, ids, strict=True) if what[name] == "story"]
    pages = [v for name, v in zip(kind.args, ids, strict=True) if what[name] == "page"]
    if len(set(ids)) < len(ids):  # a well-formed ask the state refuses
        same = "a cluster cannot be merged with itself" if stories else "choose two different pages"
        raise CorrectionFailed(same, 409)
    if not _cut_off(kind.name, **({"clusters": stories} if stories else {"pages": pages})):
        for page_id in pages:
            if cluster_id is None:
                page_cluster(page_id)
            else:
                _in_cluster(page_id, cluster_id)
        if len(stories) == 2:  # joining two stories: refused when they are not similar, unless confirmed
            _check_similar(stories[0], stories[1], confirmed=bool(values.get("confirm")))
    anchor = _other_member(cluster_id, pages[0]) if cluster_id and len(pages) == 1 else None
    before = read_names(pages, [*stories, *([cluster_id] if cluster_id else [])])  # a story merged away: its name
    done = kind.function(*ids, **common)
    survivor = next((c for c in done.clusters if _has_pages(c)), cluster_id) if stories else None
    after = read_names(pages, [survivor] if survivor else [])
    is_story = [what[name] == "story" for name in kind.args]
    now = [survivor if story else after.now.get(v) for story, v in zip(is_story, ids, strict=True)]
    follow = cluster_id if cluster_id and _has_pages(cluster_id) else page_cluster(anchor) if anchor else now[0]
    said = [before.story(v) if story else before.page(v) for story, v in zip(is_story, ids, strict=True)]
    words = dict(zip(("a", "b"), said, strict=False))
    words |= dict(zip(("a_now", "b_now"), map(after.story, now), strict=False))
    message = kind.message.format(story=before.story(cluster_id) if cluster_id else "", **words)
    return Applied(done, message, follow, now[0] if kind.reports_story else None)


def _confirmed(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "on", "yes")
    return value is True


def _check_similar(cluster_id: str, other: str, *, confirmed: bool) -> None:
    """Refuse (409) to merge two stories with no pair of pages at the copy threshold unless confirmed."""
    try:
        preview = merge_preview(get_es(), get_settings(), cluster_id, other)
    except LookupError as exc:
        raise CorrectionFailed(str(exc), 404) from None
    if preview.similar or confirmed:
        return
    best = "no comparable pair" if preview.best is None else f"the most similar pair has Jaccard {preview.best:.2f}"
    raise CorrectionFailed(
        f"clusters {cluster_id} and {other} are not similar ({best}, below the copy threshold "
        f"{preview.threshold:.2f}): look at the preview and confirm the merge (confirm: true) if they are one story",
        409,
    )


def _made_by(correction_id: str) -> str:
    """Who made the logged correction ``correction_id`` (CorrectionFailed 404 when there is none)."""
    try:
        correction_id = check_page_id(correction_id, "correction")
        doc = get_es().get(index=corrections_index(get_settings()), id=correction_id, source_includes=["user"])
    except CorrectionError as exc:
        raise CorrectionFailed(str(exc)) from None
    except NotFoundError:
        raise CorrectionFailed(f"unknown correction {correction_id!r}", 404) from None
    return str(doc["_source"].get("user") or "")


def apply_undo(correction_id: str, *, fields: Mapping[str, Any], user: str | None, admin: bool) -> Applied:
    """Undo a logged correction (``plugin.edit.undo``); the sentence says what later corrections kept.

    An editor undoes their own corrections; undoing one another user made needs the admin role (``admin``:
    a logged-in admin, or a token with the ``admin`` scope), and is logged and said as such.

    Raises:
        CorrectionFailed: (404) no such correction, (403) another user's without ``admin``, or (409) it
            cannot be undone (an undo, undone already, every decision changed later).
    """
    note = _text(fields, "note", required=False, limit=MAX_NOTE_CHARS)
    author = _made_by(correction_id)
    others = author != (user or "")
    if others and not admin:
        raise CorrectionFailed(
            f"correction {correction_id} was made by {author!r}, not by you ({user!r}): undoing another "
            "editor's correction needs the admin scope",
            403,
        )
    try:
        done = undo_correction(correction_id, user=user or "", client=get_es(), settings=get_settings(), note=note)
    except CorrectionError as exc:
        raise CorrectionFailed(str(exc), 404 if "unknown correction" in str(exc) else 409) from None
    names = read_names(done.undone.pages, done.apart)
    where = "; ".join(f"page {names.page(p)} is in story {names.story(names.now.get(p))}" for p in done.undone.pages)
    message = f"Correction {correction_id} ({done.undone.kind.replace('_', ' ')}) is undone: {where}."
    if others:
        log.warning("%r undid correction %s made by %r, as an admin", user, correction_id, author)
        message += f" It was made by {author}: undone with the admin role."
    if done.kept:
        message += (f" Later corrections decided about some of the same pages ({', '.join(done.kept)}): their"
                    " decisions are kept, since the latest decision wins.")  # fmt: skip
    if done.apart:
        apart = ", ".join(map(names.story, done.apart))
        message += f" Stories {apart} stay apart: a later correction says they are not duplicates."
    return Applied(done.correction, message, None)


@dataclass
class CorrectionLog(Paged):
    """One page of the corrections log, optionally for one cluster or page."""

    cluster_id: str | None = None
    page_id: str | None = None
    entries: list = field(default_factory=list)
    #: correction id -> the story the page a split took out is in now
    split_into: dict[str, str] = field(default_factory=dict)
    #: the headlines of the entries' pages and stories, and the story each page is in now
    names: Names = field(default_factory=Names)
    #: correction id -> the undo that undid it (such a correction has no Undo button)
    undone_by: dict[str, str] = field(default_factory=dict)

    @staticmethod
    def label(kind: str) -> str:
        """What the log calls a kind (``CorrectionKind.label``)."""
        return "Undo of" if kind == UNDO else next((k.label for k in KINDS if k.name == kind), kind)

    def url_args(self, page: int) -> dict:
        args = {"cluster_id": self.cluster_id, "page_id": self.page_id, "page": page if page > 1 else None}
        return {k: v for k, v in args.items() if v}

    def as_json(self) -> dict:
        return {
            "page": self.page,
            "page_size": self.page_size,
            "total": self.total,
            "corrections": [
                {
                    **c.as_dict(),
                    **({"split_into": self.split_into.get(c.id)} if c.kind == "split" else {}),
                    **self.named(c),
                }  # fmt: skip
                for c in self.entries
            ],
        }

    def named(self, correction: Correction) -> dict:
        """The headlines of a correction's pages and stories, and the story each of its pages is in now."""
        stories = [*correction.clusters, *(self.names.now[p] for p in correction.pages if p in self.names.now)]
        return {
            "headlines": {
                "pages": {p: self.names.pages[p] for p in correction.pages if p in self.names.pages},
                "stories": {c: self.names.stories[c] for c in stories if c in self.names.stories},
            },
            "now": {p: self.names.now[p] for p in correction.pages if p in self.names.now},
        }


def corrections_page(args: Mapping[str, str], *, page_size: int) -> CorrectionLog:
    """Read ``cluster_id``, ``page_id`` and ``page`` from request arguments and load that page of the log.

    Raises:
        InputError: an argument is malformed.
    """
    page = page_number(args.get("page"))
    if (page - 1) * page_size >= MAX_WINDOW:
        window = MAX_WINDOW
        raise InputError(f"page {page} is out of range (the log is paged through its first {window:,} entries)")
    filters = {}
    for name in ("cluster_id", "page_id"):
        value = (args.get(name) or "").strip()
        if len(value) > MAX_ID_CHARS:
            raise InputError(f"{name} must be at most {MAX_ID_CHARS} characters")
        filters[name] = value or None
    es, settings = get_es(), get_settings()
    total, entries = list_corrections(
        client=es, settings=settings, offset=(page - 1) * page_size, size=page_size, **filters
    )
    names = read_names([p for c in entries for p in c.pages], [s for c in entries for s in c.clusters])
    split = {c.id: c.pages[0] for c in entries if c.kind == "split" and c.pages}
    into = {cid: names.now[pid] for cid, pid in split.items() if pid in names.now}
    undone = _undone_by([c.id for c in entries if c.kind != "undo"])
    return CorrectionLog(page=page, page_size=page_size, total=total, entries=list(entries), split_into=into,
                         names=names, undone_by=undone, **filters)  # fmt: skip


def _undone_by(correction_ids: list[str]) -> dict[str, str]:
    """Which of some corrections were undone, and by which undo (one search of the log).

    An undo that is not finished (cut off, ``pending``) leaves its correction's Undo button, which finishes it.
    """
    if not correction_ids:
        return {}
    query = {"bool": {"filter": [{"terms": {"undoes": correction_ids}}], "must_not": [{"term": {"pending": True}}]}}
    body: dict[str, Any] = {"query": query, "size": len(correction_ids), "_source": ["id", "undoes"]}
    res = get_es().search(index=corrections_index(get_settings()), ignore_unavailable=True, **body)
    return {hit["_source"]["undoes"]: hit["_source"]["id"] for hit in res["hits"]["hits"]}
