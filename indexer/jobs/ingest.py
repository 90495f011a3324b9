"""The ingest job: sources read in order, batches sent to the workers, every page's outcome recorded once.

A job (``newsfold.state.jobs``) names its sources, target index, raw-page
archive and batch size. Batches are numbered in input order; the workers
count each into the job once under its number, the checkpoint a resumed run
skips (its recorded outcomes are reported again, so a resumed run reports
every page). Unusable input items are recorded here as rejections. A Redis
outage is waited out (``outage_wait``); a run that stops for any other reason
marks its job, so it never stays "running". ``newsfold ingest`` is a thin
caller; the reindex job lives beside this one in ``indexer.jobs.reindex``.
"""

from __future__ import annotations

import base64
import getpass
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from newsfold.indexer.jobs.archive import WarcArchive
from newsfold.indexer.jobs.dispatch import BatchRun, Timing, in_flight_batches, run_batches
from newsfold.indexer.records import PageRecord, SourceStats
from newsfold.indexer.resources import read_roots
from newsfold.indexer.sources.base import count_hint, iter_source
from newsfold.plugin.errors import NewsfoldError
from newsfold.plugin.settings import Settings
from newsfold.state import patiently
from newsfold.state.job_records import OUTCOMES, Job
from newsfold.state.jobs import JobStore

if TYPE_CHECKING:
    from celery import Celery

Announce = Callable[[str], None]

#: a batch is sent once its pages hold this many bytes, even short of the batch size: a task message stays
#: far below what a Redis broker accepts, the coordinator holds at most this much page data (plus one page),
#: and so does a worker's message, which it holds in several copies while decoding (broker encoding, JSON,
#: payload): at 32 MiB four pages of 9 MB took a worker to 458 MB, at 8 MiB the worst is one page alone
BATCH_BYTES = 8 * 1024 * 1024


class JobError(NewsfoldError, RuntimeError):
    """A job that cannot be started or resumed as asked; the message says what to do instead."""


class JobLost(JobError):
    """The job vanished from Redis while it ran (a Redis that keeps nothing restarted): it cannot be resumed, and
    the message gives the command that runs its sources again."""


def rerun_command(job: Job) -> str:
    """The ``newsfold ingest`` command that runs ``job``'s sources again, into its index, with its archive."""
    words = ["newsfold", "ingest", "--index", job.params["index"]]
    if job.params.get("archive"):
        words += ["--archive", job.params["archive"]]
    return shlex.join([*words, *job.params["sources"]])


def lost(job: Job) -> JobLost:
    """The error that ends a run whose job Redis lost: one line, with the command to run it again."""
    return JobLost(
        f"job {job.id} was lost: Redis lost its data while the job ran (a restart without appendonly), so the job "
        f"cannot be resumed; the pages reported above were processed. Run it again with `{rerun_command(job)}`: "
        "pages already indexed come back `unchanged`"
    )


def counts_text(counts: dict, reasons: dict) -> str:
    """``"3 new, 1 duplicate, 0 merged, 0 updated, 0 unchanged, 1 rejected (empty: 1)"``."""
    text = ", ".join(f"{counts.get(k, 0)} {k}" for k in OUTCOMES)
    if reasons:
        text += " (" + ", ".join(f"{r}: {n}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])) + ")"
    return text


def resumable(store: JobStore, job_id: str, kind: str) -> Job:
    """The job a resume names.

    Raises:
        JobError: no such job (with how to recover), another kind, or already done.
    """
    job = store.get(job_id)
    if job is None:
        raise JobError(
            f"there is no job {job_id!r}: finished jobs are kept 30 days, and a Redis that keeps "
            "nothing (the embedded one after the run, or a server without appendonly) loses jobs when it "
            "restarts. Start a new job over the same sources: pages already indexed come back `unchanged`."
        )
    if job.kind != kind:
        raise JobError(f"job {job_id} is an {job.kind} job; resume it with `newsfold {job.kind}`")
    if job.status == "done":
        raise JobError(f"job {job_id} is already done")
    return job


def warn_if_not_persistent(store: JobStore, *, announce: Announce) -> None:
    """Warn when the Redis holding job state keeps it only in memory (a restart would lose the job)."""
    try:
        info = store.redis.info("persistence")
        saves = store.redis.config_get("save").get("save", "")
    except Exception:  # managed servers may refuse CONFIG: say nothing rather than guess
        return
    if not int(info.get("aof_enabled", 0)) and not str(saves).strip():
        announce(
            "newsfold: warning: Redis keeps job state only in memory (appendonly no, no save points); if it "
            "restarts, this job's state is lost. Set `appendonly yes` for jobs that must survive a restart."
        )


def mark_stopped(store: JobStore, job_id: str, exc: BaseException, *, announce: Announce) -> None:
    """Record that a job's coordinator stopped, so the job is not left "running"; say so when Redis is away."""
    message = (
        f"stopped: {type(exc).__name__}: {str(exc)[:300]}; `newsfold ingest --resume {job_id}` continues "
        "from the checkpoint"
    )
    try:
        patiently(lambda: store.finish(job_id, "failed", message=message), what="marking the job", attempts=4)
    except Exception as again:
        announce(
            f"newsfold: job {job_id} could not be marked as stopped ({again}); it still shows as running. "
            f"`newsfold ingest --resume {job_id}` continues it once Redis is back."
        )


def create_ingest(
    store: JobStore,
    sources: list[str],
    *,
    index: str,
    batch_size: int,
    archive: str | None = None,
    announce: Announce = lambda message: None,
) -> Job:
    """A new ingest job over ``sources`` (resolved paths); warns when Redis would lose it on a restart."""
    warn_if_not_persistent(store, announce=announce)
    resolved = [str(Path(p).resolve()) for p in sources]
    params = {
        "sources": resolved,
        "index": index,
        "archive": str(Path(archive).resolve()) if archive else None,
        "batch_size": batch_size,
        "batch_bytes": BATCH_BYTES,
        "user": getpass.getuser(),
    }
    total = sum(count_hint(Path(p)) or 0 for p in resolved) or None
    return store.create("ingest", params=params, total=total)


class IngestRun:
    """Runs (or resumes) one ingest job to its end through the workers of ``app``.

    Args:
        job: the job (``create_ingest`` or ``resumable``).
        app: the Celery app the workers listen on.
        store: the job store.
        settings: the live settings (servers, outage wait).
        on_outcome: hears every page's outcome once, as soon as it is known
            (a resumed run hears the recorded ones of batches done before).
        on_skip: hears how many pages of a batch done before are passed over
            without recorded outcomes (their records expired).
        on_wait: hears "waiting for Redis" while an outage lasts, then None.
    """

    def __init__(
        self,
        job: Job,
        *,
        app: Celery,
        store: JobStore,
        settings: Settings,
        on_outcome: Callable[[dict], None],
        on_skip: Callable[[int], object] = lambda pages: None,
        on_wait: Callable[[str | None], None] | None = None,
    ) -> None:
        self.job, self.app, self.store, self.settings = job, app, store, settings
        self.on_outcome, self.on_skip, self.on_wait = on_outcome, on_skip, on_wait
        self.stats = SourceStats()
        self.done: set[str] = set()
        self._archive: WarcArchive | None = None

    @property
    def index(self) -> str:
        return self.job.params["index"]

    def run(self) -> Job:
        """Send every batch not yet counted, wait for all, and mark the job done; returns the final job."""
        from newsfold.indexer.resources import presence_for
        from newsfold.plugin.client import build_client
        from newsfold.plugin.fold.index import ensure_index

        job, store = self.job, self.store
        self.done = store.recorded(job.id)
        store.start(job.id)
        target = self.settings.replace(index=self.index)
        ensure_index(build_client(self.settings), target, presence=presence_for(target))
        if job.params.get("archive"):
            self._archive = WarcArchive(Path(job.params["archive"]))
        batch_size = int(job.params["batch_size"])
        batch_bytes = job.params.get("batch_bytes")  # None in jobs made before it: their batches never had it
        try:
            run = BatchRun(
                index=self.index,
                max_in_flight=in_flight_batches(batch_size),
                collect=False,
                on_done=lambda got: [self.on_outcome(o) for o in got],
                store=store,
                job_id=job.id,
                timing=Timing(max_outage=self.settings.outage_wait),
                on_wait=self.on_wait,
            )
            run_batches(self.app, self._batches(batch_size, int(batch_bytes) if batch_bytes else None), run)
        finally:
            if self._archive is not None:
                self._archive.close()
        # Redis may be away as the last batch comes back: wait for it as the batches did
        final = patiently(lambda: store.get(job.id), what="reading the finished job")
        if final is None:  # a Redis that keeps nothing restarted during the run: no job to mark or resume
            raise lost(job)
        message = counts_text(final.counts, final.rejected)
        patiently(lambda: store.finish(job.id, "done", message=message), what="marking the job done")
        return patiently(lambda: store.get(job.id), what="reading the finished job") or final

    def _payload(self, rec: PageRecord) -> dict:
        item = rec.meta()
        if self._archive is not None:
            item["archive"] = self._archive.append(rec).as_dict()
        else:
            item.update(_html_field(rec.html or b""))
        return item

    def _batches(self, batch_size: int, batch_bytes: int | None = None) -> Iterator[tuple[str, list[dict]]]:
        """Numbered batches of at most ``batch_size`` pages, each sent once its pages hold ``batch_bytes``.

        Pages are read with the page limit checked at the source: a page over
        ``NEWSFOLD_MAX_PAGE_BYTES`` (or inflating past it) is rejected here and
        never travels through the broker.
        """
        pending: list[PageRecord] = []
        pending_bytes = 0
        number = 0
        max_bytes, roots = self.settings.max_page_bytes, read_roots(self.settings)
        for s, source in enumerate(self.job.params["sources"]):
            for rec in iter_source(Path(source), stats=self.stats, max_bytes=max_bytes, roots=roots):
                if rec.error:
                    self._reject(f"e{s}:{rec.origin}", rec)
                    continue
                pending.append(rec)
                pending_bytes += len(rec.html or b"")
                if len(pending) >= batch_size or (batch_bytes is not None and pending_bytes >= batch_bytes):
                    yield from self._numbered(number, pending)
                    number, pending, pending_bytes = number + 1, [], 0
        if pending:
            yield from self._numbered(number, pending)

    def _reject(self, key: str, rec: PageRecord) -> None:
        outcome = {"page_id": rec.id, "origin": rec.origin, "status": "rejected", "reason": rec.reason}
        outcome["detail"] = rec.error
        if key not in self.done:  # a raise here would end the batch generator, and lose every later page
            patiently(lambda: self.store.record(self.job.id, key, [outcome]), what="recording a rejected page")
        self.on_outcome(outcome)  # a resumed run reports it again: every page has its line

    def _numbered(self, number: int, recs: list[PageRecord]) -> Iterator[tuple[str, list[dict]]]:
        if str(number) not in self.done:
            yield str(number), [self._payload(rec) for rec in recs]
            return
        # counted before the interruption: not sent again, reported as recorded
        recorded = patiently(lambda: self.store.outcomes(self.job.id, str(number)), what="reading recorded outcomes")
        if recorded is None:
            self.on_skip(len(recs))
        else:
            for outcome in recorded:
                self.on_outcome(outcome)


def _html_field(html: bytes) -> dict:
    """A page's raw bytes in a task payload: ``html_utf8`` (the bytes as text) when they are UTF-8, else
    ``html_b64``; the worker turns either back into the same bytes.

    Base64 is a third larger at every layer a worker decodes the message through (the broker's own base64, the
    JSON, the payload): a 9 MB page cost a worker 300 MB at its peak as base64 and about 250 MB as text.
    """
    try:
        return {"html_utf8": html.decode("utf-8")}
    except UnicodeDecodeError:
        return {"html_b64": base64.b64encode(html).decode("ascii")}
