"""Make a page the representative of its story: the correction, its effect and its undo.

The page is flagged ``representative: true`` and the other members false; the representative is the story's
origin too (``plugin.fold.origin_rule``). The undo writes the flags as they were decided before.
"""

from __future__ import annotations

from elasticsearch import Elasticsearch

from newsfold.plugin.edit.correction_log import (
    Correction,
    check_note,
    check_page_id,
    check_user,
    new_correction,
    record_correction,
)
from newsfold.plugin.edit.steps import cut_off_correction, finish, labels_of, set_flags
from newsfold.plugin.errors import refusals_as_server_errors
from newsfold.plugin.fold.provenance import refresh_origins
from newsfold.plugin.fold.store import cluster_page_ids, current_labels
from newsfold.plugin.settings import Settings


@refusals_as_server_errors("set_representative")
def set_representative(
    page_id: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Make a page the version shown for its story (``representative: true``; false on the other members), and
    its origin: its wire when it credits one, else its site, whatever is ingested later.

    Args:
        page_id: the page to show.
        user, client, settings, note: as for every correction (``plugin.edit.corrections``).

    Raises:
        CorrectionError: unknown page or a missing user.
    """
    page_id, user, note = check_page_id(page_id), check_user(user), check_note(note)
    cut_off = cut_off_correction("representative", client=client, settings=settings, pages=[page_id])
    if cut_off is not None:
        return finish(cut_off, apply, client=client, settings=settings)
    cluster = labels_of([page_id], client=client, settings=settings)[page_id]
    members = cluster_page_ids([cluster], client=client, settings=settings)[cluster]
    others = sorted(m for m in members if m != page_id)
    correction = new_correction(
        "representative", user=user, note=note, pages=[page_id], clusters=[cluster], not_representative=others
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, apply, client=client, settings=settings)


def apply(correction: Correction, client: Elasticsearch, settings: Settings) -> None:
    """The flags, then the story's origin."""
    (page_id,) = correction.pages
    set_flags({page_id: True, **{p: False for p in correction.not_representative}}, client=client, settings=settings)
    # the representative is the story's origin too (plugin.fold.origin_rule): an editor's word on provenance
    refresh_origins(correction.clusters[:1], client=client, settings=settings, refresh="wait_for")


def undo(target: Correction, undo: Correction, client: Elasticsearch, settings: Settings) -> list[str]:
    """The flags as they were decided before, then the origins of the stories they are in."""
    flags = {**{p: False for p in undo.not_representative}, **{p: True for p in undo.representative}}
    set_flags(flags, client=client, settings=settings, what=f"undo of {target.id}")
    clusters = sorted(set(current_labels(list(flags), client=client, settings=settings).values()))
    refresh_origins(clusters, client=client, settings=settings, refresh="wait_for")
    return []
