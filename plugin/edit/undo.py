"""Undo an editor correction: restore what it decided and the clusters as they were before it.

An undo is itself a correction (kind ``undo``, ``undoes`` the undone id), so
the log stays append-only and a rebuild honours it like any other. For every
pair and representative flag the undone correction decided, the undo writes
the decision in force before it (an earlier one, or none: ``released`` for a
pair, not representative for a flag). Where a **later** correction decided
the same pair or flag, the later decision is kept (it stays the latest) and
the undo reports that correction as a conflict. Then the clusters follow:

- split: the page rejoins the clusters its former fellow members are in now
  (a cluster a later cannot-link separates from it stays apart);
- merge: the pages the merge moved that are still in the merged cluster go
  back under their old story's name (pages ingested since stay where they
  are); a merge logged before memberships were kept is reclustered instead;
- not duplicates: when the two pages shared a cluster then, their clusters
  join again (unless a later cannot-link forbids it);
- representative: the flags are written as they were decided before.

Like every correction, an undo is logged pending, applied, then marked done
(``plugin.edit.correction_log.finish_correction``). An undo cut off in
between is finished by undoing the same correction again, or by
``reapply_corrections`` (:func:`finish_undo`). The undo of a merge decides
before it is logged which pages go back and under which name
(``restore``), so a second run moves the same pages to the same story.

See ``docs/corrections.md``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
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
from newsfold.plugin.edit.effects import finish
from newsfold.plugin.errors import refusals_as_server_errors
from newsfold.plugin.fold import founding
from newsfold.plugin.fold.cluster import merge_survivor
from newsfold.plugin.fold.constraints import decisions, fetch_corrections
from newsfold.plugin.fold.document import fold_update
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.fold.provenance import refresh_origins
from newsfold.plugin.fold.regroup import recluster, relabel
from newsfold.plugin.fold.store import bulk_write, cluster_page_ids, current_labels
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
        finish(target, client=client, settings=settings)
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
    if target.kind == "merge":
        undo.restore = _merge_plan(target, undo, client=client, settings=settings)
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
    effect = _EFFECTS[target.kind]
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


def _restored_pairs(undo: Correction) -> set[tuple[str, str]]:
    return {*undo.must_link, *undo.cannot_link, *undo.released}


def _rejoin(page: str, partners: Iterable[str], *, client: Elasticsearch, settings: Settings) -> list[str]:
    """Merge the cluster of ``page`` with the clusters its partners are in; returns those kept apart."""
    partners = sorted(set(partners) - {page})
    labels = current_labels([page, *partners], client=client, settings=settings)
    if page not in labels:
        return []
    clusters = {labels[p]: p for p in reversed(partners) if p in labels}  # cluster -> one of its partners
    apart = []
    for cluster, partner in sorted(clusters.items()):
        now = current_labels([page, partner], client=client, settings=settings)
        if len(now) < 2 or now[page] == now[partner]:
            continue
        survivor, (loser,) = merge_survivor((now[page], now[partner]))
        relabel(loser, survivor, client=client, settings=settings)
        after = current_labels([page, partner], client=client, settings=settings)
        if after.get(page) != after.get(partner):
            apart.append(cluster)  # a cannot-link spans them (relabel refused)
    refresh_origins(sorted(set(current_labels([page], client=client, settings=settings).values())),
                    client=client, settings=settings)  # fmt: skip
    return apart


def _after_split(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    page = target.pages[0]
    partners = [b if a == page else a for a, b in _restored_pairs(undo)]
    return _rejoin(page, partners, client=client, settings=settings)


def _after_not_duplicates(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    a, b = target.pages
    if len(target.clusters) != 1 or not _restored_pairs(undo):
        return []  # they were apart before, or a later correction decided about the pair
    return _rejoin(a, [b], client=client, settings=settings)


def _merge_plan(target: Correction, undo: Correction, *, client: Elasticsearch, settings: Settings) -> dict[str, Any]:
    """Which pages the undo of a merge moves back, from which story to which name (empty: none move).

    The pages of the story the merge moved (``before``) that are still in the merged cluster go back under
    that story's old id, or a free name when another story carries it now.
    """
    if not set(target.must_link) & _restored_pairs(undo) or not target.before:
        return {}  # a later correction decided about the linked pages, or a merge logged before `before` existed
    sides = target.before
    labels = current_labels(target.pages, client=client, settings=settings)
    merged = {labels[p] for p in target.pages if p in labels}
    if len(merged) != 1 or len(labels) != len(set(target.pages)):
        return {}  # a later correction separated them already (or a page is gone)
    (cluster,) = merged
    carried = cluster_page_ids(sorted(sides), client=client, settings=settings)
    gone = [name for name in sorted(sides) if not carried.get(name)]
    loser = gone[0] if len(gone) == 1 else merge_survivor(sides)[1][0]
    now = current_labels(sides[loser], client=client, settings=settings)
    moving = sorted(p for p in sides[loser] if now.get(p) == cluster)
    if not moving:
        return {}
    tag = hashlib.sha1(loser.encode("utf-8", "surrogatepass")).hexdigest()
    name = founding.free_names({loser: (moving[0], tag)}, besides=moving, client=client, settings=settings)[loser]
    return {"from": cluster, "to": name, "pages": moving}


def _after_merge(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    if not set(target.must_link) & _restored_pairs(undo):
        return []  # a later correction decided about the linked pages: it stands
    if not target.before:  # logged before memberships were kept: let verification separate them
        for cluster in sorted(set(current_labels(target.pages, client=client, settings=settings).values())):
            recluster(cluster, client=client, settings=settings)
        return []
    plan = undo.restore
    if not plan:
        return []
    source, name, pages = str(plan["from"]), str(plan["to"]), [str(p) for p in plan["pages"]]
    now = current_labels(pages, client=client, settings=settings)  # a second run moves those still to move
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": fold_update(cluster_id=name)}
        for pid in pages
        if now.get(pid) == source
    ]
    bulk_write(client, actions, settings=settings, refresh="wait_for", what=f"undo of merge {target.id}")
    refresh_origins(sorted({source, name}), client=client, settings=settings)
    return []


def _after_representative(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    flags = {**{p: False for p in undo.not_representative}, **{p: True for p in undo.representative}}
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": fold_update(representative=flag)}
        for pid, flag in sorted(flags.items())
    ]
    bulk_write(client, actions, settings=settings, refresh="wait_for", what=f"undo of {target.id}")
    clusters = sorted(set(current_labels(list(flags), client=client, settings=settings).values()))
    refresh_origins(clusters, client=client, settings=settings, refresh="wait_for")
    return []


_EFFECTS: dict[str, Callable[[Correction, Correction, Elasticsearch, Settings], list[str]]] = {
    "split": _after_split,
    "merge": _after_merge,
    "not_duplicates": _after_not_duplicates,
    "representative": _after_representative,
}
