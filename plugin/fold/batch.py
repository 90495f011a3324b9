"""The batch protocol that finds each page's cluster: prepare (lookup, verify, decide), write, reconcile, finish.

The client is passed in; everything it needs from Elasticsearch is a term lookup on band keys, realtime GETs,
and bulk writes. The design for concurrency under near-real-time search is in ``docs/concurrency.md``:

1. pages of one batch are compared with each other in memory;
2. each page is looked up by its band keys (a ``terms_set`` query);
3. candidates are verified from their stored signatures (steps 2 and 3 are
   ``plugin.fold.candidates``), clusters decided (``plugin.fold.cluster``);
4. the batch is written with ``refresh=wait_for``, so when the bulk returns every page is visible to searches;
5. the lookup runs again for the written pages (reconcile), in the write index, where a racing writer's pages are.
   Two batches racing each other cannot both miss the other: the one whose write became visible last re-looks-up
   after the other's is visible, finds it and merges. Merges are deterministic
   (``plugin.fold.cluster.merge_survivor``) and idempotent, so concurrent merges agree.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import check_type, refusals_as_server_errors
from newsfold.plugin.fold import founding
from newsfold.plugin.fold.by_id import read_docs
from newsfold.plugin.fold.candidates import lookup, must_link_edges, verified_edges
from newsfold.plugin.fold.cluster import NO_CONSTRAINTS, Constraints, Decision, Match, decide, merge_survivor, verify
from newsfold.plugin.fold.constraints import load_constraints
from newsfold.plugin.fold.document import (
    FOLD,
    UNCHANGED_SOURCE,
    Candidate,
    Outcome,
    cluster_of,
    content_fields,
    fold_fields,
    fold_of,
    site_signals,
    without_nulls,
)
from newsfold.plugin.fold.index import check_meta_cached
from newsfold.plugin.fold.ingest_args import check_delivery, check_pages, check_presence
from newsfold.plugin.fold.presence import Presence, record
from newsfold.plugin.fold.provenance import refresh_origins, story_origin
from newsfold.plugin.fold.regroup import enforce_constraints, relabel
from newsfold.plugin.fold.rollover import lookup_scope, reconcile_scope
from newsfold.plugin.fold.store import bulk_failures, current_labels
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import StoryStatistics, uses_stats
from newsfold.plugin.sign.signed_page import SignedPage

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

log = logging.getLogger(__name__)

MAX_RECONCILE_ROUNDS = 10


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
    constraints: Constraints = NO_CONSTRAINTS  # editor corrections touching the batch (plugin.edit.corrections)
    content: bool = True  # also write the article fields (newsfold's own index); a host index keeps its own
    #: page id -> the committed stories its call merged into its own (outcome ``merged``)
    absorbed: dict[str, list[str]] = field(default_factory=dict)
    #: page id -> the cluster of a page indexed before with other content (a re-ingest of a changed page)
    previous: dict[str, str] = field(default_factory=dict)
    #: page id -> when that page was first seen (kept: provenance bounds a page's time by its first sighting)
    first_seen: dict[str, str] = field(default_factory=dict)
    #: page id -> the copy its reconcile found when its story joined another one after the write
    joined: dict[str, Match] = field(default_factory=dict)
    presence: Presence | None = None  # the band keys' filter (plugin.fold.presence): prunes lookups, gets the keys
    written: dict[str, str] = field(default_factory=dict)  # page id -> the index its keys went to (a presence)


def prepare(pages: list[SignedPage], *, client: Elasticsearch, settings: Settings, content: bool = True,
            presence: Presence | None = None) -> BatchState:  # fmt: skip
    """Drop unchanged re-ingests (realtime GET), then look up and decide."""
    unique: dict[str, SignedPage] = {}
    for p in pages:
        unique[p.page_id] = p  # the last version of an id within a batch wins
    state = BatchState(pages=[], content=content, presence=presence)
    if unique:
        docs = read_docs(client, settings.index, list(unique), source=UNCHANGED_SOURCE)
        for doc in docs:
            p = unique[doc["_id"]]
            src = doc.get("_source") if doc.get("found") else None
            # a page stored at fold layout 7 or before (``band_keys``) is written again, at the current layout
            if src and fold_of(src).get("content_hash") == p.content_hash and not fold_of(src).get("band_keys"):
                state.outcomes[p.page_id] = Outcome(p.page_id, "unchanged", cluster_id=cluster_of(src))
                state.unchanged.append(p)
            else:
                if previous := cluster_of(src):
                    state.previous[p.page_id] = previous
                if seen := fold_of(src).get("first_seen"):
                    state.first_seen[p.page_id] = seen
                state.pages.append(p)
    # only the indices of the lookup window (plugin.fold.rollover): older copies found no story here
    state.candidates = lookup(state.pages, client=client, settings=settings, scope=lookup_scope(client, settings),
                              presence=presence)  # fmt: skip
    batch_ids = [p.page_id for p in state.pages]
    named = set(batch_ids) | {c.page_id for found in state.candidates.values() for c in found}
    state.constraints = load_constraints(named, client=client, settings=settings, unlabelled=batch_ids)
    edges = verified_edges(state.pages, state.candidates, settings)
    edges += must_link_edges(state.pages, state.candidates, state.constraints, edges, client=client, settings=settings)
    state.decision = decide(batch_ids, edges, state.constraints)
    name_new_stories(state, client=client, settings=settings)
    return state


def name_new_stories(state: BatchState, *, client: Elasticsearch, settings: Settings) -> None:
    """Rename the batch's new stories whose founder's id already names another story (``plugin.fold.founding``).

    That happens when a page is rewritten with text that no longer belongs to
    its old story, or comes back after a delete while its copies stayed: the
    old story keeps its name, the new one gets ``<page id>~<hash>``.
    """
    decision = state.decision
    if decision is None or not decision.founders:
        return
    pages = {p.page_id: p for p in state.pages}
    founders = {name: (pid, pages[pid].content_hash) for name, pid in decision.founders.items()}
    free = founding.free_names(founders, besides=list(pages), client=client, settings=settings)
    for name, new_name in sorted(free.items()):
        if new_name != name:
            decision.rename(name, new_name)
        elif state.previous.get(decision.founders[name]) == name:
            del decision.founders[name]  # a changed page keeps its own story: not a new one


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
    docs: dict[str, dict[str, Any]] = {}
    founder_of = {pid: name for name, pid in decision.founders.items()}
    for p in state.pages:
        doc = docs[p.page_id] = fold_fields(
            p,
            cluster_id=decision.cluster_of[p.page_id],
            match=_copy_of(p, decision),
            # an editor's choice survives a re-ingest and a reindex
            representative=bool(state.constraints.representative.get(p.page_id)),
            folded=now,
            founding=founder_of.get(p.page_id),
            first_seen=state.first_seen.get(p.page_id),
        )
        if state.content:
            doc.update(content_fields(p, ingested=now))
    _with_origins(state, docs)
    # a page with nothing of newsfold's stored yet needs no empty field cleared
    actions = [{"_op_type": "update", "_index": settings.index, "_id": pid, "doc_as_upsert": True,
                "doc": doc if pid in state.previous else without_nulls(doc)} for pid, doc in docs.items()]  # fmt: skip
    if state.presence is not None:  # the keys go into the filter first: a failed add writes nothing
        actions = record(state.presence, state.pages, actions, client=client, alias=settings.index)
        state.written = {str(a["_id"]): str(a["_index"]) for a in actions}
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


def _with_origins(state: BatchState, docs: dict[str, dict[str, Any]]) -> None:
    """Give each page its story's origin in its one write (``plugin.fold.provenance``): the origin of a story the
    batch founds from its pages, else the origin the story's indexed pages hold (a candidate's). A story the batch
    merges gets it after the write, as does one whose origin this batch changes."""
    decision = state.decision
    assert decision is not None
    stored = {c.cluster_id: c.origin for found in state.candidates.values() for c in found if c.origin}
    merging = set(decision.merges) | set(decision.merges.values())
    stories: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for pid, doc in docs.items():
        stories.setdefault(decision.cluster_of[pid], []).append((pid, doc))
    for cluster, versions in stories.items():
        if cluster in merging:
            continue
        origin = story_origin(versions) if cluster in decision.founders else stored.get(cluster)
        for _, doc in versions if origin else ():
            doc[FOLD].update(origin)


def reconcile(state: BatchState, *, client: Elasticsearch, settings: Settings) -> None:
    """Look the batch's pages up again and merge clusters found since the first lookup.

    The unchanged re-ingests are looked up too: their earlier delivery may
    have died after its write and before this step. With a presence, a page
    asks its own index only for its keys another add brought (``plugin.fold.presence``).
    """
    refused: set[tuple[str, str]] = set()  # merges a cannot-link forbids (or with nothing left to move)
    pages = state.pages + state.unchanged
    racing = reconcile_scope(client, settings)  # a racing writer's pages are in the write index
    for _ in range(MAX_RECONCILE_ROUNDS):
        if not pages:
            return
        labels = current_labels([p.page_id for p in pages], client=client, settings=settings)
        present = [p for p in pages if labels.get(p.page_id) is not None]
        found = lookup(present, client=client, settings=settings, exclude_clusters=labels, scope=racing,
                       presence=state.presence, written=state.written)  # fmt: skip
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


def finish(
    state: BatchState, *, client: Elasticsearch, settings: Settings, delivery: str | None = None
) -> list[Outcome]:
    """Commit the batch's new stories (``plugin.fold.founding``) and give every page its outcome.

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
      and reported ``new``, and so is one that an earlier run of the same
      ``delivery`` over the same pages committed and died before reporting.
    """
    decision = state.decision
    founders = {pid: name for name, pid in decision.founders.items()} if decision else {}
    founders = {pid: name for pid, name in founders.items() if pid in {p.page_id for p in state.pages}}
    for p in state.unchanged:  # a founder whose earlier delivery died before its commit
        cluster = state.outcomes[p.page_id].cluster_id
        if cluster:
            founders.setdefault(p.page_id, cluster)
    # reads which are still pending, and which this delivery (its name and its pages) committed before
    batch = [(p.page_id, p.content_hash) for p in state.pages + state.unchanged]
    token = founding.commit_token(delivery, batch)  # a conflict may hide a write of ours that held
    committed = founding.commit(founders, client=client, settings=settings, token=token)
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


@refusals_as_server_errors("ingest")
def ingest(
    pages: list[SignedPage],
    *,
    client: Elasticsearch,
    settings: Settings,
    index: str | None = None,
    content: bool | None = None,
    stats: StoryStatistics | None = None,
    delivery: str | None = None,
    presence: Presence | None = None,
) -> list[Outcome]:
    """Find the cluster of every signed page and write it (the public "find its cluster" call).

    Safe to run concurrently from many workers and processes against one index (the module docstring).
    Re-ingesting an unchanged page changes nothing.

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
        presence: the band keys' filter (``plugin.fold.presence``); every writer into a filtered index passes it.

    Returns:
        One outcome per distinct page id.

    Raises:
        InputTypeError, InputError: bad arguments (``plugin.fold.ingest_args``).
        IndexMismatchError: the index lacks the fold fields or was built with
            other signature settings.
        ServerError: Elasticsearch refused a lookup or a write.
        PresenceUnavailable: ``presence`` could not take the batch's keys; nothing was written (try again).
    """
    pages = check_pages(pages, settings=settings)
    check_type(index, str, "index", optional=True)
    check_type(content, bool, "content", optional=True)
    check_delivery(delivery)
    check_presence(presence)
    if content is None:
        content = index is None
    if index is not None and index != settings.index:
        settings = settings.replace(index=index)
    check_meta_cached(client, settings, settings.index)
    state = prepare(pages, client=client, settings=settings, content=content, presence=presence)
    write(state, client=client, settings=settings)
    reconcile(state, client=client, settings=settings)
    enforce_constraints([p.page_id for p in state.pages], client=client, settings=settings)
    outcomes = finish(state, client=client, settings=settings, delivery=delivery)
    _record_stories(state, outcomes, client=client, settings=settings, stats=stats)
    return outcomes


def _record_stories(
    state: BatchState,
    outcomes: list[Outcome],
    *,
    client: Elasticsearch,
    settings: Settings,
    stats: StoryStatistics | None = None,
) -> None:
    """What the batch's stories change besides their pages: their origins, and the collection's story frequencies.

    Every story a page of the batch is in now has its origin refreshed
    (``plugin.fold.provenance``); each page that started a new story adds its
    features to ``stats`` when the settings read them.
    """
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
