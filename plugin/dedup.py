"""Finding a page's cluster in Elasticsearch: lookup, verify, decide, write, reconcile.

The client is passed in; everything it needs from Elasticsearch is a term
lookup on band keys, realtime GETs, and bulk writes. The design for
concurrency under near-real-time search is in ``docs/concurrency.md``:

1. pages of one batch are compared with each other in memory;
2. each page is looked up by its band keys (``bool.should`` of term queries);
3. candidates are verified from their stored signatures, clusters decided;
4. the batch is written with ``refresh=wait_for``, so when the bulk returns
   every page is visible to searches;
5. the lookup runs again for the written pages (reconcile). Two batches
   racing each other cannot both miss the other: the one whose write became
   visible last re-looks-up after the other's is visible, finds it and merges.
   Merges are deterministic (the smallest cluster id survives) and idempotent,
   so concurrent merges agree.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from elasticsearch import Elasticsearch, helpers

from newsfold.plugin import queries
from newsfold.plugin.cluster import (
    NO_CONSTRAINTS,
    NO_EVIDENCE,
    Constraints,
    Decision,
    Evidence,
    Match,
    decide,
    recluster_labels,
    verify,
)
from newsfold.plugin.constraints import load_constraints
from newsfold.plugin.document import (
    CLUSTER_ID,
    LOOKUP_SOURCE,
    UNCHANGED_SOURCE,
    Candidate,
    Outcome,
    SignedPage,
    cluster_of,
    fold_of,
    fold_update,
    read_candidate,
)
from newsfold.plugin.index import check_meta_cached
from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import uses_stats

if TYPE_CHECKING:
    from newsfold.state.story_stats import StoryStats

log = logging.getLogger(__name__)

MAX_CANDIDATES = 50
MAX_RECONCILE_ROUNDS = 10
MAX_CLUSTER_PAGES = 10_000  # pages read when checking a merge against the corrections
MAX_RECLUSTER_PAGES = 1_000  # every pair is verified: ~13 s at 1,000 identical copies on the stand-in


@dataclass
class BatchState:
    """What the steps of one batch hand to each other (exposed for tests)."""

    pages: list[SignedPage]
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    decision: Decision | None = None
    constraints: Constraints = NO_CONSTRAINTS  # editor corrections touching the batch (plugin.corrections)
    content: bool = True  # also write the article fields (newsfold's own index); a host index keeps its own


def _day(x: SignedPage | Candidate) -> str | None:
    return x.day() if isinstance(x, SignedPage) else x.day


def evidence_between(p: SignedPage | Candidate, c: Candidate | SignedPage) -> Evidence:
    """The per-site signals of a pair (URL and title only count within one site)."""
    same_site = bool(p.site) and p.site == c.site
    if not same_site:
        return NO_EVIDENCE
    day = _day(c)
    return Evidence(
        same_site=True,
        same_title=bool(p.title_key) and p.title_key == c.title_key and _day(p) is not None and _day(p) == day,
        same_url=bool(p.url_key) and p.url_key == c.url_key,
    )


def lookup(
    pages: list[SignedPage],
    *,
    client: Elasticsearch,
    settings: Settings,
    exclude_clusters: dict[str, str | None] | None = None,
) -> dict[str, list[Candidate]]:
    """Band-key term lookup for every page in one ``msearch``.

    ``exclude_clusters`` (page id -> cluster id) leaves each page's own
    cluster out of its candidates.
    """
    if not pages:
        return {}
    own = exclude_clusters or {}
    searches: list[dict] = []
    for p in pages:
        searches.append({"index": settings.index})
        searches.append(
            queries.band_lookup(
                p.band_keys,
                size=MAX_CANDIDATES,
                exclude_ids=[p.page_id],
                min_bands=settings.min_bands,
                exclude_cluster=own.get(p.page_id),
            )
        )
    responses = client.msearch(searches=searches)["responses"]
    out: dict[str, list[Candidate]] = {}
    for p, res in zip(pages, responses, strict=True):
        if "error" in res:
            raise RuntimeError(f"band lookup failed for {p.page_id}: {res['error']}")
        out[p.page_id] = [c for c in map(read_candidate, res["hits"]["hits"]) if c is not None]
    return out


def verified_edges(
    pages: list[SignedPage], candidates: dict[str, list[Candidate]], settings: Settings
) -> list[tuple[str, Match]]:
    """Verified copies among the batch's pages and of their indexed candidates."""
    edges: list[tuple[str, Match]] = []
    for p in pages:
        for c in candidates.get(p.page_id, []):
            ok, j, cont = verify(p.signature, c.signature, settings, evidence_between(p, c))
            if ok:
                edges.append((p.page_id, Match(c.page_id, c.cluster_id, j, cont)))
            elif p.nearest_rejected is None or j > p.nearest_rejected:
                p.nearest_rejected = j
    buckets: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pages):
        for key in p.band_keys:
            buckets[key].append(i)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in buckets.values():
        for x, i in enumerate(members):
            for j in members[x + 1 :]:
                shared[(i, j)] += 1
    for (i, j), count in shared.items():
        a, b = pages[i], pages[j]
        if count < settings.min_bands or a.page_id == b.page_id:
            continue
        ok, sim, cont = verify(a.signature, b.signature, settings, evidence_between(a, b))
        if ok:
            edges.append((a.page_id, Match(b.page_id, b.page_id, sim, cont)))
            edges.append((b.page_id, Match(a.page_id, a.page_id, sim, cont)))
        else:
            for x in (a, b):
                if x.nearest_rejected is None or sim > x.nearest_rejected:
                    x.nearest_rejected = sim
    return edges


def prepare(
    pages: list[SignedPage], *, client: Elasticsearch, settings: Settings, content: bool = True
) -> BatchState:
    """Drop unchanged re-ingests (realtime GET), then look up and decide."""
    unique: dict[str, SignedPage] = {}
    for p in pages:
        unique[p.page_id] = p  # the last version of an id within a batch wins
    state = BatchState(pages=[], content=content)
    if unique:
        docs = client.mget(index=settings.index, ids=list(unique), source=UNCHANGED_SOURCE)["docs"]
        for doc in docs:
            p = unique[doc["_id"]]
            src = doc.get("_source") if doc.get("found") else None
            if src and fold_of(src).get("content_hash") == p.content_hash:
                state.outcomes[p.page_id] = Outcome(p.page_id, "unchanged", cluster_id=cluster_of(src))
            else:
                state.pages.append(p)
    state.candidates = lookup(state.pages, client=client, settings=settings)
    batch_ids = [p.page_id for p in state.pages]
    named = set(batch_ids) | {c.page_id for found in state.candidates.values() for c in found}
    state.constraints = load_constraints(named, client=client, settings=settings, unlabelled=batch_ids)
    edges = verified_edges(state.pages, state.candidates, settings)
    edges += must_link_edges(state, edges, client=client, settings=settings)
    state.decision = decide(batch_ids, edges, state.constraints)
    return state


def must_link_edges(
    state: BatchState, edges: list[tuple[str, Match]], *, client: Elasticsearch, settings: Settings
) -> list[tuple[str, Match]]:
    """Edges from the batch's pages to their indexed must-link partners that no verified edge covers.

    ``decide`` joins must-link partners anyway; the edge carries the pair's
    similarity, so the outcome names the partner as the matched page.
    """
    rules = state.constraints
    if not rules.must_link:
        return []
    batch = {p.page_id: p for p in state.pages}
    covered = {(pid, m.page_id) for pid, m in edges}
    wanted = sorted(
        {
            (a, b)
            for x, y in rules.must_link
            for a, b in ((x, y), (y, x))
            if a in batch and b not in batch and b in rules.clusters and (a, b) not in covered
        }
    )
    known = {c.page_id: c for found in state.candidates.values() for c in found}
    missing = sorted({b for _, b in wanted if b not in known})
    if missing:
        for doc in client.mget(index=settings.index, ids=missing, source=LOOKUP_SOURCE)["docs"]:
            c = read_candidate(doc) if doc.get("found") else None
            if c is not None:
                known[c.page_id] = c
    out = []
    for a, b in wanted:
        if b in known:
            _, j, cont = verify(batch[a].signature, known[b].signature, settings, evidence_between(batch[a], known[b]))
            out.append((a, Match(b, rules.clusters[b], j, cont)))
    return out


def _copy_of(p: SignedPage, decision: Decision) -> Match | None:
    """The page this one is a copy of; None for the page that starts a new story (its cluster bears its id)."""
    if decision.cluster_of[p.page_id] == p.page_id:
        return None
    return decision.best.get(p.page_id)


def write(state: BatchState, *, client: Elasticsearch, settings: Settings) -> None:
    """Write the batch's fold fields with ``refresh=wait_for`` and apply its merges.

    Partial updates (``doc`` with ``doc_as_upsert``): a document that exists
    keeps every field newsfold does not own (a host's fields), one that does
    not exist yet is created with newsfold's fields.
    """
    if not state.pages:
        return
    decision = state.decision
    assert decision is not None
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    actions = []
    for p in state.pages:
        doc = p.fold_fields(
            cluster_id=decision.cluster_of[p.page_id],
            match=_copy_of(p, decision),
            # an editor's choice survives a re-ingest and a reindex
            representative=bool(state.constraints.representative.get(p.page_id)),
            folded=now,
        )
        if state.content:
            doc.update(p.content_fields(ingested=now))
        actions.append(
            {"_op_type": "update", "_index": settings.index, "_id": p.page_id, "doc": doc, "doc_as_upsert": True}
        )
    _, errors = helpers.bulk(
        client,
        actions,
        refresh="wait_for",
        raise_on_error=False,
        raise_on_exception=True,
        chunk_size=500,
        max_retries=settings.es_max_retries,
    )
    failed = {}
    for err in errors:
        item = next(iter(err.values()))
        failed[item["_id"]] = item.get("error")
    for p in state.pages:
        if p.page_id in failed:
            reason = failed[p.page_id]
            detail = reason.get("reason") if isinstance(reason, dict) else str(reason)
            state.outcomes[p.page_id] = Outcome(p.page_id, "rejected", reason="index_failed", detail=detail)
    state.pages = [p for p in state.pages if p.page_id not in failed]
    for loser, survivor in sorted(decision.merges.items()):
        relabel(loser, survivor, client=client, settings=settings)


def relabel(loser: str, survivor: str, *, client: Elasticsearch, settings: Settings) -> int:
    """Move every page of cluster ``loser`` to ``survivor``; returns how many moved.

    Loops until a search (after the ``wait_for`` writes) finds no page left in
    ``loser``, so a page written into ``loser`` by another worker meanwhile is
    moved too, or, if it became visible only after the last check, its
    writer's own reconcile finds the survivor and merges it.

    An editor's cannot-link between a page of each cluster forbids the merge
    (nothing moves, 0 is returned). After moving, the merged cluster is
    checked again, so a correction written meanwhile is honoured by a
    recluster (see ``docs/corrections.md``).
    """
    if loser == survivor:
        return 0
    members = cluster_page_ids([loser, survivor], client=client, settings=settings)
    rules = load_constraints(members[loser] + members[survivor], client=client, settings=settings, labels=False)
    blocked = rules.spanning(members[loser], members[survivor])
    if blocked:
        log.info("not merging cluster %s into %s: pages %s and %s are not duplicates", loser, survivor, *blocked)
        return 0
    moved = 0
    while True:
        hits = client.search(index=settings.index, **queries.cluster_ids_only(loser))["hits"]["hits"]
        if not hits:
            if moved:
                enforce_cluster(survivor, client=client, settings=settings)
            return moved
        actions = [
            {"_op_type": "update", "_index": settings.index, "_id": h["_id"], "doc": fold_update(cluster_id=survivor)}
            for h in hits
        ]
        _, errors = helpers.bulk(
            client, actions, refresh="wait_for", raise_on_error=False, max_retries=settings.es_max_retries
        )
        for err in errors:  # a page deleted meanwhile is not an error
            item = next(iter(err.values()))
            if item.get("status") != 404:
                raise RuntimeError(f"relabel {loser} -> {survivor} failed: {item.get('error')}")
        moved += len(hits)


def current_clusters(ids: list[str], *, client: Elasticsearch, settings: Settings) -> dict[str, str | None]:
    """Realtime read of the cluster id of pages (None for missing pages)."""
    if not ids:
        return {}
    docs = client.mget(index=settings.index, ids=ids, source=[CLUSTER_ID])["docs"]
    return {d["_id"]: cluster_of(d.get("_source")) if d.get("found") else None for d in docs}


def reconcile(state: BatchState, *, client: Elasticsearch, settings: Settings) -> None:
    """Look the written pages up again and merge clusters found since the first lookup."""
    refused: set[tuple[str, str]] = set()  # merges a cannot-link forbids (or with nothing left to move)
    for _ in range(MAX_RECONCILE_ROUNDS):
        if not state.pages:
            return
        labels = current_clusters([p.page_id for p in state.pages], client=client, settings=settings)
        present = [p for p in state.pages if labels.get(p.page_id) is not None]
        found = lookup(present, client=client, settings=settings, exclude_clusters=labels)
        merges: dict[str, str] = {}
        for p in present:
            mine = labels[p.page_id]
            for c in found.get(p.page_id, []):
                if c.cluster_id == mine:
                    continue
                ok, _, _ = verify(p.signature, c.signature, settings, evidence_between(p, c))
                if ok:
                    lo, hi = sorted((mine, c.cluster_id))
                    if (hi, lo) not in refused:
                        merges[hi] = min(lo, merges.get(hi, lo))
        if not merges:
            return
        for loser, survivor in sorted(merges.items()):
            if not relabel(loser, survivor, client=client, settings=settings):
                refused.add((loser, survivor))
    log.warning("reconcile did not settle after %d rounds", MAX_RECONCILE_ROUNDS)


def finish(state: BatchState, *, client: Elasticsearch, settings: Settings) -> list[Outcome]:
    """Outcomes of the written pages with their final cluster ids."""
    decision = state.decision
    labels = current_clusters([p.page_id for p in state.pages], client=client, settings=settings)
    for p in state.pages:
        match = decision.best.get(p.page_id) if decision else None
        cluster = labels.get(p.page_id) or (decision.cluster_of.get(p.page_id) if decision else None)
        if match is not None and cluster != p.page_id:
            state.outcomes[p.page_id] = Outcome(
                p.page_id,
                "duplicate",
                cluster_id=cluster,
                similarity=round(match.similarity, 4),
                matched_id=match.page_id,
            )
        else:
            state.outcomes[p.page_id] = Outcome(p.page_id, "new", cluster_id=cluster)
    return list(state.outcomes.values())


def ingest(
    pages: list[SignedPage],
    *,
    client: Elasticsearch,
    settings: Settings,
    index: str | None = None,
    content: bool | None = None,
    stats: StoryStats | None = None,
) -> list[Outcome]:
    """Find the cluster of every signed page and write it (the public "find its cluster" call).

    Safe to run concurrently from many workers and processes against one
    index; see the module docstring. Re-ingesting an unchanged page changes
    nothing.

    Args:
        pages: pages from ``sign_page`` or ``sign_text``; ``page_id`` is the document id.
        client: an Elasticsearch client (``newsfold.plugin.build_client``).
        settings: the settings the index was created with.
        index: a host's index or alias to fold in (default ``settings.index``,
            newsfold's own). Its mapping must hold the fold fields
            (``component_template``); its ``_meta`` must match the settings.
            Editor corrections for it live in ``<index>-corrections``.
        content: also write the article fields (title, body, url, site, lang,
            published, ingested). Default: True for newsfold's own index,
            False when ``index`` names a host index, where newsfold writes
            only its fold fields and never touches a host field.
        stats: the collection's story frequencies; each page that starts a
            new story adds its features (used by weighted signatures and the
            frequent-shingle filter).

    Returns:
        One outcome per distinct page id.
    """
    if content is None:
        content = index is None
    if index is not None and index != settings.index:
        settings = settings.replace(index=index)
    check_meta_cached(client, settings, settings.index)
    state = prepare(pages, client=client, settings=settings, content=content)
    write(state, client=client, settings=settings)
    reconcile(state, client=client, settings=settings)
    enforce_constraints(state, client=client, settings=settings)
    outcomes = finish(state, client=client, settings=settings)
    if stats is not None and uses_stats(settings):
        new = {o.page_id for o in outcomes if o.status == "new"}
        for p in state.pages:
            if p.page_id in new and p.features is not None and len(p.features):
                stats.add(p.features)
    return outcomes


def cluster_page_ids(cluster_ids: list[str], *, client: Elasticsearch, settings: Settings) -> dict[str, list[str]]:
    """The page ids of some clusters (at most ``MAX_CLUSTER_PAGES`` in all)."""
    out: dict[str, list[str]] = {c: [] for c in cluster_ids}
    body = queries.cluster_pages(cluster_ids, size=MAX_CLUSTER_PAGES, source=[CLUSTER_ID])
    for hit in client.search(index=settings.index, **body)["hits"]["hits"]:
        out.setdefault(cluster_of(hit["_source"]), []).append(hit["_id"])
    return out


def recluster(cluster_id: str, *, client: Elasticsearch, settings: Settings) -> dict[str, str]:
    """Split one cluster again under the editors' constraints and write the new cluster ids.

    Reads the members with their stored signatures, verifies every pair as
    ingest does, groups them with :func:`plugin.cluster.recluster_labels`
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
    body = queries.cluster_pages([cluster_id], size=MAX_RECLUSTER_PAGES + 1, source=LOOKUP_SOURCE)
    hits = client.search(index=settings.index, **body)["hits"]["hits"]
    if len(hits) > MAX_RECLUSTER_PAGES:
        raise ValueError(f"cluster {cluster_id} has more than {MAX_RECLUSTER_PAGES} pages; too large to recluster")
    members = [c for c in map(read_candidate, hits) if c is not None]
    rules = load_constraints([m.page_id for m in members], client=client, settings=settings, labels=False)
    edges: list[tuple[str, Match]] = []
    for i, a in enumerate(members):
        for b in members[i + 1 :]:
            ok, j, cont = verify(a.signature, b.signature, settings, evidence_between(a, b))
            if ok:
                edges.append((a.page_id, Match(b.page_id, cluster_id, j, cont)))
    labels = recluster_labels(cluster_id, [m.page_id for m in members], edges, rules)
    moved = {pid: label for pid, label in labels.items() if label != cluster_id}
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": fold_update(cluster_id=label)}
        for pid, label in sorted(moved.items())
    ]
    if actions:
        _, errors = helpers.bulk(
            client, actions, refresh="wait_for", raise_on_error=False, max_retries=settings.es_max_retries
        )
        for err in errors:  # a page deleted meanwhile is not an error
            item = next(iter(err.values()))
            if item.get("status") != 404:
                raise RuntimeError(f"recluster of {cluster_id} failed: {item.get('error')}")
    return moved


def enforce_cluster(cluster_id: str, *, client: Elasticsearch, settings: Settings) -> bool:
    """Recluster ``cluster_id`` if a cannot-link pair ended in it; True when it did."""
    pages = cluster_page_ids([cluster_id], client=client, settings=settings)[cluster_id]
    rules = load_constraints(pages, client=client, settings=settings, labels=False)
    if rules.within(pages) is None:
        return False
    _recluster_logged(cluster_id, client=client, settings=settings)
    return True


def _recluster_logged(cluster_id: str, *, client: Elasticsearch, settings: Settings) -> None:
    # on the ingest path a cluster too large to recluster must not fail the batch
    try:
        recluster(cluster_id, client=client, settings=settings)
    except ValueError as exc:
        log.warning("cluster %s holds a cannot-link pair but was not split again: %s", cluster_id, exc)


def enforce_constraints(state: BatchState, *, client: Elasticsearch, settings: Settings) -> None:
    """After the write: recluster any cluster where a batch page shares a cluster with a cannot-link partner.

    The corrections are read again (one terms query), so a correction
    written while the batch was in flight is honoured: either this check
    sees it, or the correction (which reads the labels after writing itself)
    sees the batch's pages.
    """
    ids = [p.page_id for p in state.pages]
    rules = load_constraints(ids, client=client, settings=settings)
    clusters = {
        rules.clusters[a]
        for a, b in rules.cannot_link
        if a in rules.clusters and rules.clusters[a] == rules.clusters.get(b)
    }
    for cluster_id in sorted(clusters):
        _recluster_logged(cluster_id, client=client, settings=settings)
