"""Mark two pages as different stories: the correction, its effect on the clusters and its undo.

The correction records a cannot-link between the two pages; when they share a cluster, it is split again.
Its undo joins their clusters again when they shared one then (unless a later cannot-link forbids it).
"""

from __future__ import annotations

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
from newsfold.plugin.edit.steps import (
    check_size,
    cut_off_correction,
    finish,
    labels_of,
    refresh_origins_of,
    rejoin,
    restored_pairs,
)
from newsfold.plugin.errors import refusals_as_server_errors
from newsfold.plugin.fold.cluster import pair
from newsfold.plugin.fold.regroup import recluster
from newsfold.plugin.fold.store import cluster_page_ids, current_labels
from newsfold.plugin.settings import Settings


@refusals_as_server_errors("mark_not_duplicates")
def mark_not_duplicates(
    page_a: str, page_b: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Record that two pages are different stories; if they share a cluster, split it again.

    Args:
        page_a, page_b: the two pages, in either order.
        user, client, settings, note: as for every correction (``plugin.edit.corrections``).

    Raises:
        CorrectionError: the same page twice, an unknown page, a missing
            user, or a shared cluster too large to recluster.
    """
    a, b = check_page_id(page_a, "page_a"), check_page_id(page_b, "page_b")
    user, note = check_user(user), check_note(note)
    if a == b:
        raise CorrectionError(f"page {a!r} cannot be marked as not a duplicate of itself")
    cut_off = cut_off_correction("not_duplicates", client=client, settings=settings, pages=[a, b])
    if cut_off is not None:
        return finish(cut_off, apply, client=client, settings=settings)
    labels = labels_of([a, b], client=client, settings=settings)
    before = {}
    if labels[a] == labels[b]:
        before = {labels[a]: sorted(cluster_page_ids([labels[a]], client=client, settings=settings)[labels[a]])}
        check_size(labels[a], before[labels[a]])
    correction = new_correction(
        "not_duplicates",
        user=user,
        note=note,
        pages=[a, b],
        clusters=list(dict.fromkeys([labels[a], labels[b]])),
        cannot_link=[pair(a, b)],
        before=before,  # the shared cluster's pages: whose stories' origins the split decides again
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, apply, client=client, settings=settings)


def apply(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    """When the two pages share a cluster now, recluster it; then the origins of the stories the former members
    are in now (``before``)."""
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


def undo(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    """When the two pages shared a cluster then, their clusters join again; returns those kept apart."""
    a, b = target.pages
    if len(target.clusters) != 1 or not restored_pairs(undo):
        return []  # they were apart before, or a later correction decided about the pair
    return rejoin(a, [b], client=client, settings=settings)
