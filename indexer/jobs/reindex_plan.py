"""The plan of a reindex: which chunks build the new index, computed once and kept in Redis.

A resumed run works on exactly the same chunks (``indexer.jobs.reindex`` is
the coordinator that sends them, ``indexer.jobs.reindex_chunks`` the worker side
that builds one):

- ``text`` source: ranges of ``cluster_id`` of about ``chunk_pages`` pages
  (a composite aggregation), read cluster by cluster: the copies of a story
  come in one batch and are decided in memory, as at their first ingest.
  Each page is signed again from its stored text.
- ``archive`` source: every page record of the raw-page archive, put in a
  bucket by a hash of the page's cluster in the old index (of its id for a
  page not there). One worker takes a bucket in archive order, so a page
  archived several times ends with its last version, as when it was
  ingested, and the copies of a story are decided one after the other.
- Then, for both, a last "missing" pass over ``content_hash`` prefixes (a
  field no merge changes) signs again, from the stored text, every page of
  the old index the new one lacks: pages ingested without an archive, or
  moved between cluster ranges by a live merge while the ranges were read.
"""

from __future__ import annotations

import json
import logging
import math
import zlib
from collections.abc import Callable

from elasticsearch import Elasticsearch

from newsfold.plugin.fold.by_id import read_docs, search_whole
from newsfold.plugin.fold.document import CLUSTER_ID, cluster_of
from newsfold.state.jobs import JobStore

log = logging.getLogger(__name__)

#: plan entries sent to Redis in one pipeline while the archive is bucketed
PLAN_FLUSH = 1000


def plan_key(store: JobStore, job_id: str, bucket: int | str) -> str:
    """The Redis list holding one bucket of a job's plan (``"text"``: the cluster-range bounds)."""
    return f"{store.namespace}:job:{job_id}:plan:{bucket}"


def hex_prefixes(length: int) -> list[str]:
    """Every hex string of ``length`` characters, in order."""
    return [format(n, f"0{length}x") for n in range(16**length)] if length else [""]


def prefix_length(pages: int, chunk_pages: int) -> int:
    """Hex digits of ``content_hash`` per "missing" chunk so a chunk holds about ``chunk_pages`` pages (at least 1)."""
    chunks = max(1, math.ceil(pages / max(1, chunk_pages)))
    return max(1, math.ceil(math.log(chunks, 16))) if chunks > 1 else 1


class ReindexPlan:
    """The chunks of one reindex job (see the module docstring).

    Args:
        store: the job store (the plan's lists live beside the job).
        job_id: the reindex job.
        client: the Elasticsearch client the old index is read with.
        chunk_pages: pages per chunk.
        beat: called between long steps, so the job shows it is alive.
    """

    def __init__(
        self, store: JobStore, job_id: str, client: Elasticsearch, *, chunk_pages: int, beat: Callable[[], None]
    ) -> None:
        self.store, self.job_id, self.client = store, job_id, client
        self.redis = store.redis
        self.chunk_pages = chunk_pages
        self.beat = beat

    def _key(self, bucket: int | str) -> str:
        return plan_key(self.store, self.job_id, bucket)

    def missing_chunks(self, state: dict) -> list[dict]:
        """The last pass: one chunk per ``content_hash`` prefix (``state["prefix_length"]`` hex digits)."""
        prefixes = hex_prefixes(int(state["prefix_length"]))
        return [{"key": f"m{p}", "kind": "missing", "prefix": p} for p in prefixes]

    def text_chunks(self, state: dict) -> list[dict]:
        """Cluster-id ranges of about ``chunk_pages`` pages each (computed once, kept in Redis)."""
        key = self._key("text")
        if not state.get("text_planned"):
            self.redis.delete(key)
            bounds = self._cluster_bounds(state["old"])
            if bounds:
                self.redis.rpush(key, *bounds)
            self.store.set_state(self.job_id, text_planned=1)
        bounds = [b.decode() if isinstance(b, bytes) else b for b in self.redis.lrange(key, 0, -1)]
        edges = [None, *bounds, None]
        return [
            {"key": f"t{n}", "kind": "text", "gte": low, "lt": high}
            for n, (low, high) in enumerate(zip(edges, edges[1:], strict=False))
        ]

    def _cluster_bounds(self, old: str) -> list[str]:
        """The cluster ids that start a new range, every ``chunk_pages`` pages in cluster-id order."""
        bounds: list[str] = []
        pages = 0
        after = None
        while True:
            composite: dict = {"size": 1000, "sources": [{"c": {"terms": {"field": CLUSTER_ID}}}]}
            if after:
                composite["after"] = after
            res = search_whole(self.client, old, size=0, aggs={"clusters": {"composite": composite}})
            agg = res["aggregations"]["clusters"]
            for bucket in agg["buckets"]:
                if pages >= self.chunk_pages:
                    bounds.append(bucket["key"]["c"])
                    pages = 0
                pages += bucket["doc_count"]
            after = agg.get("after_key")
            if not agg["buckets"] or not after:
                return bounds
            self.beat()

    def archive_chunks(self, state: dict, root: str | None) -> tuple[list[dict], int]:
        """One chunk per bucket of archive records, and how many records the plan holds.

        The archive under ``root`` is bucketed when the job is not yet planned;
        a resumed run finds its plan in Redis (``root`` is then not read).
        """
        if not state.get("planned"):
            if root is None:
                raise ValueError("the archive must be named to plan a reindex from it")
            self._bucket_archive(state, root)
            state = self.store.state(self.job_id)
        chunks = [{"key": f"a{b}", "kind": "archive", "bucket": b} for b in range(int(state["buckets"]))]
        return chunks, int(state["records"])

    def _bucket_archive(self, state: dict, root: str) -> None:
        """Bucket every archived page record (``file number:offset:length``) by its story in the old index."""
        from newsfold.indexer.jobs.archive import archive_files, iter_archive  # warcio only for an archive reindex

        self.forget(state)
        files = [str(p.resolve()) for p in archive_files(root)]
        buckets = max(1, math.ceil(max(int(state["total"]), 1) / self.chunk_pages))
        self.store.set_state(self.job_id, files=json.dumps(files), planning=buckets)
        number = {path: n for n, path in enumerate(files)}
        records = damaged = 0
        pending: list[tuple[str, str]] = []  # (page id or url, plan entry)
        for ref, page in iter_archive(root, headers_only=True):
            file_no = number.get(ref.path)
            if file_no is None:
                continue  # a file begun after the listing: the "missing" pass takes its pages from the old index
            if page.error:
                damaged += 1  # e.g. the tail a live ingest is writing: not part of this plan
                continue
            pending.append((page.id or page.url or f"{file_no}:{ref.offset}", f"{file_no}:{ref.offset}:{ref.length}"))
            if len(pending) >= PLAN_FLUSH:
                records += self._push(state["old"], pending, buckets)
        records += self._push(state["old"], pending, buckets)
        if damaged:
            log.warning("job %s: %d damaged archive records left out", self.job_id, damaged)
        self.store.set_state(self.job_id, planned=1, buckets=buckets, records=records, planning=None)

    def _push(self, old: str, pending: list[tuple[str, str]], buckets: int) -> int:
        """Append the period's plan entries to their buckets, empty ``pending``; returns how many were kept.

        The copies of a story go to one bucket (by their cluster in the old
        index), so one worker takes them in order and decides them as the first
        ingest did. A record of a page that another index behind the alias
        holds belongs to that index's period, and is left out.
        """
        ids = sorted({ident for ident, _ in pending})
        alias = self.store.state(self.job_id).get("alias") or old
        docs = read_docs(self.client, alias, ids, source=[CLUSTER_ID]) if ids else []
        found = {d["_id"]: d for d in docs if d.get("found")}
        cluster = {i: cluster_of(d["_source"]) for i, d in found.items() if d["_index"] == old}
        writes = bool(self.store.state(self.job_id).get("writes"))
        pipe = self.redis.pipeline(transaction=False)
        kept = 0
        for ident, entry in pending:
            # a period's own pages; a page in no index (archived, never indexed) goes to the write index's period
            if ident not in cluster and (ident in found or not writes):
                continue
            bucket = zlib.crc32((cluster.get(ident) or ident).encode("utf-8")) % buckets
            pipe.rpush(self._key(bucket), entry)
            kept += 1
        pipe.execute()
        pending.clear()
        self.beat()
        return kept

    def forget(self, state: dict) -> None:
        """Delete the plan's lists (a finished or failed job, or a plan made again)."""
        count = int(state.get("buckets") or state.get("planning") or 0)
        self.redis.delete(self._key("text"), *(self._key(b) for b in range(count)))
