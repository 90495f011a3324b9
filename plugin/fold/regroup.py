"""Changing clusters that are already written: merge, split again, enforce the editors' cannot-links.

The batch protocol (``plugin.fold.batch``) merges clusters it finds to be one
story; editor corrections (``plugin.edit.corrections``) merge and split them on
request. Both go through here. Every step is deterministic (the name a
merge keeps, and the name a split gives a group, come from
``plugin.fold.cluster.merge_survivor``), so concurrent workers agree.
``docs/corrections.md`` says how corrections and ingest meet.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from newsfold.plugin.errors import InputError, ServerError
from newsfold.plugin.fold import founding, lookups
from newsfold.plugin.fold.by_id import search_whole
from newsfold.plugin.fold.cluster import Match, recluster_labels, verify
from newsfold.plugin.fold.constraints import load_constraints
from newsfold.plugin.fold.document import LOOKUP_SOURCE, fold_update, read_candidate, site_signals
from newsfold.plugin.fold.store import bulk_write, cluster_page_ids
from newsfold.plugin.settings import Settings

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

log = logging.getLogger(__name__)

MAX_RECLUSTER_PAGES = 1_000  # every pair is verified: ~13 s at 1,000 identical copies on the stand-in


def relabel(
    loser: str, survivor: str, *, client: Elasticsearch, settings: Settings, absorbed: list[str] | None = None
) -> int:
    """Merge cluster ``loser`` into ``survivor``: move every page of one to the other; returns how many moved.

    The direction follows ``plugin.fold.founding``: a committed story never yields
    to a pending one, nor a pending one to an absorbed name (the merge turns
    round); a pending loser is first claimed through its founder's document,
    so the call that founded it cannot also report it ``new``. Otherwise
    ``loser`` yields.

    Loops until a search (after the ``wait_for`` writes) finds no page left in
    the losing cluster, so a page written into it by another worker meanwhile
    is moved too, or, if it became visible only after the last check, its
    writer's own reconcile finds the survivor and merges it.

    An editor's cannot-link between a page of each cluster forbids the merge
    (nothing moves, 0 is returned). After moving, the merged cluster is
    checked again, so a correction written meanwhile is honoured by a
    recluster (see ``docs/corrections.md``).

    Args:
        absorbed: when given, the losing cluster's name is appended when it
            was a committed story (an ingest reports it as ``merged``).
    """
    if loser == survivor:
        return 0
    members = cluster_page_ids([loser, survivor], client=client, settings=settings)
    rules = load_constraints(members[loser] + members[survivor], client=client, settings=settings, labels=False)
    blocked = rules.spanning(members[loser], members[survivor])
    if blocked:
        log.info("not merging cluster %s into %s: pages %s and %s are not duplicates", loser, survivor, *blocked)
        return 0
    for _ in range(founding.VERSION_RETRIES):
        known = founding.founders([loser, survivor], client=client, settings=settings)
        if _rank(known.get(loser)) > _rank(known.get(survivor)):
            loser, survivor = survivor, loser  # committed beats pending beats absorbed
        founder = known.get(loser)
        if founder is None or founder.absorbed or founding.claim(founder, survivor, client=client, settings=settings):
            break
    else:
        raise ServerError(f"merging {loser} into {survivor}: its founder kept changing; try again")
    if founder is None and absorbed is not None and members[loser]:
        absorbed.append(loser)  # a committed story ended
    moved = 0  # a claimed founder moves with the story's other pages
    while True:
        hits = search_whole(client, settings.index, **lookups.cluster_ids_only(loser))["hits"]["hits"]
        if not hits:
            if moved:
                enforce_cluster(survivor, client=client, settings=settings)
            return moved
        actions = [
            {"_op_type": "update", "_index": settings.index, "_id": h["_id"], "doc": fold_update(cluster_id=survivor)}
            for h in hits
        ]
        bulk_write(client, actions, settings=settings, refresh="wait_for", what=f"relabel {loser} -> {survivor}")
        moved += len(hits)


def _rank(founder: founding.Founder | None) -> int:
    """How strongly a story holds its name in a merge: committed 2, pending 1, absorbed 0."""
    if founder is None:
        return 2
    return 0 if founder.absorbed else 1


def recluster(cluster_id: str, *, client: Elasticsearch, settings: Settings) -> dict[str, str]:
    """Split one cluster again under the editors' constraints and write the new cluster ids.

    Reads the members with their stored signatures, verifies every pair as
    ingest does, groups them with :func:`plugin.fold.cluster.recluster_labels`
    (must-links first, then verified pairs from the most similar down, never
    a cannot-link pair in one group) and writes with ``refresh=wait_for``.
    The group holding the page named ``cluster_id`` keeps the id; the others
    get their smallest page id. Deterministic, so concurrent runs agree.

    Args:
        cluster_id: the cluster to split.
        client: an Elasticsearch client.
        settings: the settings the index was created with.

    Returns:
        page id -> new cluster id, for the pages that moved.

    Raises:
        ValueError: the cluster has more than ``MAX_RECLUSTER_PAGES`` pages.
    """
    body = lookups.cluster_pages([cluster_id], size=MAX_RECLUSTER_PAGES + 1, source=LOOKUP_SOURCE)
    hits = search_whole(client, settings.index, **body)["hits"]["hits"]
    if len(hits) > MAX_RECLUSTER_PAGES:
        raise InputError(f"cluster {cluster_id} has more than {MAX_RECLUSTER_PAGES} pages; too large to recluster")
    members = [c for c in map(read_candidate, hits) if c is not None]
    rules = load_constraints([m.page_id for m in members], client=client, settings=settings, labels=False)
    edges: list[tuple[str, Match]] = []
    for i, a in enumerate(members):
        for b in members[i + 1 :]:
            ok, j, cont = verify(a.signature, b.signature, settings, site_signals(a, b))
            if ok:
                edges.append((a.page_id, Match(b.page_id, cluster_id, j, cont)))
    labels = recluster_labels(cluster_id, [m.page_id for m in members], edges, rules)
    moved = {pid: label for pid, label in labels.items() if label != cluster_id}
    # a group named after its smallest page must not take a name another story carries (plugin.fold.founding)
    tag = hashlib.sha1(cluster_id.encode("utf-8", "surrogatepass")).hexdigest()
    groups = {label: (label, tag) for label in set(moved.values())}
    free = founding.free_names(groups, besides=labels, client=client, settings=settings)
    moved = {pid: free[label] for pid, label in moved.items()}
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": fold_update(cluster_id=label)}
        for pid, label in sorted(moved.items())
    ]
    bulk_write(client, actions, settings=settings, refresh="wait_for", what=f"recluster of {cluster_id}")
    return moved


def enforce_cluster(cluster_id: str, *, client: Elasticsearch, settings: Settings) -> bool:
    """Recluster ``cluster_id`` if a cannot-link pair ended in it; True when it did."""
    pages = cluster_page_ids([cluster_id], client=client, settings=settings)[cluster_id]
    rules = load_constraints(pages, client=client, settings=settings, labels=False)
    if rules.within(pages) is None:
        return False
    _recluster_logged(cluster_id, client=client, settings=settings)
    return True


def enforce_constraints(page_ids: Iterable[str], *, client: Elasticsearch, settings: Settings) -> None:
    """Recluster any cluster where one of ``page_ids`` shares a cluster with a cannot-link partner.

    The corrections are read again (one terms query), so a correction
    written while a batch was in flight is honoured: either this check sees
    it, or the correction (which reads the labels after writing itself) sees
    the batch's pages.
    """
    rules = load_constraints(page_ids, client=client, settings=settings)
    for cluster_id in sorted(rules.split_clusters()):
        _recluster_logged(cluster_id, client=client, settings=settings)


def _recluster_logged(cluster_id: str, *, client: Elasticsearch, settings: Settings) -> None:
    # on the ingest path a cluster too large to recluster must not fail the batch
    try:
        recluster(cluster_id, client=client, settings=settings)
    except ValueError as exc:
        log.warning("cluster %s holds a cannot-link pair but was not split again: %s", cluster_id, exc)
