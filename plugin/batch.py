"""The batch protocol that finds each page's cluster: prepare (lookup, verify, decide), write, reconcile, finish.

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
   Merges are deterministic (``plugin.cluster.merge_survivor``) and idempotent,
   so concurrent merges agree.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newsfold.plugin import founding, queries
from newsfold.plugin.cluster import NO_CONSTRAINTS, Constraints, Decision, Match, decide, merge_survivor, verify
from newsfold.plugin.constraints import load_constraints
from newsfold.plugin.document import (
    LOOKUP_SOURCE,
    UNCHANGED_SOURCE,
    Candidate,
    Outcome,
    SignedPage,
    cluster_of,
    fold_of,
    read_candidate,
    site_signals,
)
from newsfold.plugin.errors import InputError, InputTypeError, ServerError, check_type
from newsfold.plugin.extract_result import Rejection
from newsfold.plugin.index import check_meta_cached, wait_until_active
from newsfold.plugin.provenance import refresh_origins
from newsfold.plugin.regroup import enforce_constraints, relabel
from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import uses_stats
from newsfold.plugin.store import bulk_failures, current_labels

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from newsfold.state.story_stats import StoryStats

log = logging.getLogger(__name__)

MAX_CANDIDATES = 50
MAX_RECONCILE_ROUNDS = 10
#: pauses (seconds) before asking again when a lookup finds no active shard (after waiting for the index's health)
SHARD_WAITS = (0.2, 1.0, 3.0)


@dataclass
class BatchState:
    """What the steps of one batch hand to each other (exposed for tests)."""

    pages: list[SignedPage]
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    #: re-ingests whose content is unchanged: not written again, but looked up again by ``reconcile``, so a
    #: delivery that died between its write and its reconcile has that step done by the next one
    unchanged: list[SignedPage] = field(default_factory=list)
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    decision: Decision | None = None
    constraints: Constraints = NO_CONSTRAINTS  # editor corrections touching the batch (plugin.corrections)
    content: bool = True  # also write the article fields (newsfold's own index); a host index keeps its own
    #: page id -> the committed stories its call merged into its own (outcome ``merged``)
    absorbed: dict[str, list[str]] = field(default_factory=dict)
    #: page id -> the cluster of a page indexed before with other content (a re-ingest of a changed page)
    previous: dict[str, str] = field(default_factory=dict)
    #: page id -> the copy its reconcile found when its story joined another one after the write
    joined: dict[str, Match] = field(default_factory=dict)


def lookup(
    pages: list[SignedPage],
    *,
    client: Elasticsearch,
    settings: Settings,
    exclude_clusters: Mapping[str, str | None] | None = None,
) -> dict[str, list[Candidate]]:
    """Band-key term lookup for every page in one ``msearch``.

    ``exclude_clusters`` (page id -> cluster id) leaves each page's own
    cluster out of its candidates.
    """
    if not pages:
        return {}
    own = exclude_clusters or {}
    searches: list[dict[str, Any]] = []
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
    for wait in (*SHARD_WAITS, None):
        responses = client.msearch(searches=searches)["responses"]
        if wait is None or not any(_no_shard(r) for r in responses):
            break
        # a primary not started yet (an index another process has just created) or moving: wait, then ask again
        log.info("band lookup in %s found no active shard; waiting %.1f s", settings.index, wait)
        wait_until_active(client, settings.index)
        time.sleep(wait)
    out: dict[str, list[Candidate]] = {}
    for p, res in zip(pages, responses, strict=True):
        if "error" in res:
            raise ServerError(f"band lookup failed for {p.page_id}: {res['error']}")
        out[p.page_id] = [c for c in map(read_candidate, res["hits"]["hits"]) if c is not None]
    return out


def _no_shard(response: dict[str, Any]) -> bool:
    return "error" in response and "no_shard_available_action_exception" in str(response["error"])


def verified_edges(
    pages: list[SignedPage], candidates: dict[str, list[Candidate]], settings: Settings
) -> list[tuple[str, Match]]:
    """Verified copies among the batch's pages and of their indexed candidates."""
    edges: list[tuple[str, Match]] = []
    for p in pages:
        for c in candidates.get(p.page_id, []):
            ok, j, cont = verify(p.signature, c.signature, settings, site_signals(p, c))
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
        ok, sim, cont = verify(a.signature, b.signature, settings, site_signals(a, b))
        if ok:
            edges.append((a.page_id, Match(b.page_id, b.page_id, sim, cont)))
            edges.append((b.page_id, Match(a.page_id, a.page_id, sim, cont)))
        else:
            for page in (a, b):
                if page.nearest_rejected is None or sim > page.nearest_rejected:
                    page.nearest_rejected = sim
    return edges


def prepare(pages: list[SignedPage], *, client: Elasticsearch, settings: Settings, content: bool = True) -> BatchState:
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
                state.unchanged.append(p)
            else:
                if previous := cluster_of(src):
                    state.previous[p.page_id] = previous
                state.pages.append(p)
    state.candidates = lookup(state.pages, client=client, settings=settings)
    batch_ids = [p.page_id for p in state.pages]
    named = set(batch_ids) | {c.page_id for found in state.candidates.values() for c in found}
    state.constraints = load_constraints(named, client=client, settings=settings, unlabelled=batch_ids)
    edges = verified_edges(state.pages, state.candidates, settings)
    edges += must_link_edges(state, edges, client=client, settings=settings)
    state.decision = decide(batch_ids, edges, state.constraints)
    name_new_stories(state, client=client, settings=settings)
    return state


def name_new_stories(state: BatchState, *, client: Elasticsearch, settings: Settings) -> None:
    """Rename the batch's new stories whose founder's id already names another story (``plugin.founding``).

    That happens when a page is rewritten with text that no longer belongs to
    its old story, or comes back after a delete while its copies stayed: the
    old story keeps its name, the new one gets ``<page id>~<hash>``.
    """
    decision = state.decision
    if decision is None or not decision.founders:
        return
    pages = {p.page_id: p for p in state.pages}
    batch_ids = list(pages)
    proposals = {
        name: [name] + [founding.renamed(pid, pages[pid].content_hash, n) for n in range(2)]
        for name, pid in decision.founders.items()
    }
    taken = founding.names_in_use(
        [n for names in proposals.values() for n in names], besides=batch_ids, client=client, settings=settings
    )
    for name, names in sorted(proposals.items()):
        free = next((n for n in names if n not in taken), None)
        if free is None:  # both taken: practically never (the page would have matched the story of its own text)
            free = founding.renamed(decision.founders[name], pages[decision.founders[name]].content_hash, 2)
        if free != name:
            decision.rename(name, free)
        elif state.previous.get(decision.founders[name]) == name:
            del decision.founders[name]  # a changed page keeps its own story: not a new one


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
            _, j, cont = verify(batch[a].signature, known[b].signature, settings, site_signals(batch[a], known[b]))
            out.append((a, Match(b, rules.clusters[b], j, cont)))
    return out


def _copy_of(p: SignedPage, decision: Decision) -> Match | None:
    """The page this one is a copy of; None for the page that founds a new story."""
    if p.page_id in decision.founders.values():
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
    founder_of = {pid: name for name, pid in decision.founders.items()}
    for p in state.pages:
        doc = p.fold_fields(
            cluster_id=decision.cluster_of[p.page_id],
            match=_copy_of(p, decision),
            # an editor's choice survives a re-ingest and a reindex
            representative=bool(state.constraints.representative.get(p.page_id)),
            folded=now,
            founding=founder_of.get(p.page_id),
        )
        if state.content:
            doc.update(p.content_fields(ingested=now))
        actions.append(
            {"_op_type": "update", "_index": settings.index, "_id": p.page_id, "doc": doc, "doc_as_upsert": True}
        )
    failed = bulk_failures(client, actions, settings=settings, refresh="wait_for", missing_ok=False)
    for p in state.pages:
        if p.page_id in failed:
            state.outcomes[p.page_id] = Outcome(p.page_id, "rejected", reason="index_failed", detail=failed[p.page_id])
    state.pages = [p for p in state.pages if p.page_id not in failed]
    written = {p.page_id for p in state.pages}
    for loser, survivor in sorted(decision.merges.items()):
        absorbed: list[str] = []
        relabel(loser, survivor, client=client, settings=settings, absorbed=absorbed)
        joiner = min((pid for pid, c in decision.cluster_of.items() if c == survivor and pid in written), default=None)
        if absorbed and joiner is not None:
            state.absorbed.setdefault(joiner, []).extend(absorbed)


def reconcile(state: BatchState, *, client: Elasticsearch, settings: Settings) -> None:
    """Look the batch's pages up again and merge clusters found since the first lookup.

    The unchanged re-ingests are looked up too: their earlier delivery may
    have died after its write and before this step.
    """
    refused: set[tuple[str, str]] = set()  # merges a cannot-link forbids (or with nothing left to move)
    pages = state.pages + state.unchanged
    for _ in range(MAX_RECONCILE_ROUNDS):
        if not pages:
            return
        labels = current_labels([p.page_id for p in pages], client=client, settings=settings)
        present = [p for p in pages if labels.get(p.page_id) is not None]
        found = lookup(present, client=client, settings=settings, exclude_clusters=labels)
        merges: dict[str, str] = {}
        by: dict[str, str] = {}  # losing cluster -> the batch's page whose lookup found the merge
        for p in present:
            mine = labels[p.page_id]
            for c in found.get(p.page_id, []):
                if c.cluster_id == mine:
                    continue
                ok, j, cont = verify(p.signature, c.signature, settings, site_signals(p, c))
                if ok:
                    survivor, (loser,) = merge_survivor((mine, c.cluster_id))
                    if (loser, survivor) not in refused:
                        merges[loser] = merge_survivor((survivor, merges.get(loser, survivor)))[0]
                        by.setdefault(loser, p.page_id)
                        best = state.joined.get(p.page_id)
                        if best is None or j > best.similarity:
                            state.joined[p.page_id] = Match(c.page_id, c.cluster_id, j, cont)
        if not merges:
            return
        for loser, survivor in sorted(merges.items()):
            absorbed: list[str] = []
            if not relabel(loser, survivor, client=client, settings=settings, absorbed=absorbed):
                refused.add((loser, survivor))
            if absorbed:
                state.absorbed.setdefault(by[loser], []).extend(absorbed)
    log.warning("reconcile did not settle after %d rounds", MAX_RECONCILE_ROUNDS)


def finish(state: BatchState, *, client: Elasticsearch, settings: Settings) -> list[Outcome]:
    """Commit the batch's new stories (``plugin.founding``) and give every page its outcome.

    - ``new``: the page founded its story and this call committed it; exactly
      one call reports each story that exists when the writers are done;
    - ``duplicate``: the page joined a story (one indexed before, one another
      page of the batch founded, or one a racing writer founded);
    - ``merged``: as ``duplicate``, and the call folded other stories into
      it; ``merged_clusters`` names them (they no longer exist);
    - ``updated``: the page was indexed before with other content and is
      still in the same story (edited, or re-extracted);
    - ``unchanged``: the same content was indexed already; an unchanged
      founder whose earlier delivery died before committing is committed now
      and reported ``new``.
    """
    decision = state.decision
    founders = {pid: name for name, pid in decision.founders.items()} if decision else {}
    founders = {pid: name for pid, name in founders.items() if pid in {p.page_id for p in state.pages}}
    for p in state.unchanged:  # a founder whose earlier delivery died before its commit
        cluster = state.outcomes[p.page_id].cluster_id
        if cluster:
            founders.setdefault(p.page_id, cluster)
    committed = founding.commit(founders, client=client, settings=settings)  # reads which are still pending
    labels = current_labels([p.page_id for p in state.pages + state.unchanged], client=client, settings=settings)
    for p in state.unchanged:  # reconcile may have merged its cluster
        outcome = state.outcomes[p.page_id]
        if labels.get(p.page_id):
            outcome.cluster_id = labels[p.page_id]
        if p.page_id in committed:
            outcome.status = "new"
    for p in state.pages:
        cluster = labels.get(p.page_id) or (decision.cluster_of.get(p.page_id) if decision else None)
        if p.page_id in committed:
            state.outcomes[p.page_id] = Outcome(p.page_id, "new", cluster_id=cluster)
            continue
        match = (decision.best.get(p.page_id) if decision else None) or state.joined.get(p.page_id)
        merged = sorted(set(state.absorbed.get(p.page_id, [])) - {cluster})
        kept = state.previous.get(p.page_id) == cluster
        state.outcomes[p.page_id] = Outcome(
            p.page_id,
            "merged" if merged else "updated" if kept else "duplicate",
            cluster_id=cluster,
            similarity=round(match.similarity, 4) if match else None,
            matched_id=match.page_id if match else None,
            merged_clusters=merged or None,
        )
    return list(state.outcomes.values())


def check_pages(pages: object, *, settings: Settings) -> list[SignedPage]:
    """The pages of an ``ingest`` call, checked at the door.

    Raises:
        InputTypeError: ``pages`` is not a list of ``SignedPage`` (a ``Rejection``
            from ``sign_page``/``sign_text`` is named with its reason), or
            ``settings`` is not ``Settings``.
        InputError: a signature has another number of permutations than the
            settings (it was signed with other settings and cannot fold here).
    """
    check_type(settings, Settings, "settings")
    if isinstance(pages, str | bytes | dict) or not isinstance(pages, list | tuple):
        raise InputTypeError(f"pages must be a list of SignedPage, not {type(pages).__name__}")
    for n, p in enumerate(pages):
        if isinstance(p, Rejection):
            raise InputTypeError(
                f"pages[{n}] is a Rejection ({p.reason}: {p.detail}), not a SignedPage: leave rejected pages out "
                "of ingest (record their reason instead)"
            )
        check_type(p, SignedPage, f"pages[{n}]")
        perms = len(p.signature.hashvalues)
        if perms != settings.num_perm:
            raise InputError(
                f"pages[{n}] ({p.page_id}) was signed with {perms} permutations, the settings say "
                f"{settings.num_perm}: sign it with the index's settings"
            )
    return list(pages)


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

    Raises:
        InputTypeError, InputError: bad arguments (:func:`check_pages`).
        IndexMismatchError: the index lacks the fold fields or was built with
            other signature settings.
        ServerError: Elasticsearch refused a lookup or a write.
    """
    pages = check_pages(pages, settings=settings)
    check_type(index, str, "index", optional=True)
    check_type(content, bool, "content", optional=True)
    if content is None:
        content = index is None
    if index is not None and index != settings.index:
        settings = settings.replace(index=index)
    check_meta_cached(client, settings, settings.index)
    state = prepare(pages, client=client, settings=settings, content=content)
    write(state, client=client, settings=settings)
    reconcile(state, client=client, settings=settings)
    enforce_constraints([p.page_id for p in state.pages], client=client, settings=settings)
    outcomes = finish(state, client=client, settings=settings)
    written: dict[str, list[str]] = {}
    for o in outcomes:
        if o.cluster_id:
            written.setdefault(o.cluster_id, []).append(o.page_id)
    refresh_origins(list(written), new_pages=written, client=client, settings=settings)
    if stats is not None and uses_stats(settings):
        new = {o.page_id for o in outcomes if o.status == "new"}
        for p in state.pages:
            if p.page_id in new and p.features is not None and len(p.features):
                stats.add(p.features)
    return outcomes
