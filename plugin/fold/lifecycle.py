"""A folded index over its life: deleting pages, regrouping stories after deletes, finding unfolded documents.

A cluster id is a story's name (``plugin.fold.founding``), so a story outlives any
of its pages: when its founder is rewritten or deleted, the other copies keep
the name and stay one story. What a delete can break is a story held together
only by the deleted page (A and C both copies of B, not of each other):
:func:`regroup_clusters` verifies the remaining pages again and splits such a
story; :func:`delete_pages` does it for the stories it touched.
``docs/embedding.md`` ("Updates and deletes") says when a host calls which.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import InputError, InputTypeError, ServerError, check_type, refusals_as_server_errors
from newsfold.plugin.fold.by_id import read_docs, search_whole
from newsfold.plugin.fold.document import CLUSTER_ID, Outcome
from newsfold.plugin.fold.provenance import refresh_origins
from newsfold.plugin.fold.regroup import recluster
from newsfold.plugin.fold.store import MAX_TERMS, bulk_failures, current_labels
from newsfold.plugin.ids import MAX_ID_BYTES, MAX_NAME_BYTES
from newsfold.plugin.settings import Settings

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

log = logging.getLogger(__name__)


def _ids(values: object, name: str, max_bytes: int) -> list[str]:
    """Ids of documents or stories that may exist: any text Elasticsearch can hold, not only what the grammar of
    ``plugin.ids`` admits today, so that a page written before it (a blank id, say) can still be deleted."""
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise InputTypeError(f"{name} must be a list of strings, not {type(values).__name__}")
    out = list(values)
    for n, v in enumerate(out):
        check_type(v, str, f"{name}[{n}]")
        if not v:
            raise InputError(f"{name}[{n}] is empty")
        if len(v.encode("utf-8", "surrogatepass")) > max_bytes:
            raise InputError(f"{name}[{n}] has more than {max_bytes} bytes: no document has such an id")
    if len(out) > MAX_TERMS:
        raise InputError(f"{name} holds {len(out):,} ids; at most {MAX_TERMS:,} per call")
    return out


@refusals_as_server_errors("delete_pages")
def delete_pages(
    page_ids: list[str], *, client: Elasticsearch, settings: Settings, index: str | None = None
) -> list[Outcome]:
    """Delete documents and keep their stories whole (the delete call for a host that folds its index).

    Each document is deleted (``refresh=wait_for``). The stories that lost a
    page keep their cluster id and stay one story in searches, unless the
    deleted page was what held two groups of pages together; those are split
    again (:func:`regroup_clusters`): the group that holds most pages keeps
    the name. The stories it touched get their origin decided again.

    Args:
        page_ids: the document ids.
        client: an Elasticsearch client.
        settings: the settings the index was created with.
        index: a host's index or alias (default ``settings.index``).

    Returns:
        One outcome per id: ``deleted`` with the ``cluster_id`` of the story
        it left, or ``missing`` when there was no such document.

    Raises:
        InputTypeError, InputError: ``page_ids`` is not a list of non-empty strings of at most 512 bytes
            (at most 10,000 of them).
        ServerError: Elasticsearch refused a delete.
    """
    check_type(settings, Settings, "settings")
    check_type(index, str, "index", optional=True)
    ids = list(dict.fromkeys(_ids(page_ids, "page_ids", MAX_ID_BYTES)))
    if index is not None and index != settings.index:
        settings = settings.replace(index=index)
    labels = current_labels(ids, client=client, settings=settings)
    docs = read_docs(client, settings.index, ids, source=False)
    missing = {d["_id"] for d in docs if not d.get("found")}
    actions = [{"_op_type": "delete", "_index": settings.index, "_id": pid} for pid in ids if pid not in missing]
    failed = bulk_failures(client, actions, settings=settings, refresh="wait_for")  # one deleted meanwhile is fine
    if failed:
        pid, why = next(iter(sorted(failed.items())))
        raise ServerError(f"deleting {len(failed)} page(s) failed, first {pid}: {why}")
    outcomes = [
        Outcome(pid, "missing") if pid in missing else Outcome(pid, "deleted", cluster_id=labels.get(pid))
        for pid in ids
    ]
    touched = sorted({labels[pid] for pid in ids if pid in labels and pid not in missing})
    moved = regroup_clusters(touched, client=client, settings=settings)
    # a story that lost its origin (or was split) gets its origin decided again
    refresh_origins(sorted(set(touched) | set(moved.values())), client=client, settings=settings, refresh="wait_for")
    return outcomes


@refusals_as_server_errors("regroup_clusters")
def regroup_clusters(
    cluster_ids: list[str], *, client: Elasticsearch, settings: Settings, index: str | None = None
) -> dict[str, str]:
    """Verify the pages of some stories again and split each into the groups that are still copies.

    The way to tidy stories after documents were deleted behind newsfold's
    back (a delete-by-query, a retention job, an index rolled over and
    dropped): collect the cluster ids of the documents before deleting them
    (a ``terms`` aggregation on ``newsfold.cluster_id`` over the same query),
    then pass them here. Stories that are still whole are left as they are.
    A story of more than 1,000 pages is skipped with a warning.

    Returns:
        page id -> new cluster id, for the pages that moved.

    Raises:
        InputTypeError, InputError: ``cluster_ids`` is not a list of non-empty strings.
    """
    check_type(settings, Settings, "settings")
    check_type(index, str, "index", optional=True)
    clusters = sorted(set(_ids(cluster_ids, "cluster_ids", MAX_NAME_BYTES)))
    if index is not None and index != settings.index:
        settings = settings.replace(index=index)
    moved: dict[str, str] = {}
    for cluster_id in clusters:
        try:
            moved.update(recluster(cluster_id, client=client, settings=settings))
        except InputError as exc:  # too large to verify every pair
            log.warning("story %s was not regrouped: %s", cluster_id, exc)
    return moved


@refusals_as_server_errors("unfolded_documents")
def unfolded_documents(*, client: Elasticsearch, index: str, size: int = 10) -> dict[str, Any]:
    """Count the documents of an index that have no fold fields, and name some of them.

    A full ``index`` request (or a host pipeline that rebuilds ``_source``)
    replaces the whole document and drops the ``newsfold`` fields: the page
    then shows alone in folded searches until it is ingested again. Write
    folded documents with partial updates (``update`` with ``doc``) instead,
    or ingest them again after the write (``docs/embedding.md``).

    Returns:
        ``{"count": N, "ids": [up to size ids]}``.

    Raises:
        InputTypeError, InputError: ``index`` is not a string or ``size`` is not 0-1,000.
    """
    check_type(index, str, "index")
    check_type(size, int, "size")
    if not 0 <= size <= 1_000:
        raise InputError(f"size must be 0-1,000, got {size}")
    body: dict[str, Any] = {"query": {"bool": {"must_not": [{"exists": {"field": CLUSTER_ID}}]}}, "size": size,
                            "_source": False, "track_total_hits": True, "sort": ["_doc"]}  # fmt: skip
    res = search_whole(client, index, **body)
    return {"count": int(res["hits"]["total"]["value"]), "ids": [h["_id"] for h in res["hits"]["hits"]]}
