"""Reads and writes of stored pages that several steps share.

The batch protocol (``plugin.fold.batch``), cluster regrouping
(``plugin.fold.regroup``), editor corrections and rejection records all read the
current cluster of pages and write partial updates in bulk; they do both
through here, so "a page deleted meanwhile" means the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from newsfold.plugin.errors import ServerError, item_refusal, item_status
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.by_id import read_docs, route, search_whole
from newsfold.plugin.fold.document import CLUSTER_ID, cluster_of
from newsfold.plugin.settings import Settings

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

MAX_TERMS = 10_000  # ids per mget or terms query (Elasticsearch allows 65,536 terms)
MAX_CLUSTER_PAGES = 10_000  # pages read when listing the members of clusters
#: Elasticsearch runs a partial update as read, merge, write-if-unchanged; a write by another worker in between
#: fails it with a version conflict unless it may retry on the new version. Every partial update newsfold sends
#: sets absolute field values, so applying it again on top of the other write is what it meant.
UPDATE_RETRIES = 5


def bulk_failures(
    client: Elasticsearch,
    actions: Sequence[dict[str, Any]],
    *,
    settings: Settings,
    refresh: bool | str = False,
    missing_ok: bool = True,
) -> dict[str, str]:
    """Send bulk actions and return the ones Elasticsearch refused, as ``_id`` -> reason.

    An action refused for a passing reason (429, or 503: a node lost, a shard
    moving) raises a :class:`ServerError` with that status instead, which the
    workers retry: a page is never rejected for the cluster's state.

    A missing document (status 404: a page deleted while the caller worked)
    is not a failure when ``missing_ok``. Connection errors are raised, so an
    outage is retried by the caller, never taken for a refused page. A partial
    update without ``if_seq_no`` is retried on a version conflict
    (:data:`UPDATE_RETRIES`): two workers merging the same clusters at once
    write the same values.
    """
    if not actions:
        return {}
    from elasticsearch import helpers

    actions = route(client, actions)  # updates and deletes go to the concrete index of their page
    actions = [
        {**a, "retry_on_conflict": UPDATE_RETRIES}
        if a.get("_op_type") == "update" and "if_seq_no" not in a and "retry_on_conflict" not in a
        else a
        for a in actions
    ]

    _, errors = helpers.bulk(
        client,
        actions,
        refresh=refresh,
        raise_on_error=False,
        raise_on_exception=True,
        chunk_size=500,
        max_retries=settings.es_max_retries,
    )
    failed: dict[str, str] = {}
    for err in cast("list[dict[str, Any]]", errors):  # a list, since stats_only is off
        item = next(iter(err.values()))
        if missing_ok and item.get("status") == 404:
            continue
        if item_status(item) in (429, 503):  # a node lost, a shard moving, a full queue: the batch is tried again
            raise item_refusal(f"writing page {item.get('_id')!r} to {item.get('_index')!r} failed", item)
        reason = item.get("error")
        failed[str(item.get("_id"))] = reason.get("reason", str(reason)) if isinstance(reason, dict) else str(reason)
    return failed


def bulk_write(
    client: Elasticsearch,
    actions: Sequence[dict[str, Any]],
    *,
    settings: Settings,
    what: str,
    refresh: bool | str = False,
) -> None:
    """Send bulk actions that must all succeed (a missing document is skipped).

    Raises:
        RuntimeError: Elasticsearch refused an action; the message names ``what`` and the first reason.
    """
    failed = bulk_failures(client, actions, settings=settings, refresh=refresh)
    if failed:
        page_id, reason = next(iter(sorted(failed.items())))
        raise ServerError(f"{what} failed for {len(failed)} page(s), first {page_id}: {reason}")


def current_labels(page_ids: Iterable[str], *, client: Elasticsearch, settings: Settings) -> dict[str, str]:
    """Realtime read of the cluster id of indexed pages (missing pages are left out)."""
    ids = sorted(set(page_ids))
    out: dict[str, str] = {}
    for start in range(0, len(ids), MAX_TERMS):
        docs = read_docs(client, settings.index, ids[start : start + MAX_TERMS], source=[CLUSTER_ID])
        for d in docs:
            cluster = cluster_of(d.get("_source")) if d.get("found") else None
            if cluster:
                out[d["_id"]] = cluster
    return out


def cluster_page_ids(cluster_ids: list[str], *, client: Elasticsearch, settings: Settings) -> dict[str, list[str]]:
    """The page ids of some clusters (at most ``MAX_CLUSTER_PAGES`` in all)."""
    out: dict[str, list[str]] = {c: [] for c in cluster_ids}
    body = lookups.cluster_pages(cluster_ids, size=MAX_CLUSTER_PAGES, source=[CLUSTER_ID])
    for hit in search_whole(client, settings.index, **body)["hits"]["hits"]:
        out.setdefault(cast(str, cluster_of(hit["_source"])), []).append(hit["_id"])  # the query asks for them
    return out
