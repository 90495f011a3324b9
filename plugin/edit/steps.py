"""The steps every kind of correction is made of: find a cut-off one, check, finish, rejoin.

A kind's module (``plugin.edit.split``, ``merge``, ``not_duplicates``, ``representative``) makes its
correction from these, and the table of ``plugin.edit.kinds`` names its functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from elasticsearch import Elasticsearch

from newsfold.plugin.edit.correction_log import Correction, CorrectionError, finish_correction, pending_corrections
from newsfold.plugin.fold.cluster import merge_survivor
from newsfold.plugin.fold.document import fold_update
from newsfold.plugin.fold.provenance import refresh_origins
from newsfold.plugin.fold.regroup import MAX_RECLUSTER_PAGES, relabel
from newsfold.plugin.fold.store import bulk_write, current_labels
from newsfold.plugin.settings import Settings

#: what a correction does to the clusters once it is logged, applied again after a failure: it reads what it acts on
#: from the log entry and the index as they are now, and writes absolute values
Effect = Callable[[Correction, Elasticsearch, Settings], None]
#: what the undo of a correction does to the clusters: (the correction, its undo) -> clusters kept apart
UndoEffect = Callable[[Correction, Correction, Elasticsearch, Settings], list[str]]
#: decided before an undo is logged (``Correction.restore``): what a second run of the undo moves the same way
UndoPlan = Callable[[Correction, Correction, Elasticsearch, Settings], dict[str, Any]]


def labels_of(page_ids: list[str], *, client: Elasticsearch, settings: Settings) -> dict[str, str]:
    """Realtime cluster ids of pages; an unknown page is a :class:`CorrectionError`."""
    labels = current_labels(page_ids, client=client, settings=settings)
    for pid in page_ids:
        if pid not in labels:
            raise CorrectionError(f"unknown page {pid!r}")
    return labels


def check_size(cluster_id: str, members: list[str]) -> None:
    """Refuse a correction that would recluster more pages than ``MAX_RECLUSTER_PAGES``."""
    if len(members) > MAX_RECLUSTER_PAGES:
        raise CorrectionError(
            f"cluster {cluster_id!r} has {len(members)} pages; corrections can split at most {MAX_RECLUSTER_PAGES}"
        )


def cut_off_correction(
    kind: str, *, client: Elasticsearch, settings: Settings, **named: list[str]
) -> Correction | None:
    """A correction of ``kind`` naming the same ``pages`` (or ``clusters``) that was logged but not finished.

    The same call again finishes it; a caller that checks a request against the clusters first (the web's
    forms) asks here, since the cut-off correction may have moved the pages already.
    """
    for correction in pending_corrections(client=client, settings=settings, kind=kind):
        if all(sorted(getattr(correction, name)) == sorted(values) for name, values in named.items()):
            return correction
    return None


def finish(correction: Correction, effect: Effect, *, client: Elasticsearch, settings: Settings) -> Correction:
    """Apply a logged correction's effect and mark it done (``plugin.edit.correction_log.finish_correction``)."""
    finish_correction(correction, lambda: effect(correction, client, settings), client=client, settings=settings)
    return correction


def refresh_origins_of(page_ids: Iterable[str], *, client: Elasticsearch, settings: Settings) -> None:
    """Decide again the origin of the stories some pages belong to now (after a split)."""
    refresh_origins(sorted(set(current_labels(page_ids, client=client, settings=settings).values())),
                    client=client, settings=settings)  # fmt: skip


def set_flags(flags: dict[str, bool], *, client: Elasticsearch, settings: Settings, what: str = "") -> None:
    """Write ``representative`` on pages with ``refresh=wait_for`` (a page deleted meanwhile is skipped)."""
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": fold_update(representative=flag)}
        for pid, flag in sorted(flags.items())
    ]
    bulk_write(client, actions, settings=settings, refresh="wait_for", what=what or "setting representative flags")


def restored_pairs(undo: Correction) -> set[tuple[str, str]]:
    """The pairs an undo decides again (whatever it restores them to)."""
    return {*undo.must_link, *undo.cannot_link, *undo.released}


def rejoin(page: str, partners: Iterable[str], *, client: Elasticsearch, settings: Settings) -> list[str]:
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
