"""Undo an editor correction: restore what it decided and the clusters as they were before it.

An undo is itself a correction (kind ``undo``, ``undoes`` the undone id), so
the log stays append-only and a rebuild honours it like any other. For every
pair and representative flag the undone correction decided, the undo writes
the decision in force before it (an earlier one, or none: ``released`` for a
pair, not representative for a flag). Where a **later** correction decided
the same pair or flag, the later decision is kept (it stays the latest) and
the undo reports that correction as a conflict. Then the clusters follow, as
the kind's undo says (``CorrectionKind.undo`` in ``plugin.edit.kinds``; each
in the kind's module: ``plugin.edit.split``, ``merge``, ``not_duplicates``,
``representative``).

Like every correction, an undo is logged pending, applied, then marked done
(``plugin.edit.correction_log.finish_correction``). An undo cut off in
between is finished by undoing the same correction again, or by
``reapply_corrections`` (:func:`finish_undo`). A kind whose undo must decide
something first (the undo of a merge: which pages go back and under which
name) says so in ``CorrectionKind.plan_undo``, kept in ``restore``, so a
second run moves the same pages to the same story.

See ``docs/corrections.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from elasticsearch import Elasticsearch, NotFoundError

from newsfold.plugin.edit.correction_log import (
    UNDO,
    Correction,
    CorrectionError,
    check_note,
    check_page_id,
    check_user,
    finish_correction,
    new_correction,
    pending_corrections,
    record_correction,
)
from newsfold.plugin.edit.kinds import finish_logged, kind_named
from newsfold.plugin.errors import refusals_as_server_errors
from newsfold.plugin.fold.constraints import decisions, fetch_corrections
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.settings import Settings

__all__ = ["Undone", "finish_undo", "undo_correction"]


@dataclass
class Undone:
    """An undo as logged, the correction it undid, and where it could not restore everything."""

    correction: Correction
    undone: Correction
    kept: list[str] = field(default_factory=list)  # later corrections whose decisions were kept (conflicts)
    apart: list[str] = field(default_factory=list)  # clusters a later cannot-link keeps apart


@refusals_as_server_errors("undo_correction")
def undo_correction(
    correction_id: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Undone:
    """Undo one logged correction (module docstring); its effect is visible to search on return.

    Args:
        correction_id: the id of the correction to undo (not an undo itself).
        user, client, settings, note: as for every correction (``plugin.edit.corrections``).

    An undo cut off by a failure (it is logged pending) is finished by the same call again.

    Raises:
        CorrectionError: unknown correction, an undo, a correction undone
            already, or one whose every decision a later correction changed.
    """
    correction_id = check_page_id(correction_id, "correction")
    user, note = check_user(user), check_note(note)
    target = _read(correction_id, client=client, settings=settings)
    if target.kind == UNDO:
        raise CorrectionError(f"correction {target.id} is an undo: make the correction it undid again instead")
    cut_off = next(iter(pending_corrections(client=client, settings=settings, kind=UNDO, undoes=target.id)), None)
    if cut_off is not None:
        return _finish(cut_off, target, client=client, settings=settings)
    undone_by = _undone_by(target.id, client=client, settings=settings)
    if undone_by:
        raise CorrectionError(f"correction {target.id} was undone already (by {undone_by})")
    if target.pending:  # cut off itself: finish it first, so that the undo undoes all of it
        finish_logged(target, client=client, settings=settings)
    restored, kept = _restored_decisions(target, client=client, settings=settings)
    if not any(restored.values()):
        raise CorrectionError(
            f"every decision of correction {target.id} was changed by later corrections ({', '.join(kept)}): "
            "nothing is left to undo"
        )
    undo = new_correction(
        UNDO, user=user, note=note, pages=list(target.pages), clusters=list(target.clusters), undoes=target.id,
        **restored,
    )  # fmt: skip
    plan = kind_named(target.kind).plan_undo
    if plan is not None:
        undo.restore = plan(target, undo, client, settings)
    record_correction(undo, client=client, settings=settings)
    return _finish(undo, target, kept, client=client, settings=settings)


def finish_undo(undo: Correction, *, client: Elasticsearch, settings: Settings) -> Undone:
    """Apply a logged undo's effect and mark it done (again: every step may run twice)."""
    if undo.undoes is None:
        raise CorrectionError(f"correction {undo.id} is not an undo")
    return _finish(undo, _read(undo.undoes, client=client, settings=settings), client=client, settings=settings)


def _finish(
    undo: Correction, target: Correction, kept: list[str] | None = None, *, client: Elasticsearch, settings: Settings
) -> Undone:
    if kept is None:  # a later run: the conflicts are the corrections logged between the two
        _, kept = _restored_decisions(target, until=(undo.at, undo.id), client=client, settings=settings)
    effect = kind_named(target.kind).undo
    apart = finish_correction(undo, lambda: effect(target, undo, client, settings), client=client, settings=settings)
    return Undone(correction=undo, undone=target, kept=kept, apart=apart)


def _read(correction_id: str, *, client: Elasticsearch, settings: Settings) -> Correction:
    try:
        doc = client.get(index=corrections_index(settings), id=correction_id)
    except NotFoundError:
        raise CorrectionError(f"unknown correction {correction_id!r}") from None
    return Correction.from_source(doc["_source"])


def _undone_by(correction_id: str, *, client: Elasticsearch, settings: Settings) -> str | None:
    body: dict[str, Any] = {"query": {"term": {"undoes": correction_id}}, "size": 1, "_source": ["id"]}
    hits = client.search(index=corrections_index(settings), ignore_unavailable=True, **body)["hits"]["hits"]
    return str(hits[0]["_source"]["id"]) if hits else None


def _restored_decisions(
    target: Correction, *, client: Elasticsearch, settings: Settings, until: tuple[str, str] | None = None
) -> tuple[dict[str, list[Any]], list[str]]:
    """The decisions in force before ``target`` on what it decided, and the later corrections that decided too
    (those logged before ``until``, when given)."""
    touched = set(target.touches())
    order = (target.at, target.id)
    docs = fetch_corrections(touched, client=client, settings=settings)
    earlier = decisions([d for d in docs if _order(d) < order], touched)
    later = decisions([d for d in docs if order < _order(d) and (until is None or _order(d) < until)], touched)
    out: dict[str, list[Any]] = {
        "must_link": [], "cannot_link": [], "released": [], "representative": [], "not_representative": []
    }  # fmt: skip
    kept: set[str] = set()
    for key in decisions([target.document()]):
        if key in later:
            kept.add(later[key][2])
            continue
        value = earlier[key][1] if key in earlier else None
        if key[0] == "pair":
            out[{"must": "must_link", "cannot": "cannot_link"}.get(str(value), "released")].append((key[1], key[2]))
        else:
            out["representative" if value is True else "not_representative"].append(key[1])
    return out, sorted(kept)


def _order(doc: dict[str, Any]) -> tuple[str, str]:
    """Where a stored correction stands in the log: its time, then its id."""
    return str(doc.get("at") or ""), str(doc.get("id") or "")
