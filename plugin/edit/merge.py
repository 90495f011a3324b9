"""Merge two stories into one: the correction, its effect on the clusters and its undo.

The correction records a must-link between one page of each story and releases the earlier cannot-links
between their pages; the losing story is relabelled into the survivor (``plugin.fold.cluster.merge_survivor``).
Its undo moves the pages the merge moved that are still in the merged story back under their old name
(pages ingested since stay where they are), decided before the undo is logged (``Correction.restore``) so
that a second run moves the same pages to the same story; a merge logged before memberships were kept
is reclustered instead.
"""

from __future__ import annotations

import hashlib
from typing import Any

from elasticsearch import Elasticsearch

from newsfold.plugin.edit.correction_log import (
    Correction,
    CorrectionError,
    check_note,
    check_page_id,
    check_user,
    new_correction,
    record_correction,
)
from newsfold.plugin.edit.steps import cut_off_correction, finish, restored_pairs
from newsfold.plugin.errors import refusals_as_server_errors
from newsfold.plugin.fold import founding
from newsfold.plugin.fold.cluster import merge_survivor, pair
from newsfold.plugin.fold.constraints import load_constraints
from newsfold.plugin.fold.document import fold_update
from newsfold.plugin.fold.provenance import refresh_origins
from newsfold.plugin.fold.regroup import recluster, relabel
from newsfold.plugin.fold.store import bulk_write, cluster_page_ids, current_labels
from newsfold.plugin.settings import Settings


@refusals_as_server_errors("merge_clusters")
def merge_clusters(
    cluster_a: str, cluster_b: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Fold two clusters into one story; the survivor is as ``plugin.fold.cluster.merge_survivor`` says.

    Records a must-link between one page of each cluster (the page named
    like its cluster, else its smallest page id) and releases the earlier
    cannot-links between the two clusters' pages (they stay in the log,
    marked ``superseded_by``), then relabels.

    Args:
        cluster_a, cluster_b: the two clusters, in either order.
        user, client, settings, note: as for every correction (``plugin.edit.corrections``).

    Raises:
        CorrectionError: the same cluster twice, an unknown cluster, or a
            missing user.
    """
    a, b = check_page_id(cluster_a, "cluster_a"), check_page_id(cluster_b, "cluster_b")
    user, note = check_user(user), check_note(note)
    if a == b:
        raise CorrectionError(f"clusters {a!r} and {b!r} are the same cluster")
    cut_off = cut_off_correction("merge", client=client, settings=settings, clusters=[a, b])
    if cut_off is not None:
        return finish(cut_off, apply, client=client, settings=settings)
    members = cluster_page_ids([a, b], client=client, settings=settings)
    for c in (a, b):
        if not members[c]:
            raise CorrectionError(f"unknown cluster {c!r}")
    anchors = [c if c in members[c] else min(members[c]) for c in (a, b)]
    rules = load_constraints(members[a] + members[b], client=client, settings=settings, labels=False)
    in_a, in_b = set(members[a]), set(members[b])
    released = sorted(p for p in rules.cannot_link if {p[0], p[1]} & in_a and {p[0], p[1]} & in_b)
    correction = new_correction(
        "merge",
        user=user,
        note=note,
        pages=anchors,
        clusters=[a, b],
        must_link=[pair(*anchors)],
        released=released,
        before={c: sorted(members[c]) for c in (a, b)},  # what an undo restores
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, apply, client=client, settings=settings)


def apply(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    """Relabel the losing cluster into the survivor (pages left in it move; none left: nothing moves), then the
    survivor's origin."""
    survivor, (loser,) = merge_survivor(tuple(correction.clusters))
    relabel(loser, survivor, client=client, settings=settings)
    refresh_origins([survivor], client=client, settings=settings)


def plan_undo(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> dict[str, Any]:
    """Which pages the undo of a merge moves back, from which story to which name (empty: none move).

    The pages of the story the merge moved (``before``) that are still in the merged cluster go back under
    that story's old id, or a free name when another story carries it now.
    """
    if not set(target.must_link) & restored_pairs(undo) or not target.before:
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


def undo(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    """Move the pages of the plan (``Correction.restore``) back; a merge logged before memberships were kept is
    reclustered instead."""
    if not set(target.must_link) & restored_pairs(undo):
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
