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
import hashlib
import logging
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
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
from newsfold.plugin.collection import StoryStats
from newsfold.plugin.constraints import load_constraints
from newsfold.plugin.extract import Article, Rejection, extract_article
from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import Signature, band_keys, content_hash, signed_features, uses_stats
from newsfold.plugin.stats import RepeatedLines
from newsfold.plugin.urls import normalize_title, normalize_url, site_of

log = logging.getLogger(__name__)

MAX_CANDIDATES = 50
MAX_RECONCILE_ROUNDS = 10
MAX_CLUSTER_PAGES = 10_000  # pages read when checking a merge against the corrections
MAX_RECLUSTER_PAGES = 1_000  # every pair is verified: ~13 s at 1,000 identical copies on the stand-in


@dataclass(frozen=True)
class Page:
    """One page to ingest: raw bytes (or decoded HTML) and what is known about it."""

    html: bytes | str
    url: str | None = None
    id: str | None = None
    site: str | None = None
    lang: str | None = None
    published: str | None = None


@dataclass
class SignedPage:
    """A page ready to index: the article, its signature and its band keys."""

    page_id: str
    url: str | None
    url_key: str | None
    site: str | None
    article: Article
    signature: Signature
    band_keys: list[str]
    content_hash: str
    published: str | None = None
    title_key: str | None = None
    features: np.ndarray | None = None  # feature hashes counted by StoryStats when the page starts a story
    nearest_rejected: float | None = None  # best Jaccard among candidates that failed verification

    def document(self, *, cluster_id: str, match: Match | None, ingested: str) -> dict:
        return {
            "title": self.article.title,
            "body": self.article.text,
            "url": self.url,
            "url_key": self.url_key,
            "site": self.site,
            "lang": self.article.lang,
            # a date the page states wins over one given from outside (often a crawl date)
            "published": self.article.published or self.published,
            "ingested": ingested,
            "band_keys": self.band_keys,
            "cluster_id": cluster_id,
            "signature": self.signature.encode(),
            "shingle_count": self.signature.shingle_count,
            "token_count": self.signature.token_count,
            "content_hash": self.content_hash,
            "similarity": round(match.similarity, 4) if match else None,
            "matched_id": match.page_id if match else None,
            "nearest_rejected": round(self.nearest_rejected, 4) if self.nearest_rejected is not None else None,
            "title_key": self.title_key,
            "cjk_features": self.signature.cjk_features or None,
        }

    def day(self) -> str | None:
        """The page's publication day (YYYY-MM-DD) when known."""
        published = self.article.published or self.published
        return published[:10] if published else None


@dataclass
class Outcome:
    """What happened to one page."""

    page_id: str
    status: str  # "new", "duplicate", "unchanged" or "rejected"
    cluster_id: str | None = None
    similarity: float | None = None
    matched_id: str | None = None
    reason: str | None = None
    detail: str | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class Candidate:
    """An indexed page found by the band lookup."""

    page_id: str
    cluster_id: str
    signature: Signature
    site: str | None = None
    title_key: str | None = None
    url_key: str | None = None
    day: str | None = None


@dataclass
class BatchState:
    """What the steps of one batch hand to each other (exposed for tests)."""

    pages: list[SignedPage]
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    decision: Decision | None = None
    constraints: Constraints = NO_CONSTRAINTS  # editor corrections touching the batch (plugin.corrections)


def page_id_for(page: Page, text: str | None = None) -> str:
    """The document id: the caller's id, else a hash of the normalised URL, else of the text."""
    if page.id:
        return str(page.id)
    key = normalize_url(page.url) or text or ""
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


def sign_page(
    page: Page, settings: Settings, *, repeated: RepeatedLines | None = None, stats: StoryStats | None = None
) -> SignedPage | Rejection:
    """Extract and sign one page (the public "sign a page" call).

    Args:
        page: the raw page and its metadata.
        settings: signature and extraction settings.
        repeated: the site statistics; when given, lines other pages of the
            same site carried this week are left out of the signature.
        stats: the collection's story frequencies, read by the weighted
            signature and the frequent-shingle filter (see ``plugin.collection``).

    Returns:
        A ``SignedPage`` ready for :func:`ingest`, or the ``Rejection``.
    """
    article = extract_article(
        page.html,
        url=page.url,
        lang=page.lang,
        min_tokens=settings.min_tokens,
        max_bytes=settings.max_page_bytes,
        cleanup=settings.cleanup,
    )
    if isinstance(article, Rejection):
        return article
    return sign_article(
        article,
        page_id=page_id_for(page, article.text),
        url=page.url,
        site=page.site,
        published=page.published,
        settings=settings,
        repeated=repeated,
        stats=stats,
    )


def sign_article(
    article: Article,
    *,
    page_id: str,
    url: str | None,
    site: str | None,
    published: str | None,
    settings: Settings,
    repeated: RepeatedLines | None = None,
    stats: StoryStats | None = None,
) -> SignedPage:
    """Sign an extracted article (the second half of :func:`sign_page`; a text reindex starts here).

    Args:
        article: the extracted title and text.
        page_id: the document id.
        url: the page URL, if known.
        site: the site; the URL's host when None.
        published: a publication date given from outside (the article's own date wins).
        settings: signature settings.
        repeated: see :func:`sign_page`.
        stats: see :func:`sign_page`.

    Returns:
        The signed page.
    """
    site = site or site_of(url)
    text = article.text
    if repeated is not None:
        text = repeated.strip(text, site=site, page_id=page_id, date=article.published or published)
    signature, features = signed_features(text, settings, stats=stats)
    return SignedPage(
        page_id=page_id,
        url=url,
        url_key=normalize_url(url),
        site=site,
        article=article,
        signature=signature,
        band_keys=band_keys(signature.hashvalues, bands=settings.bands, rows=settings.rows),
        content_hash=content_hash(article.title + "\n" + article.text),
        published=published,
        title_key=normalize_title(article.title, site),
        features=features,
    )


def _candidate(hit: dict) -> Candidate | None:
    src = hit.get("_source") or {}
    if not src.get("signature") or not src.get("cluster_id"):
        return None
    sig = Signature.decode(
        src["signature"],
        shingle_count=int(src.get("shingle_count") or 0),
        token_count=int(src.get("token_count") or 0),
        cjk_features=src.get("cjk_features") or "",
    )
    published = src.get("published")
    return Candidate(
        hit["_id"],
        src["cluster_id"],
        sig,
        site=src.get("site"),
        title_key=src.get("title_key"),
        url_key=src.get("url_key"),
        day=published[:10] if isinstance(published, str) else None,
    )


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
        out[p.page_id] = [c for c in map(_candidate, res["hits"]["hits"]) if c is not None]
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


def prepare(pages: list[SignedPage], *, client: Elasticsearch, settings: Settings) -> BatchState:
    """Drop unchanged re-ingests (realtime GET), then look up and decide."""
    unique: dict[str, SignedPage] = {}
    for p in pages:
        unique[p.page_id] = p  # the last version of an id within a batch wins
    state = BatchState(pages=[])
    if unique:
        docs = client.mget(index=settings.index, ids=list(unique), source=["content_hash", "cluster_id"])["docs"]
        for doc in docs:
            p = unique[doc["_id"]]
            src = doc.get("_source") if doc.get("found") else None
            if src and src.get("content_hash") == p.content_hash:
                state.outcomes[p.page_id] = Outcome(p.page_id, "unchanged", cluster_id=src.get("cluster_id"))
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
        for doc in client.mget(index=settings.index, ids=missing, source=queries.LOOKUP_SOURCE)["docs"]:
            c = _candidate(doc) if doc.get("found") else None
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
    """Bulk-index the batch with ``refresh=wait_for`` and apply its merges."""
    if not state.pages:
        return
    decision = state.decision
    assert decision is not None
    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    actions = [
        {
            "_op_type": "index",
            "_index": settings.index,
            "_id": p.page_id,
            "_source": p.document(cluster_id=decision.cluster_of[p.page_id], match=_copy_of(p, decision), ingested=now),
        }
        for p in state.pages
    ]
    for action in actions:  # an editor's choice survives a re-ingest and a reindex
        if state.constraints.representative.get(action["_id"]):
            action["_source"]["representative"] = True
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
            {"_op_type": "update", "_index": settings.index, "_id": h["_id"], "doc": {"cluster_id": survivor}}
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
    docs = client.mget(index=settings.index, ids=ids, source=["cluster_id"])["docs"]
    return {d["_id"]: (d.get("_source") or {}).get("cluster_id") if d.get("found") else None for d in docs}


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
    pages: list[SignedPage], *, client: Elasticsearch, settings: Settings, stats: StoryStats | None = None
) -> list[Outcome]:
    """Find the cluster of every signed page and index it (the public "find its cluster" call).

    Safe to run concurrently from many workers against one index; see the
    module docstring. Re-ingesting an unchanged page changes nothing.

    Args:
        pages: pages from :func:`sign_page`.
        client: an Elasticsearch client (``plugin.client.build_client``).
        settings: the settings the index was created with.
        stats: the collection's story frequencies; each page that starts a
            new story adds its features (used by weighted signatures and the
            frequent-shingle filter).

    Returns:
        One outcome per distinct page id.
    """
    state = prepare(pages, client=client, settings=settings)
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
    body = queries.cluster_pages(cluster_ids, size=MAX_CLUSTER_PAGES, source=["cluster_id"])
    for hit in client.search(index=settings.index, **body)["hits"]["hits"]:
        out.setdefault(hit["_source"]["cluster_id"], []).append(hit["_id"])
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
    body = queries.cluster_pages([cluster_id], size=MAX_RECLUSTER_PAGES + 1, source=queries.LOOKUP_SOURCE)
    hits = client.search(index=settings.index, **body)["hits"]["hits"]
    if len(hits) > MAX_RECLUSTER_PAGES:
        raise ValueError(f"cluster {cluster_id} has more than {MAX_RECLUSTER_PAGES} pages; too large to recluster")
    members = [c for c in map(_candidate, hits) if c is not None]
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
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": {"cluster_id": label}}
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
