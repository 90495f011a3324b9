"""What each correction does to the clusters once it is logged, written so that it can be applied again.

A correction is logged pending, then its effect is applied, then it is marked
done (``plugin.edit.correction_log.finish_correction``). A call cut off
anywhere in between leaves the correction pending; repeating the call or
``reapply_corrections`` applies the effect again from the start. So every
effect here reads what it acts on from the log entry and the index as they
are now, and writes absolute values:

- split: recluster the cluster the page was in, then decide the origin of
  the stories its former members are in now;
- merge: relabel the losing cluster into the survivor (pages left in it
  move; none left: nothing moves), then the survivor's origin;
- not duplicates: when the two pages share a cluster now, recluster it;
  the origins of the stories the former members are in now (``before``);
- representative: the flags, then the story's origin.

The undo of each kind is in ``plugin.edit.undo``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from elasticsearch import Elasticsearch

from newsfold.plugin.edit.correction_log import Correction, finish_correction
from newsfold.plugin.fold.cluster import merge_survivor
from newsfold.plugin.fold.document import fold_update
from newsfold.plugin.fold.provenance import refresh_origins
from newsfold.plugin.fold.regroup import recluster, relabel
from newsfold.plugin.fold.store import bulk_write, cluster_page_ids, current_labels
from newsfold.plugin.settings import Settings


def finish(correction: Correction, *, client: Elasticsearch, settings: Settings) -> Correction:
    """Apply a logged correction's effect (not an undo's: ``plugin.edit.undo``) and mark it done."""
    effect = EFFECTS[correction.kind]
    finish_correction(correction, lambda: effect(correction, client, settings), client=client, settings=settings)
    return correction


def refresh_origins_of(page_ids: Iterable[str], *, client: Elasticsearch, settings: Settings) -> None:
    """Decide again the origin of the stories some pages belong to now (after a split)."""
    refresh_origins(sorted(set(current_labels(page_ids, client=client, settings=settings).values())),
                    client=client, settings=settings)  # fmt: skip


def set_flags(flags: dict[str, bool], *, client: Elasticsearch, settings: Settings) -> None:
    """Write ``representative`` on pages with ``refresh=wait_for`` (a page deleted meanwhile is skipped)."""
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": fold_update(representative=flag)}
        for pid, flag in sorted(flags.items())
    ]
    bulk_write(client, actions, settings=settings, refresh="wait_for", what="setting representative flags")


def _split(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    recluster(correction.clusters[0], client=client, settings=settings)
    refresh_origins_of(correction.touches(), client=client, settings=settings)


def _merge(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    survivor, (loser,) = merge_survivor(tuple(correction.clusters))
    relabel(loser, survivor, client=client, settings=settings)
    refresh_origins([survivor], client=client, settings=settings)


def _not_duplicates(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    a, b = correction.pages
    members = [p for pages in correction.before.values() for p in pages]
    # read the labels after the correction is visible: a concurrent merge is either seen here or sees the
    # correction itself (plugin.fold.regroup.relabel checks before and after moving pages)
    now = current_labels([a, b], client=client, settings=settings)
    if now.get(a) is not None and now.get(a) == now.get(b):
        members += cluster_page_ids([now[a]], client=client, settings=settings)[now[a]]
        recluster(now[a], client=client, settings=settings)
    if members:
        refresh_origins_of(members, client=client, settings=settings)


def _representative(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    (page_id,) = correction.pages
    set_flags({page_id: True, **{p: False for p in correction.not_representative}}, client=client, settings=settings)
    # the representative is the story's origin too (plugin.fold.origin_rule): an editor's word on provenance
    refresh_origins(correction.clusters[:1], client=client, settings=settings, refresh="wait_for")


EFFECTS: dict[str, Callable[[Correction, Elasticsearch, Settings], None]] = {
    "split": _split,
    "merge": _merge,
    "not_duplicates": _not_duplicates,
    "representative": _representative,
}
