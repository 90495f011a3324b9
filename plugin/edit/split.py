"""Split a page out of its story: the correction, its effect on the clusters and its undo.

The correction records a cannot-link between the page and every other member, then reclusters; its undo
lets the page rejoin the clusters its former fellow members are in now (a cluster a later cannot-link
separates from it stays apart).
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
from newsfold.plugin.fold.store import cluster_page_ids
from newsfold.plugin.settings import Settings


@refusals_as_server_errors("split_page")
def split_page(
    page_id: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Take a page out of its cluster: it is not a copy of any other page there.

    Records a cannot-link between the page and every other current member,
    then reclusters: the other members stay together where they verify as
    copies without the page (a page that only linked through it may leave
    too). Later copies never bring the page back into their group.

    Args:
        page_id: the page to split out.
        user, client, settings, note: as for every correction (``plugin.edit.corrections``).

    Raises:
        CorrectionError: unknown page, a page alone in its cluster, a
            missing user, or a cluster too large to recluster.
    """
    page_id, user, note = check_page_id(page_id), check_user(user), check_note(note)
    cut_off = cut_off_correction("split", client=client, settings=settings, pages=[page_id])
    if cut_off is not None:
        return finish(cut_off, apply, client=client, settings=settings)
    cluster = labels_of([page_id], client=client, settings=settings)[page_id]
    members = cluster_page_ids([cluster], client=client, settings=settings)[cluster]
    others = sorted(m for m in members if m != page_id)
    if not others:
        raise CorrectionError(f"page {page_id!r} is alone in cluster {cluster!r}: there is nothing to split")
    check_size(cluster, members)
    correction = new_correction(
        "split",
        user=user,
        note=note,
        pages=[page_id],
        clusters=[cluster],
        cannot_link=[pair(page_id, m) for m in others],
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, apply, client=client, settings=settings)


def apply(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    """Recluster the cluster the page was in, then decide the origin of the stories its former members are in now."""
    recluster(correction.clusters[0], client=client, settings=settings)
    refresh_origins_of(correction.touches(), client=client, settings=settings)


def undo(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    """The page rejoins the clusters its former fellow members are in now; returns those kept apart."""
    page = target.pages[0]
    partners = [b if a == page else a for a, b in restored_pairs(undo)]
    return rejoin(page, partners, client=client, settings=settings)
