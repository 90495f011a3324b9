"""The worker side of a reindex: one chunk of the new index built from the old index or the raw-page archive.

A chunk is a range of cluster ids (signed again from the stored text), a
bucket of archive records (extracted again), or a ``content_hash`` prefix of
pages the new index still lacks (see ``indexer.jobs.reindex_plan`` for the
plan and ``indexer.jobs.reindex`` for the coordinator). :func:`run_chunk`
counts a chunk into its job once; :class:`ChunkBuilder` does the work, and
also serves the coordinator's catch-up passes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from elasticsearch import Elasticsearch, NotFoundError

from newsfold.indexer.jobs.reindex_periods import lookup_alias
from newsfold.indexer.jobs.reindex_plan import plan_key
from newsfold.plugin.extract.article import Article
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.by_id import search_whole, whole
from newsfold.plugin.fold.document import CLUSTER_ID, CONTENT_FIELDS, Outcome
from newsfold.plugin.fold.document import path as field_path
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.fold.presence import Presence
from newsfold.plugin.fold.rejections import record_rejections, rejections_index
from newsfold.plugin.fold.store import bulk_failures
from newsfold.plugin.ids import BAD_ID, id_problem, is_page_id, shown
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import SignedPage
from newsfold.plugin.sign.signing import sign_article
from newsfold.state.job_records import RETRYABLE_REASONS, parse_time
from newsfold.state.jobs import JobStore
from newsfold.state.repeated_lines import RepeatedLines
from newsfold.state.story_stats import StoryStats

log = logging.getLogger(__name__)

#: fields re-signing needs from a stored page
STORED_FIELDS = [*CONTENT_FIELDS, "newsfold.wire"]


SCROLL = "10m"


def target_settings(settings: Settings, target: str) -> Settings:
    """Settings that write into the new index ``target`` (through :func:`lookup_alias`) while corrections stay
    the alias's."""
    return settings.replace(index=lookup_alias(target), corrections_index=corrections_index(settings))


def sign_stored(page_id: str, source: dict, settings: Settings, *, repeated=None, stats=None) -> SignedPage:
    """Sign a stored page again from its title and text (no extraction), with today's signature settings."""
    article = Article(
        title=source.get("title") or "",
        text=source.get("body") or "",
        lang=source.get("lang"),
        published=source.get("published"),
        image=source.get("image"),
        wire=(source.get("newsfold") or {}).get("wire"),
        section=source.get("section"),
    )
    return sign_article(
        article,
        page_id=page_id,
        url=source.get("url"),
        site=source.get("site"),
        published=source.get("published"),
        settings=settings,
        repeated=repeated,
        stats=stats,
    )


def scan(
    client: Elasticsearch, index: str, query: dict, *, size: int, source=True, sort: str = "_doc"
) -> Iterator[list[dict]]:
    """Pages of hits of ``query`` over a whole index (scroll, by ``sort``), ``size`` hits at a time; every shard
    answers each page, or the chunk fails (a page left out would be missing from the rebuilt index)."""
    res = search_whole(client, index, query=query, size=size, sort=[sort], scroll=SCROLL, source=source)
    scroll_id = res.get("_scroll_id")
    try:
        while res["hits"]["hits"]:
            yield res["hits"]["hits"]
            res = whole(client.scroll(scroll_id=scroll_id, scroll=SCROLL), f"reading {index}")
            scroll_id = res.get("_scroll_id") or scroll_id
    finally:
        if scroll_id:
            client.options(ignore_status=404).clear_scroll(scroll_id=scroll_id)


def restore_ingested(
    client: Elasticsearch, settings: Settings, outcomes: list[Outcome], ingested: dict[str, str]
) -> int:
    """Give pages in the new index (``settings.index``) their first ``ingested`` time (ingest stamps "now").

    ``unchanged`` pages too: a chunk done again after an interruption finds
    its earlier writes unchanged, maybe before their time was restored. The
    pages are indexed either way, so a refused update is logged (with its
    reason) and counted, not raised.

    Returns:
        How many updates Elasticsearch refused.
    """
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": o.page_id, "doc": {"ingested": ingested[o.page_id]}}
        for o in outcomes
        if o.status != "rejected" and ingested.get(o.page_id)
    ]
    failed = bulk_failures(client, actions, settings=settings)
    if failed:
        page_id, reason = next(iter(sorted(failed.items())))
        log.warning("restoring the ingested time of %d page(s) failed, first %s: %s", len(failed), page_id, reason)
    return len(failed)


@dataclass
class ChunkContext:
    """What a chunk needs from the worker running it (built by ``indexer.pages.chunk_context``)."""

    settings: Settings  # on the alias
    client: Elasticsearch
    store: JobStore
    repeated: RepeatedLines | None
    stats: StoryStats | None  # read while signing; a reindex never adds to it
    #: payloads -> (signed pages, rejected outcomes, payload by page id)
    sign: Callable[[list[dict]], tuple[list[SignedPage], list[Outcome], dict[str, dict]]]
    presence: Presence | None = None  # the band keys' filter: it marked the new index, every write adds to it


def run_chunk(job_id: str, chunk: dict, ctx: ChunkContext) -> dict:
    """Build one chunk into the new index and count it into the job (once).

    Returns ``{"key", "pages", "skipped"}``; a chunk already counted, or of a
    job that is no longer running, is skipped.
    """
    key = chunk["key"]
    store = ctx.store
    job = store.get(job_id)
    if job is None or job.status != "running" or store.is_recorded(job_id, key):
        return {"key": key, "pages": 0, "skipped": True}
    state = store.state(job_id)
    target = state.get("target")
    if not target or not ctx.client.indices.exists(index=target):
        return {"key": key, "pages": 0, "skipped": True}
    alias = state.get("alias") or ctx.settings.index
    work = ChunkBuilder(job_id, state, ctx.settings.replace(index=alias), ctx, target)
    with store.heartbeat(job_id, key):
        if chunk["kind"] == "archive":
            outcomes, payloads, added = work.from_archive_bucket(int(chunk["bucket"]))
        elif chunk["kind"] == "missing":
            outcomes, payloads, added = work.missing_pages(chunk["prefix"])
        else:
            outcomes, payloads, added = work.from_cluster_range(chunk.get("gte"), chunk.get("lt"))
        if work.stopped:
            return {"key": key, "pages": len(outcomes), "skipped": True}
        store.record(job_id, key, outcomes, payloads=payloads, add_total=added)
    return {"key": key, "pages": len(outcomes), "skipped": False}


class ChunkBuilder:
    """Builds one chunk of the new index (or a catch-up pass of the coordinator)."""

    def __init__(self, job_id: str, state: dict, settings: Settings, ctx: ChunkContext, target: str) -> None:
        self.job_id = job_id
        self.state = state
        self.settings = settings  # alias
        self.ctx = ctx
        self.client = ctx.client
        self.target = target
        self.into = target_settings(settings, target)
        self.stopped = False

    def _still_running(self) -> bool:
        job = self.ctx.store.get(self.job_id)
        if job is None or job.status != "running":
            self.stopped = True  # cancelled or failed meanwhile: stop writing into an index about to go
        return not self.stopped

    def _ingest_new(
        self,
        signed: list[SignedPage],
        rejected: list[Outcome],
        ingested: dict[str, str],
        sources: dict[str, dict] | None = None,
    ) -> list[dict]:
        outcomes = ingest(signed, client=self.client, settings=self.into, presence=self.ctx.presence) if signed else []
        restore_ingested(self.client, self.into, outcomes, ingested)
        got = [o.as_dict() for o in rejected + outcomes]
        for o in got:
            if o["status"] == "rejected" and sources and o["page_id"] in sources:
                src = sources[o["page_id"]]
                o.update(url=src.get("url"), site=src.get("site"))  # shown in the rejection record
        record_rejections(got, client=self.client, settings=self.settings, job_id=self.job_id)
        return got

    def from_cluster_range(self, low: str | None, high: str | None) -> tuple[list[dict], dict, int]:
        """Re-sign the old index's pages whose cluster id is in ``[low, high)``, cluster by cluster.

        The copies of a story come in one batch, as they mostly did when they
        were first ingested, so the new index decides them in memory.
        """
        bounds = {k: v for k, v in (("gte", low), ("lt", high)) if v is not None}
        query = {"range": {CLUSTER_ID: bounds}} if bounds else {"match_all": {}}
        outcomes: list[dict] = []
        size = self.settings.batch_size
        for hits in scan(self.client, self.state["old"], query, size=size, source=STORED_FIELDS, sort=CLUSTER_ID):
            if not self._still_running():
                break
            outcomes += self.ingest_stored(hits)
        return outcomes, {}, 0

    def missing_pages(self, prefix: str) -> tuple[list[dict], dict, int]:
        """Re-sign the old index's pages (content hash starting with ``prefix``) the new index lacks.

        The last pass of every reindex: pages ingested without an archive
        (archive source), or moved between cluster ranges by a live merge
        while the ranges were read (text source). Pages this job rejected for
        their content stay out.
        """
        old = self.state["old"]
        query = {"prefix": {field_path("content_hash"): prefix}} if prefix else {"match_all": {}}
        outcomes: list[dict] = []
        added = 0
        for hits in scan(self.client, old, query, size=self.settings.batch_size, source=False):
            if not self._still_running():
                break
            ids = self._absent([h["_id"] for h in hits])
            if not ids:
                continue
            docs = self.client.mget(index=old, ids=ids, source=STORED_FIELDS)["docs"]
            found = [d for d in docs if d.get("found")]
            added += len(found)
            outcomes += self.ingest_stored(found)
        return outcomes, {}, added

    def catch_up(self, since: str, *, beat: Callable[[], None]) -> int:
        """The coordinator's catch-up pass: re-ingest the old index's pages written since ``since`` (live writes
        during the reindex) that this job has not handled; returns how many."""
        old = self.state["old"]
        self.client.indices.refresh(index=old)  # every acknowledged write becomes visible to the scan
        query = {"range": {"ingested": {"gte": since}}}
        pages = 0
        for hits in scan(self.client, old, query, size=self.settings.batch_size, source=STORED_FIELDS):
            hits = self.not_yet_handled(hits)
            if hits:
                self.ingest_stored(hits)
                pages += len(hits)
            beat()
        return pages

    def ingest_stored(self, hits: list[dict]) -> list[dict]:
        """Re-sign stored pages and ingest them into the new index; a page whose id the grammar of ``plugin.ids``
        refuses (written before it existed) is a ``bad_id`` rejection, recorded, not a failed chunk."""
        rejected = [
            Outcome(h["_id"], "rejected", reason=BAD_ID, detail=f"the id {why}: {shown(h['_id'])}")
            for h in hits
            if (why := id_problem(h["_id"]))
        ]
        signed = [
            sign_stored(h["_id"], h["_source"], self.settings, repeated=self.ctx.repeated, stats=self.ctx.stats)
            for h in hits
            if is_page_id(h["_id"])
        ]
        ingested = {h["_id"]: h["_source"].get("ingested") for h in hits}
        return self._ingest_new(signed, rejected, ingested)

    def _absent(self, ids: list[str]) -> list[str]:
        there = self.client.mget(index=self.target, ids=ids, source=False)["docs"]
        have = {d["_id"] for d in there if d.get("found")}
        wanted = [i for i in ids if i not in have]
        if not wanted:
            return []
        try:
            docs = self.client.mget(index=rejections_index(self.settings), ids=wanted)["docs"]
        except NotFoundError:
            return wanted
        refused = {d["_id"] for d in docs if self._refused(d)}
        return [i for i in wanted if i not in refused]

    def _refused(self, record: dict) -> bool:
        """Whether a rejection record says this job found the page's content unusable.

        A page this job could not read or write (``unreadable``, ``index_failed``,
        ...) is not refused: it is taken from the old index's stored text instead.
        """
        source = record.get("_source") or {}
        mine = record.get("found") and source.get("job_id") == self.job_id
        return bool(mine and source.get("reason") not in RETRYABLE_REASONS)

    def from_archive_bucket(self, bucket: int) -> tuple[list[dict], dict, int]:
        """Re-extract the archive records of one plan bucket, in archive order."""
        files = json.loads(self.state["files"])
        entries = [e.decode() if isinstance(e, bytes) else e for e in self._plan(bucket)]
        outcomes: list[dict] = []
        kept: dict[str, dict] = {}
        size = self.settings.batch_size
        for start in range(0, len(entries), size):
            if not self._still_running():
                break
            payloads = []
            for entry in entries[start : start + size]:
                file_no, offset, length = (int(x) for x in entry.split(":"))
                payloads.append({"archive": {"path": files[file_no], "offset": offset, "length": length}})
            signed, rejected, sources = self.ctx.sign(payloads)
            ingested = self._old_ingested([p.page_id for p in signed])
            got = self._ingest_new(signed, rejected, ingested, sources)
            kept.update({o["page_id"]: sources[o["page_id"]] for o in got if o["page_id"] in sources})
            outcomes += got
        return outcomes, kept, 0

    def _plan(self, bucket: int) -> list:
        return self.ctx.store.redis.lrange(plan_key(self.ctx.store, self.job_id, bucket), 0, -1)

    def _old_ingested(self, ids: list[str]) -> dict[str, str]:
        """The old index's ``ingested`` of versions written before the reindex began.

        Those are the versions the plan's archive records hold; a page written
        since may be newer than its record, so it keeps "now" and the catch-up
        (which skips pages whose ``ingested`` equals the old one) takes it from the old index.
        """
        if not ids:
            return {}
        began = parse_time(self.state.get("began"))
        docs = self.client.mget(index=self.state["old"], ids=ids, source=["ingested"])["docs"]
        out: dict[str, str] = {}
        for d in docs:
            when = (d.get("_source") or {}).get("ingested") if d.get("found") else None
            written = parse_time(when)
            if when and written and began and written < began:
                out[d["_id"]] = when
        return out

    def not_yet_handled(self, hits: list[dict]) -> list[dict]:
        """The catch-up's share of ``hits``: pages whose version in the old index this job has not handled.

        A page is handled when the new index holds it with the same
        ``ingested`` (a chunk rewrote exactly that version) or when this job
        rejected it after that version was written.
        """
        ids = [h["_id"] for h in hits]
        there = self.client.mget(index=self.target, ids=ids, source=["ingested"])["docs"]
        done = {d["_id"]: d["_source"].get("ingested") for d in there if d.get("found")}
        try:
            records = self.client.mget(index=rejections_index(self.settings), ids=ids)["docs"]
        except NotFoundError:
            records = []
        refused = {d["_id"]: d["_source"].get("at") for d in records if self._refused(d)}
        out = []
        for h in hits:
            ingested = h["_source"].get("ingested")
            if ingested and done.get(h["_id"]) == ingested:
                continue
            at, when = parse_time(refused.get(h["_id"])), parse_time(ingested)
            if at and when and at >= when:
                continue
            out.append(h)
        return out
