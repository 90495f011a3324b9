"""Zero-downtime reindex: new indices behind the alias, built in chunks by the workers, a period at a time, resumable.

The coordinator (:class:`Reindex`, run by ``newsfold reindex`` or by the task
``indexer.tasks.reindex``) takes a lock and rebuilds each index behind the
alias, oldest first (``indexer.jobs.reindex_periods``): it creates the new
index, queues chunks (``indexer.tasks.reindex_chunk``; planned once and kept
in Redis, ``indexer.jobs.reindex_plan``), catches up with pages ingested
meanwhile, restores the replicas, swaps the old index for the new one, catches
up once more, and deletes the old index. Every step's progress is in Redis
(``newsfold.state.jobs.JobStore``), so a coordinator or worker that dies is
restarted from its checkpoint. Why no page is lost: ``docs/ingest.md``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from newsfold import task_names
from newsfold.indexer.jobs.dispatch import Work, drive
from newsfold.indexer.jobs.reindex_chunks import ChunkBuilder, ChunkContext, target_settings
from newsfold.indexer.jobs.reindex_periods import (
    close_lookup_alias,
    create_period_index,
    open_lookup_alias,
    periods,
    swap_period,
)
from newsfold.indexer.jobs.reindex_plan import ReindexPlan, prefix_length
from newsfold.plugin.edit.corrections import reapply_corrections
from newsfold.plugin.errors import NewsfoldError
from newsfold.plugin.fold.by_id import Behind, behind
from newsfold.plugin.fold.index import new_index_name
from newsfold.state.job_records import OUTCOMES, Job
from newsfold.state.jobs import JobStore
from newsfold.state.locks import LockBusy, RedisLock
from newsfold.state.reindex_target import announce_target, withdraw_target

log = logging.getLogger(__name__)

LOCK_TTL = 30.0
#: a catch-up re-reads pages ingested from this long before its pass started: it covers a write's
#: ``ingested`` time being taken before its bulk request was sent and retried (es_timeout x retries)
#: and clock differences between machines
CATCH_UP_MARGIN = 300.0
#: a chunk is about this many ingest batches (500 pages at the default batch size: small enough that
#: every worker gets chunks of a modest index, large enough that the coordinator's bookkeeping is negligible)
CHUNK_BATCHES = 5
#: the job state of one period's rebuild, cleared when the next period begins
PERIOD_STATE = ("target", "old", "writes", "since", "catch_up", "began", "planned", "planning", "buckets", "records",
                "files", "total", "text_planned", "prefix_length")  # fmt: skip


class ReindexError(NewsfoldError, RuntimeError):
    """A reindex that cannot go on; the message is for the operator."""


def lock_key(alias: str) -> str:
    return f"newsfold:reindex:{alias}:lock"


class Reindex:
    """The coordinator of one reindex job (see the module docstring).

    Args:
        job_id: a ``reindex`` job of ``store`` (params ``source``, optional ``index``).
        app: the Celery app chunks are sent with.
        store: the job store.
        ctx: the Elasticsearch client and settings (``index`` is the alias
            unless the job names one), also used by the catch-up passes the
            coordinator runs itself.
        chunk_pages: pages per chunk (default ``CHUNK_BATCHES`` ingest batches).
        grace: seconds to wait after the swap for writes already sent to the
            old index (default: the Elasticsearch timeout plus 2 s).
        progress: called with the job after each chunk and phase.
    """

    def __init__(
        self,
        job_id: str,
        *,
        app,
        store: JobStore,
        ctx: ChunkContext,
        chunk_pages: int | None = None,
        grace: float | None = None,
        progress: Callable[[Job, str], None] | None = None,
    ) -> None:
        self.job_id = job_id
        self.app = app
        self.store = store
        self.ctx = ctx
        self.client = ctx.client
        self.redis = store.redis
        job = store.get(job_id)
        if job is None:
            raise ReindexError(f"there is no job {job_id!r}")
        if job.kind != "reindex":
            raise ReindexError(f"job {job_id} is an {job.kind} job, not a reindex")
        self.source = job.params.get("source") or "text"
        if self.source not in task_names.REINDEX_SOURCES:
            raise ReindexError(f"job {job_id}: unknown source {self.source!r} (text or archive)")
        self.settings = ctx.settings.replace(index=job.params.get("index") or ctx.settings.index)
        self.alias = self.settings.index
        self.chunk_pages = chunk_pages or self.settings.batch_size * CHUNK_BATCHES
        self.grace = self.settings.es_timeout + 2.0 if grace is None else grace
        self.progress = progress or (lambda job, phase: None)
        self.lock = RedisLock(self.redis, lock_key(self.alias), job_id, ttl=LOCK_TTL)
        self.plan = ReindexPlan(store, job_id, self.client, chunk_pages=self.chunk_pages, beat=self._beat)
        self.swapped = False
        #: the period being rebuilt, for a progress bar ("period 2 of 12: <index>"; empty with one index)
        self.period = ""

    # ------------------------------------------------------------------ entry point
    def run(self) -> Job:
        """Run (or resume) the job to its end; returns the finished job.

        Raises:
            ReindexError: the job failed (its message says why; the half-built
                index is deleted) or another reindex holds the lock.
            KeyboardInterrupt: interrupted; the job is ``cancelled`` and
                resumable, the half-built index kept.
        """
        job = self.store.require(self.job_id)
        if job.status == "done":
            raise ReindexError(f"job {self.job_id} is already done")
        if not self._take_lock():
            return self.store.require(self.job_id)
        try:
            self.store.start(self.job_id, message=f"reindex of {self.alias} from {self.source}")
            self._run()
        except KeyboardInterrupt:
            self.store.finish(
                self.job_id,
                "cancelled",
                message=f"interrupted; `newsfold reindex --resume {self.job_id}` continues from the checkpoint",
            )
            raise
        except Exception as exc:
            message = self._fail(exc)
            raise ReindexError(message) from exc
        finally:
            withdraw_target(self.redis, self.alias)  # before the lock goes: the next reindex announces its own
            self.lock.release()
        return self.store.require(self.job_id)

    def _take_lock(self) -> bool:
        try:
            self.lock.acquire()
            return True
        except LockBusy as exc:
            if exc.holder != self.job_id:
                message = f"another reindex of {self.alias} is running (job {exc.holder})"
                self.store.finish(self.job_id, "failed", message=message)
                raise ReindexError(message) from None
        # our own job's lock: a coordinator that died (the lock expires) or one still running
        try:
            self.lock.acquire(wait=LOCK_TTL + 5)
            return True
        except LockBusy:
            log.warning("job %s is already being run by another coordinator", self.job_id)
            return False

    def _announce(self, target: str) -> None:
        announce_target(self.redis, self.alias, target, ttl_ms=int(LOCK_TTL * 1000))

    def _beat(self) -> None:
        """Keep the announcement and the job's ``updated`` fresh (called from every loop)."""
        state = self.store.state(self.job_id)
        if state.get("target") and state.get("writes"):
            self._announce(state["target"])  # live ingest writes there too: only while the write index is rebuilt
        self.store.touch(self.job_id)

    def _report(self, phase: str) -> None:
        self._beat()
        self.progress(self.store.require(self.job_id), phase)

    # ------------------------------------------------------------------ phases
    def _run(self) -> None:
        planned = self._periods()
        first = int(self.store.state(self.job_id).get("period") or 0)
        for n in range(first, len(planned)):
            self._rebuild(planned[n], n, len(planned))
            state = self.store.state(self.job_id)
            base = int(state.get("base_total") or 0) + int(state.get("period_total") or 0)
            cleared = dict.fromkeys(PERIOD_STATE) if n + 1 < len(planned) else {}  # the last period's stays to read
            self.store.set_state(self.job_id, period=n + 1, base_total=base, period_total=None, **cleared)
            self.swapped = False
        job = self.store.require(self.job_id)
        summary = ", ".join(f"{job.counts.get(k, 0)} {k}" for k in OUTCOMES)
        caught = self.store.state(self.job_id).get("caught_up") or "0"
        rebuilt = "1 index" if len(planned) == 1 else f"{len(planned)} indices (periods)"
        message = f"{rebuilt} of {self.alias} rebuilt, each in its old one's place: {summary}; {caught} pages caught up"
        self.store.finish(self.job_id, "done", message=message)
        self.progress(self.store.require(self.job_id), "done")

    def _periods(self) -> list[str]:
        """The indices this job rebuilds, oldest first (planned once: a resumed job keeps its list)."""
        state = self.store.state(self.job_id)
        if state.get("periods"):
            return list(json.loads(state["periods"]))
        # a job begun before reindexes went period by period rebuilds its one index
        planned = [state["old"]] if state.get("old") else periods(self.client, self.alias)
        if not planned:
            raise ReindexError(f"there is no index behind the alias {self.alias}: nothing to reindex")
        self.store.set_state(self.job_id, periods=json.dumps(planned), period=0)
        return planned

    def _rebuild(self, old: str, n: int, count: int) -> None:
        """Rebuild one period: the index ``old`` behind the alias, the ``n``-th of ``count`` (from 0)."""
        self.period = f"period {n + 1} of {count}: {old}" if count > 1 else ""
        self.store.update(self.job_id, message=f"reindex of {self.alias} from {self.source}: {old}, period {n + 1} "
                          f"of {count}")  # fmt: skip
        state = self.store.state(self.job_id)
        where = behind(self.client, self.alias)
        target = state.get("target")
        if target and target in where.indices:
            self.swapped = True  # the swap happened before an interruption
            self._after_swap(state)
            return
        if old not in where.indices:
            raise ReindexError(f"{old} is no longer behind the alias {self.alias}: not rebuilding it")
        if target and not self.client.indices.exists(index=target):
            log.warning("job %s: the new index %s is gone; starting this period over", self.job_id, target)
            self.plan.forget(state)
            self.store.set_state(self.job_id, **dict.fromkeys(PERIOD_STATE))
            target = None
        if not target:
            target = new_index_name(self.settings)
            state = self._create(old, target, where)
        elif state.get("old") != old:
            raise ReindexError(f"job {self.job_id}: its state names {state.get('old')}, its plan {old}")
        open_lookup_alias(self.client, target, old, where)
        if state.get("writes"):
            self._announce(target)
        self._report("load")
        self._load(state, n)
        self._catch_up(state["since"], phase="catch-up")
        self.store.set_state(self.job_id, catch_up=self._since(time.time()))
        self._finish_load(target)
        reapply_corrections(client=self.client, settings=target_settings(self.settings, target), since=state["since"])
        self._swap(old, target, writes=bool(state.get("writes")))
        self._after_swap(self.store.state(self.job_id))

    def _create(self, old: str, target: str, where: Behind) -> dict:
        create_period_index(self.client, self.settings, target, old, where, presence=self.ctx.presence)
        began = time.time()
        self.store.set_state(
            self.job_id,
            alias=self.alias,
            source=self.source,
            old=old,
            target=target,
            writes="1" if old == where.write else None,  # live ingest writes into this period
            began=dt.datetime.fromtimestamp(began, dt.UTC).isoformat(timespec="milliseconds"),
            since=self._since(began),
        )
        return self.store.state(self.job_id)

    @staticmethod
    def _since(moment: float) -> str:
        return dt.datetime.fromtimestamp(moment - CATCH_UP_MARGIN, dt.UTC).isoformat(timespec="milliseconds")

    def _load(self, state: dict, n: int) -> None:
        old = state["old"]
        if not state.get("total"):
            pages = self.client.count(index=old)["count"]
            self.store.set_state(self.job_id, total=pages, prefix_length=prefix_length(pages, self.chunk_pages))
            state = self.store.state(self.job_id)
        if self.source == "archive":
            chunks, records = self.plan.archive_chunks(state, None if state.get("planned") else self._archive_root())
            period_total = records
        else:
            chunks = self.plan.text_chunks(state)
            period_total = int(state["total"])
        self.store.set_state(self.job_id, period_total=period_total)
        self.store.update(self.job_id, total=int(state.get("base_total") or 0) + period_total)
        self._chunks(chunks, n)
        self._chunks(self.plan.missing_chunks(state), n)

    def _archive_root(self) -> str:
        """The raw-page archive to plan from; a missing or empty one fails the job."""
        from newsfold.indexer.jobs.archive import archive_files  # warcio only for an archive reindex

        root = self.settings.archive_dir
        if not root:
            raise ReindexError("a reindex from the archive needs NEWSFOLD_ARCHIVE_DIR")
        if not archive_files(root):
            raise ReindexError(f"the archive {root} holds no page files (pages-*.warc.gz)")
        return root

    def _chunks(self, chunks: list[dict], n: int) -> None:
        """Send the chunks of the ``n``-th period not counted yet (their keys name the period: each has its own)."""
        chunks = [{**c, "key": f"{n}/{c['key']}" if n else c["key"]} for c in chunks]
        done = self.store.recorded(self.job_id)
        drive([(c["key"], c) for c in chunks if c["key"] not in done], _ChunkWork(self), max_in_flight=64)

    def _catch_up(self, since: str, *, phase: str) -> int:
        """Re-ingest the old index's pages written since ``since`` (live writes during the reindex)."""
        state = self.store.state(self.job_id)
        work = ChunkBuilder(self.job_id, state, self.settings, self.ctx, state["target"])
        pages = work.catch_up(since, beat=lambda: self._report(phase))
        caught = int(state.get("caught_up") or 0) + pages
        self.store.set_state(self.job_id, caught_up=caught)
        return pages

    def _finish_load(self, target: str) -> None:
        """Restore the replicas, wait for them (bounded), make everything visible."""
        if self.settings.replicas:
            self.client.indices.put_settings(
                index=target, settings={"index": {"number_of_replicas": self.settings.replicas}}
            )
            health = self.client.cluster.health(index=target, wait_for_status="green", timeout="60s")
            if health.get("timed_out"):
                log.warning("replicas of %s not all allocated after 60 s; swapping anyway", target)
        self.client.indices.refresh(index=target)

    def _swap(self, old: str, target: str, *, writes: bool) -> None:
        unwritten = self.store.require(self.job_id).rejected.get("index_failed", 0)
        if unwritten:
            raise ReindexError(
                f"{unwritten} pages could not be written into the new index (see the job's failures); "
                "not swapping, so none of them is lost"
            )
        if not self.lock.held():
            raise ReindexError("the reindex lock was lost (Redis restarted?); not swapping")
        where = behind(self.client, self.alias)
        if old not in where.indices or (writes and where.write != old):
            raise ReindexError(f"the alias {self.alias} no longer points to {old}; not swapping")
        self._report("swap")
        swap_period(self.client, self.alias, old, target, writes=writes)
        self.swapped = True

    def _after_swap(self, state: dict) -> None:
        """Wait out writes already sent to the old index, catch them up, delete the old index."""
        old = state["old"]
        if self.client.indices.exists(index=old):
            deadline = time.monotonic() + self.grace
            while time.monotonic() < deadline:
                self._report("grace")
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            self._catch_up(state["catch_up"], phase="catch-up")
            # corrections made while the new index was built (its chunks did not see them), also the last moments'
            reapply_corrections(client=self.client, settings=self.settings, since=state["since"])
            self.client.indices.delete(index=old)
        close_lookup_alias(self.client, state["target"])
        self.plan.forget(state)
        log.info("job %s: %s is behind %s in place of %s", self.job_id, state["target"], self.alias, old)

    def _fail(self, exc: Exception) -> str:
        """Mark the job failed; before the swap, delete the half-built index."""
        state = self.store.state(self.job_id)
        target = state.get("target")
        message = str(exc) if isinstance(exc, ReindexError) else f"{type(exc).__name__}: {exc}"
        log.error("reindex job %s failed: %s", self.job_id, message)
        if self.swapped or not target:
            self.store.finish(self.job_id, "failed", message=message)
            return message
        # failed first, so chunks still running stop writing; then the index goes
        self.store.finish(self.job_id, "failed", message=f"{message}; the half-built index {target} was deleted")
        withdraw_target(self.redis, self.alias)
        self.plan.forget(state)
        with contextlib.suppress(Exception):  # the older periods' part of the job's alias (the index's goes with it)
            close_lookup_alias(self.client, target)
        for _ in range(3):  # a write in flight when it is deleted could create it again (auto-create)
            self.client.options(ignore_status=404).indices.delete(index=target)
            time.sleep(1.0)
            if not self.client.indices.exists(index=target):
                break
        return f"{message}; the half-built index {target} was deleted"


class _ChunkWork(Work):
    """A reindex's chunks through the ``reindex_chunk`` task: a chunk that failed or was not counted stops the job."""

    def __init__(self, reindex: Reindex) -> None:
        self.reindex = reindex
        self.store, self.job_id = reindex.store, reindex.job_id

    def send(self, key: str, item: dict) -> Any:
        return self.reindex.app.send_task(task_names.REINDEX_CHUNK, kwargs={"job_id": self.job_id, "chunk": item})

    def finished(self, key: str, item: dict, value: Any, error: BaseException | None) -> None:
        if error is not None:
            raise ReindexError(f"chunk {key} failed: {type(error).__name__}: {error}")
        if not self.store.is_recorded(self.job_id, key):
            raise ReindexError(f"chunk {key} was not completed (the job stopped meanwhile)")
        self.reindex._report("load")

    def alive(self, keys: list[str]) -> list[bool] | None:
        return self.store.alive(self.job_id, keys)

    def idle(self) -> None:
        self.reindex._report("load")
