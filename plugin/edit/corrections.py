"""Editor corrections: split a page out, merge two clusters, mark a pair "not duplicates", pick the representative.

Each kind is declared once in ``plugin.edit.kinds`` and made in its own module (``plugin.edit.split``,
``merge``, ``not_duplicates``, ``representative``); this module gives their functions under one name and
re-applies corrections after a reindex.

Every correction is a document in the corrections index (the log: who, when,
what) and yields constraints on page ids, never only on cluster ids, so they
survive a reindex, where every page is ingested again and cluster ids change:

- split P out of cluster C: cannot-link P with every other member of C;
- not duplicates (a, b): cannot-link a-b;
- merge A and B: must-link one page of A with one of B, and release the
  earlier cannot-links between the two clusters' pages;
- representative P: P represents its story, the other members do not.

For each pair (and each page's representative flag) the latest decision
wins (``plugin.fold.constraints``). A correction takes effect before the call
returns: it is logged pending with ``refresh=wait_for``, then the cluster is
split again (``plugin.fold.regroup.recluster``), relabelled or flagged, also
with ``refresh=wait_for`` (the kind's effect), then marked done. A call
cut off in between is finished by the same call again (it finds the pending
correction and applies its effect, logging nothing new) or by
:func:`reapply_corrections`. Ingest honours the constraints for later pages
(``plugin.fold.batch.prepare`` and ``plugin.fold.cluster.decide``). See
``docs/corrections.md``.

Every correction takes ``user`` (who decides; recorded in the log, required),
``client`` (an Elasticsearch client), ``settings`` (the articles alias and
the corrections index) and an optional ``note`` (a reason, kept in the log),
and returns the logged :class:`Correction`.
"""

from __future__ import annotations

import logging

from elasticsearch import Elasticsearch

from newsfold.plugin.edit.correction_log import (
    MAX_LOG_SIZE,
    UNDO,
    Correction,
    CorrectionError,
    list_corrections,
    pending_corrections,
)
from newsfold.plugin.edit.kinds import finish_logged
from newsfold.plugin.edit.merge import merge_clusters
from newsfold.plugin.edit.not_duplicates import mark_not_duplicates
from newsfold.plugin.edit.representative import set_representative
from newsfold.plugin.edit.split import split_page
from newsfold.plugin.edit.steps import cut_off_correction, set_flags
from newsfold.plugin.edit.undo import finish_undo
from newsfold.plugin.errors import InputError, refusals_as_server_errors
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.cluster import merge_survivor
from newsfold.plugin.fold.constraints import load_constraints
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.fold.regroup import recluster, relabel
from newsfold.plugin.fold.store import current_labels
from newsfold.plugin.settings import Settings

log = logging.getLogger(__name__)

__all__ = [
    "Correction",
    "CorrectionError",
    "cut_off_correction",
    "list_corrections",
    "mark_not_duplicates",
    "merge_clusters",
    "reapply_corrections",
    "set_representative",
    "split_page",
]


@refusals_as_server_errors("reapply_corrections")
def reapply_corrections(*, client: Elasticsearch, settings: Settings, since: str | None = None) -> int:
    """Finish every correction left pending, then apply those logged since ``since`` to ``settings.index`` again.

    A correction (or an undo) cut off after it was logged, by a failed
    request or a node restarting, is pending: its effect is applied here
    (oldest first) and it is marked done, whatever its time.

    For a reindex: pages the new index received before a correction was made
    (while the rebuild ran) did not see it. Call this after the alias swap
    with a time before the rebuild started. For the pages those corrections
    touch, it reclusters any cluster holding a cannot-link pair, merges the
    clusters of must-linked pages (unless a cannot-link spans them) and sets
    the representative flags. Idempotent.

    Args:
        client: an Elasticsearch client.
        settings: the articles alias and the corrections index.
        since: ISO 8601 time; None re-applies every correction.

    Returns:
        How many pending corrections were finished, plus how many clusters were split, merged or re-flagged.
    """
    changed = _finish_pending(client=client, settings=settings)
    touched: set[str] = set()
    after = None
    while True:
        body = lookups.corrections_since(since, size=MAX_LOG_SIZE, search_after=after)
        hits = client.search(index=corrections_index(settings), ignore_unavailable=True, **body)["hits"]["hits"]
        for hit in hits:
            touched.update(hit["_source"].get("touches") or [])
        if len(hits) < MAX_LOG_SIZE:
            break
        after = hits[-1]["sort"]
    if not touched:
        return changed
    rules = load_constraints(touched, client=client, settings=settings)
    for cluster_id in sorted(rules.split_clusters()):
        try:
            recluster(cluster_id, client=client, settings=settings)
        except InputError as exc:  # too large to recluster: as on the ingest path, the rest goes on
            log.warning("cluster %s holds a cannot-link pair but was not split again: %s", cluster_id, exc)
            continue
        changed += 1
    for a, b in rules.must_link:  # latest first, as ingest applies them
        labels = current_labels([a, b], client=client, settings=settings)
        if a in labels and b in labels and labels[a] != labels[b]:
            survivor, (loser,) = merge_survivor((labels[a], labels[b]))
            changed += bool(relabel(loser, survivor, client=client, settings=settings))
    if rules.representative:
        set_flags(dict(rules.representative), client=client, settings=settings)
        changed += sum(rules.representative.values())
    return changed


def _finish_pending(*, client: Elasticsearch, settings: Settings) -> int:
    """Finish every correction and undo left pending, oldest first; returns how many were finished."""
    finished = 0
    for cut_off in pending_corrections(client=client, settings=settings):
        try:
            if cut_off.kind == UNDO:
                finish_undo(cut_off, client=client, settings=settings)
            else:
                finish_logged(cut_off, client=client, settings=settings)
        except InputError as exc:  # e.g. its cluster grew too large to recluster: the others are still finished
            log.warning("correction %s stays pending: %s", cut_off.id, exc)
            continue
        finished += 1
    return finished
