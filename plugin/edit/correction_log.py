"""The corrections log: what a correction records, how it is checked, stored and listed.

Each editor correction (``plugin.edit.corrections``) is one document in the
corrections index (``mappings/corrections.json``): who, when, what, and the
page constraints it yields. The log is append-only; a later correction that
overrides an earlier decision marks the earlier one ``superseded_by`` for
the reader, while decisions themselves are read by ``plugin.fold.constraints``.

A correction is logged ``pending`` before its effect on the clusters is
applied, and marked done after (:func:`record_correction`,
:func:`finish_correction`): its decisions are in force from the start, and a
correction cut off between the two (a node restarting, a connection lost) is
found again (:func:`pending_corrections`) and finished by repeating the call
or by ``reapply_corrections``. Every effect is written to be applied again.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from elasticsearch import ConflictError, Elasticsearch, NotFoundError

from newsfold.plugin.errors import InputError, refusals_as_server_errors
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.cluster import pair
from newsfold.plugin.fold.constraints import decisions, fetch_corrections
from newsfold.plugin.fold.index import (
    corrections_index,
    corrections_index_body,
    corrections_index_body_fields,
    create_index,
    wait_until_active,
)
from newsfold.plugin.ids import MAX_NAME_BYTES, id_problem, shown
from newsfold.plugin.settings import Settings

log = logging.getLogger(__name__)

UNDO = "undo"  # the kind of a correction that undoes another (``plugin.edit.undo``)
#: the longest page id or story name a correction may name (``plugin.ids``)
MAX_ID_CHARS = MAX_NAME_BYTES
MAX_USER_CHARS = 200
MAX_NOTE_CHARS = 2000
MAX_LOG_SIZE = 1000
MARK_ATTEMPTS = 5
#: pending corrections read at once (a correction is pending only while its call runs, or after it was cut off)
MAX_PENDING = 1000

T = TypeVar("T")


class CorrectionError(InputError):
    """An invalid correction request (unknown page, same cluster, ...); the message says what."""


def _pairs(items: Iterable[Any] | None) -> list[tuple[str, str]]:
    out = []
    for item in items or []:
        a, b = (item["a"], item["b"]) if isinstance(item, dict) else item
        out.append(pair(str(a), str(b)))
    return out


@dataclass
class Correction:
    """One logged editor decision and the page constraints it yields."""

    id: str
    kind: str  # a kind of ``plugin.edit.kinds.KINDS``, or "undo"
    pages: list[str]  # the pages the editor named
    clusters: list[str]  # the clusters involved, as they were
    user: str
    at: str  # ISO 8601, UTC
    note: str | None = None
    must_link: list[tuple[str, str]] = field(default_factory=list)
    cannot_link: list[tuple[str, str]] = field(default_factory=list)
    released: list[tuple[str, str]] = field(default_factory=list)  # earlier cannot-links this one lifts
    not_representative: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)  # later corrections that overrode some decision
    undoes: str | None = None  # an undo: the correction it undoes
    representative: list[str] = field(default_factory=list)  # an undo: pages made representative again
    before: dict[str, list[str]] = field(default_factory=dict)  # a merge: each cluster's pages before it
    #: logged, its effect on the clusters not applied to the end yet (``finish_correction``)
    pending: bool = False
    #: an undo of a merge: the pages it moves back, from the merged story to the restored one
    restore: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The correction as JSON-ready data (pairs as two-item lists)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "pages": list(self.pages),
            "clusters": list(self.clusters),
            "user": self.user,
            "at": self.at,
            "note": self.note,
            "must_link": [list(p) for p in self.must_link],
            "cannot_link": [list(p) for p in self.cannot_link],
            "released": [list(p) for p in self.released],
            "not_representative": list(self.not_representative),
            "superseded_by": list(self.superseded_by),
            **({"undoes": self.undoes, "representative": list(self.representative)} if self.kind == UNDO else {}),
            **({"before": {c: list(p) for c, p in self.before.items()}} if self.before else {}),
            **({"restore": dict(self.restore)} if self.restore else {}),
            **({"pending": True} if self.pending else {}),
        }

    def touches(self) -> list[str]:
        """Every page the correction decides something about (the field lookups search)."""
        named = set(self.pages) | set(self.not_representative) | set(self.representative)
        for link in (*self.must_link, *self.cannot_link, *self.released):
            named.update(link)
        return sorted(named)

    def document(self) -> dict[str, Any]:
        """The stored form (``mappings/corrections.json``)."""
        doc = self.as_dict()
        for name in ("must_link", "cannot_link", "released"):
            doc[name] = [{"a": a, "b": b} for a, b in getattr(self, name)]
        doc["touches"] = self.touches()
        return doc

    @classmethod
    def from_source(cls, src: dict[str, Any]) -> Correction:
        """Inverse of :meth:`document`."""
        return cls(
            id=str(src["id"]),
            kind=str(src["kind"]),
            pages=list(src.get("pages") or []),
            clusters=list(src.get("clusters") or []),
            user=str(src.get("user") or ""),
            at=str(src.get("at") or ""),
            note=src.get("note"),
            must_link=_pairs(src.get("must_link")),
            cannot_link=_pairs(src.get("cannot_link")),
            released=_pairs(src.get("released")),
            not_representative=list(src.get("not_representative") or []),
            superseded_by=list(src.get("superseded_by") or []),
            undoes=src.get("undoes"),
            representative=list(src.get("representative") or []),
            before={str(c): list(p) for c, p in (src.get("before") or {}).items()},
            pending=bool(src.get("pending")),
            restore=dict(src.get("restore") or {}),
        )


def ensure_corrections_index(client: Elasticsearch, settings: Settings) -> None:
    """Create the corrections index from ``mappings/corrections.json`` if it is missing.

    Args:
        client: an Elasticsearch client.
        settings: gives the index name (:func:`corrections_index`) and replicas.
    """
    name = corrections_index(settings)
    if client.indices.exists(index=name):
        wait_until_active(client, name)  # another process may be creating it right now
        _add_new_fields(client, name)
        return
    create_index(client, name, corrections_index_body(settings))


def _add_new_fields(client: Elasticsearch, name: str) -> None:
    """Add the fields a newer mapping defines (``undoes``, ...) to a corrections index made before them."""
    current = client.indices.get_mapping(index=name)[name]["mappings"].get("properties", {})
    wanted = corrections_index_body_fields()
    missing = {f: spec for f, spec in wanted.items() if f not in current}
    if missing:
        client.indices.put_mapping(index=name, properties=missing)


def check_page_id(value: object, name: str = "page") -> str:
    """A page id or story name of a correction, checked against the id grammar (``plugin.ids``).

    Raises:
        CorrectionError: not text, or outside the grammar (the message names ``name`` and says why).
    """
    if not isinstance(value, str):
        raise CorrectionError(f"{name} must be a non-empty page id")
    problem = id_problem(value, max_bytes=MAX_NAME_BYTES)
    if problem is not None:
        raise CorrectionError(f"{name} {problem}: {shown(value)}")
    return value


def check_user(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CorrectionError("user is required: the log records who made each correction")
    value = value.strip()
    if len(value) > MAX_USER_CHARS or not value.isprintable():
        raise CorrectionError(f"user must be at most {MAX_USER_CHARS} printable characters")
    return value


def check_note(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise CorrectionError("note must be text")
    value = value.strip()
    if len(value) > MAX_NOTE_CHARS:
        raise CorrectionError(f"the note has {len(value)} characters; the limit is {MAX_NOTE_CHARS}")
    return value or None


def new_correction(
    kind: str, *, user: str, note: str | None, pages: list[str], clusters: list[str], **links: Any
) -> Correction:
    # time first in the id: corrections made in the same millisecond still have an order
    cid = f"{time.time_ns():016x}-{uuid.uuid4().hex[:8]}"
    at = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    return Correction(id=cid, kind=kind, pages=pages, clusters=clusters, user=user, at=at, note=note, **links)


def record_correction(correction: Correction, *, client: Elasticsearch, settings: Settings) -> None:
    """Log a correction as pending (visible to searches on return); its decisions are in force from then on.

    Then the caller applies its effect through :func:`finish_correction`.
    """
    ensure_corrections_index(client, settings)
    correction.pending = True
    client.index(
        index=corrections_index(settings),
        id=correction.id,
        document=correction.document(),
        op_type="create",
        refresh="wait_for",
    )


def finish_correction(
    correction: Correction, apply: Callable[[], T], *, client: Elasticsearch, settings: Settings
) -> T:
    """Finish a logged correction: mark the earlier ones it overrides, apply its effect, mark it done.

    Every step may be run again (after a failure, by the repeated call or by
    ``reapply_corrections``): the marks are added once, the effect is written
    as absolute values, and the done mark last.
    """
    touched = correction.touches()
    order = (correction.at, correction.id)
    docs = fetch_corrections(touched, client=client, settings=settings)
    earlier = decisions([d for d in docs if (str(d.get("at") or ""), str(d.get("id") or "")) < order], set(touched))
    overridden = set()
    for key, (_, value, _) in decisions([correction.document()]).items():
        prior = earlier.get(key)
        if prior is not None and prior[1] != value:
            overridden.add(prior[2])
    for old in sorted(overridden):
        _mark_superseded(old, correction.id, client=client, settings=settings)
    result = apply()
    if correction.pending:
        client.update(index=corrections_index(settings), id=correction.id, doc={"pending": False},
                      refresh="wait_for", retry_on_conflict=MARK_ATTEMPTS)  # fmt: skip
        correction.pending = False
    return result


def pending_corrections(
    *, client: Elasticsearch, settings: Settings, kind: str | None = None, undoes: str | None = None
) -> list[Correction]:
    """The corrections logged but not finished (oldest first), of one kind, or the undo of one correction.

    A term query on ``pending`` (a corrections index older than the field answers none; so does a missing one).
    """
    filters: list[dict[str, Any]] = [{"term": {"pending": True}}]
    filters += [{"term": {"kind": kind}}] if kind else []
    filters += [{"term": {"undoes": undoes}}] if undoes else []
    body: dict[str, Any] = {"query": {"bool": {"filter": filters}}, "size": MAX_PENDING,
                            "sort": [{"at": "asc"}, {"id": "asc"}]}  # fmt: skip
    hits = client.search(index=corrections_index(settings), ignore_unavailable=True, **body)["hits"]["hits"]
    return [Correction.from_source(hit["_source"]) for hit in hits]


def _mark_superseded(old_id: str, by: str, *, client: Elasticsearch, settings: Settings) -> None:
    """Add ``by`` to an earlier correction's ``superseded_by`` (for the log; decisions never read it)."""
    name = corrections_index(settings)
    for _ in range(MARK_ATTEMPTS):
        try:
            doc = client.get(index=name, id=old_id)
        except NotFoundError:
            return
        src = doc["_source"]
        marks = list(src.get("superseded_by") or [])
        if by in marks:
            return
        src["superseded_by"] = marks + [by]
        try:
            client.index(
                index=name,
                id=old_id,
                document=src,
                if_seq_no=doc["_seq_no"],
                if_primary_term=doc["_primary_term"],
                refresh="wait_for",
            )
            return
        except ConflictError:
            continue  # another correction marked it meanwhile: read again
    log.warning("could not mark correction %s as superseded by %s", old_id, by)


@refusals_as_server_errors("list_corrections")
def list_corrections(
    *,
    client: Elasticsearch,
    settings: Settings,
    cluster_id: str | None = None,
    page_id: str | None = None,
    offset: int = 0,
    size: int = 50,
) -> tuple[int, list[Correction]]:
    """The corrections log, newest first.

    Args:
        client: an Elasticsearch client.
        settings: gives the corrections index.
        cluster_id: only corrections involving this cluster (as it was then).
        page_id: only corrections deciding something about this page.
        offset: corrections to skip.
        size: corrections to return (at most 1,000).

    Returns:
        (total matching, this page of corrections); (0, []) before the first correction.

    Raises:
        CorrectionError: offset or size out of range.
    """
    if offset < 0 or not 1 <= size <= MAX_LOG_SIZE or offset + size > lookups.MAX_WINDOW:
        raise CorrectionError(
            f"offset {offset} and size {size} are out of range (size 1-{MAX_LOG_SIZE}, "
            f"offset + size at most {lookups.MAX_WINDOW})"
        )
    body = lookups.corrections_log(cluster_id=cluster_id, page_id=page_id, offset=offset, size=size)
    res = client.search(index=corrections_index(settings), ignore_unavailable=True, **body)
    total = int(res["hits"]["total"]["value"])
    return total, [Correction.from_source(hit["_source"]) for hit in res["hits"]["hits"]]
