"""A batch's candidates and its verified copies: the band-key lookup, then the pairs that verify.

Steps 2 and 3 of the batch protocol (``plugin.fold.batch``): each page is
looked up by its band keys (a ``terms_set`` query, one ``msearch``
for the batch); its candidates, the batch's other pages that share enough
band keys with it, and its editors' must-link partners are verified from
their signatures (``plugin.fold.cluster.verify``). The edges found are what
``plugin.fold.cluster.decide`` joins.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from elasticsearch import BadRequestError

from newsfold.plugin.errors import item_refusal
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.by_id import SHARD_WAITS, no_shard, not_known_yet, read_docs
from newsfold.plugin.fold.cluster import Constraints, Match, verify
from newsfold.plugin.fold.document import LOOKUP_SOURCE, Candidate, read_candidate, site_signals
from newsfold.plugin.fold.index import wait_until_active
from newsfold.plugin.fold.presence import Plan, Presence, prune
from newsfold.plugin.fold.rollover import Scope
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import REST_MARK, band_keys
from newsfold.plugin.sign.signed_page import SignedPage

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

log = logging.getLogger(__name__)

MAX_CANDIDATES = 50


def lookup(
    pages: list[SignedPage],
    *,
    client: Elasticsearch,
    settings: Settings,
    exclude_clusters: Mapping[str, str | None] | None = None,
    scope: Scope | None = None,
    presence: Presence | None = None,
    written: Mapping[str, str] | None = None,
) -> dict[str, list[Candidate]]:
    """Band-key term lookup for every page in one ``msearch``.

    ``exclude_clusters`` (page id -> cluster id) leaves each page's own
    cluster out of its candidates; ``scope`` (default: every index behind
    ``settings.index``, none holding pages of an older layout) is where to
    search (the lookup window, ``plugin.fold.rollover``). With a ``presence``
    filter and a scope, each page asks only for its keys that may exist there,
    and a page with too few of them asks nothing (``plugin.fold.presence``);
    ``written`` (page id -> the index the batch just added its keys to) makes
    it the reconcile's lookup, which asks there only for keys that may recur.
    """
    plans = (
        prune(pages, scope.indices, presence=presence, min_bands=settings.min_bands, written=written)
        if presence is not None and scope and scope.indices
        else {}
    )
    skipped = {pid for pid, plan in plans.items() if plan is None}  # no index may hold min_bands of its keys
    pages = [p for p in pages if p.page_id not in skipped]
    if not pages:
        return {pid: [] for pid in skipped}
    own = exclude_clusters or {}
    responses = None
    if client not in _REFUSE_TERMS_SET:
        try:
            responses = _msearch(pages, client=client, settings=settings, exclude_clusters=own, scope=scope,
                                 shape="terms_set", plans=plans)  # fmt: skip
        except BadRequestError as exc:
            if not _refuses_terms_set(str(exc)):
                raise
        if responses is None or any("error" in r and _refuses_terms_set(str(r["error"])) for r in responses):
            # a server without terms_set's constant minimum_should_match (the stand-in): one clause per key now on
            _REFUSE_TERMS_SET.add(client)
            responses = None
    if responses is None:
        responses = _msearch(pages, client=client, settings=settings, exclude_clusters=own, scope=scope,
                             shape="bool", plans=plans)  # fmt: skip
    out: dict[str, list[Candidate]] = {pid: [] for pid in skipped}
    for p, res in zip(pages, responses, strict=True):
        if "error" in res:
            raise item_refusal(f"band lookup failed for {p.page_id}", res)
        out[p.page_id] = [c for c in map(read_candidate, res["hits"]["hits"]) if c is not None]
    return out


#: clients whose server refused the ``terms_set`` lookup (their lookups send one ``bool`` clause per key)
_REFUSE_TERMS_SET: weakref.WeakSet[Elasticsearch] = weakref.WeakSet()


def _refuses_terms_set(error: str) -> bool:
    return "terms_set" in error and "minimum_should_match" in error


def _msearch(
    pages: list[SignedPage],
    *,
    client: Elasticsearch,
    settings: Settings,
    exclude_clusters: Mapping[str, str | None],
    scope: Scope | None,
    shape: str,
    plans: Mapping[str, Plan | None],
) -> list[dict[str, Any]]:
    """The band lookups of ``pages`` in one ``msearch``, asked again while a shard or a new index is not ready."""
    indices = scope.indices if scope else ()
    target = ",".join(indices) if indices else settings.index
    searches: list[dict[str, Any]] = []
    for p in pages:
        plan = plans.get(p.page_id)  # the presence filter's keys and indices (plugin.fold.presence)
        searches.append({"index": ",".join(plan.indices) if plan else target, **lookups.WHOLE})
        searches.append(
            lookups.band_lookup(
                [k for k in (plan.keys if plan else p.band_keys) if not k.startswith(REST_MARK)],
                size=MAX_CANDIDATES,
                exclude_ids=[p.page_id],
                min_bands=settings.min_bands,
                exclude_cluster=exclude_clusters.get(p.page_id),
                shape=shape,
                legacy_keys=band_keys(p.signature.hashvalues, bands=settings.bands, rows=settings.rows)
                if scope and scope.legacy
                else None,
            )
        )
    for wait in (*SHARD_WAITS, None):
        responses: list[dict[str, Any]] = client.msearch(searches=searches)["responses"]
        # named indices were listed behind the alias a moment ago: one the node does not know is new (a rollover's)
        if wait is None or not any(no_shard(r) or (indices and not_known_yet(r)) for r in responses):
            break
        # a primary not started yet (an index another process has just created) or moving: wait, then ask again
        log.info("band lookup in %s found no active shard (or no index yet); waiting %.1f s", settings.index, wait)
        wait_until_active(client, settings.index)
        time.sleep(wait)
    return responses


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


def must_link_edges(
    pages: list[SignedPage],
    candidates: dict[str, list[Candidate]],
    rules: Constraints,
    edges: list[tuple[str, Match]],
    *,
    client: Elasticsearch,
    settings: Settings,
) -> list[tuple[str, Match]]:
    """Edges from the batch's pages to their indexed must-link partners that no verified edge covers.

    ``decide`` joins must-link partners anyway; the edge carries the pair's
    similarity, so the outcome names the partner as the matched page.
    """
    if not rules.must_link:
        return []
    batch = {p.page_id: p for p in pages}
    covered = {(pid, m.page_id) for pid, m in edges}
    wanted = sorted(
        {
            (a, b)
            for x, y in rules.must_link
            for a, b in ((x, y), (y, x))
            if a in batch and b not in batch and b in rules.clusters and (a, b) not in covered
        }
    )
    known = {c.page_id: c for found in candidates.values() for c in found}
    missing = sorted({b for _, b in wanted if b not in known})
    if missing:
        for doc in read_docs(client, settings.index, missing, source=LOOKUP_SOURCE):
            c = read_candidate(doc) if doc.get("found") else None
            if c is not None:
                known[c.page_id] = c
    out = []
    for a, b in wanted:
        if b in known:
            _, j, cont = verify(batch[a].signature, known[b].signature, settings, site_signals(batch[a], known[b]))
            out.append((a, Match(b, rules.clusters[b], j, cont)))
    return out
