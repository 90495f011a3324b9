"""Where a story that an editor merged away went: its old id leads to the story that absorbed it.

A merge relabels the pages of one story with the other's id (``plugin.fold.cluster.merge_survivor``
decides which), so the old id names no page any more. The corrections log keeps the merge with one page
of each story (its must-link pair); those pages' clusters now are where the old story went, after later
merges too (a chain of merges is followed for free, since the pages carry the latest id). A merge that was
undone leads nowhere: the web answers its old address with a temporary redirect (307, ``no-store``), so a
reader who followed it before the undo finds the story there again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from newsfold.plugin.edit.correction_log import UNDO, list_corrections
from newsfold.plugin.fold.store import current_labels

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from newsfold.plugin.settings import Settings

#: merges of one story read from the log (newest first); a story merged more often than this is followed by these
MAX_MERGES = 20


def merged_into(cluster_id: str, *, client: Elasticsearch, settings: Settings) -> str | None:
    """The story that now holds a story merged away by an editor, or None (never merged, or nowhere to go).

    Costs one search of the corrections log (none of its index yet: a fast empty answer) and, when a merge
    names the story, one realtime ``mget`` of the merges' linked pages. Call it only for an id that names
    no page: a story that still has pages was not merged away.

    Args:
        cluster_id: the old story id.
        client: an Elasticsearch client.
        settings: gives the index and the corrections index.
    """
    _, logged = list_corrections(client=client, settings=settings, cluster_id=cluster_id, size=MAX_MERGES)
    undone = {c.undoes for c in logged if c.kind == UNDO}
    merges = [c for c in logged if c.kind == "merge" and cluster_id in c.clusters and c.id not in undone]
    pages = [page for c in merges for link in c.must_link for page in link]
    if not pages:
        return None
    now = current_labels(pages, client=client, settings=settings)
    return next((now[p] for p in pages if p in now and now[p] != cluster_id), None)
