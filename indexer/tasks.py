"""The Celery task definitions. Thin: payloads are small dicts; the work is in ``indexer.pages``
(a batch of pages), ``indexer.jobs.reindex`` and ``plugin``."""

from __future__ import annotations

import contextlib
import logging
import time
from typing import NoReturn

from celery import Task
from celery.exceptions import Retry
from elasticsearch import ApiError

from newsfold import task_names
from newsfold.indexer.celery_app import app
from newsfold.indexer.jobs.reindex import Reindex, ReindexError
from newsfold.indexer.jobs.reindex_chunks import run_chunk
from newsfold.indexer.pages import chunk_context, crashed_batch, guarded, ingest_payloads
from newsfold.indexer.resources import TRANSIENT, job_store_for, worker_settings
from newsfold.plugin.errors import ServerError
from newsfold.plugin.fold.presence import PresenceUnavailable
from newsfold.plugin.settings import Settings
from newsfold.state import patiently
from newsfold.state.heartbeats import UnitBusy
from newsfold.state.job_records import failed_batch

log = logging.getLogger(__name__)
logging.getLogger("trafilatura").setLevel(logging.ERROR)  # per-page problems become rejection reasons


def _retry_later(task: Task, exc: Exception, settings: Settings, what: str) -> NoReturn:
    """Retry a task on a transient Elasticsearch error or a presence filter that Redis could not update
    (exponential backoff), else re-raise."""
    # the plugin's public calls hand Elasticsearch's refusals on as ServerError, keeping the status
    status = exc.meta.status if isinstance(exc, ApiError) else getattr(exc, "status", None)
    if isinstance(exc, ApiError | ServerError) and status not in (429, 502, 503, 504):
        raise exc
    if task.request.retries >= settings.task_retries:
        log.error("giving up on %s after %d retries: %s", what, task.request.retries, exc)
        raise exc
    countdown = min(60, 2 ** (task.request.retries + 1))
    server = "Redis" if isinstance(exc, PresenceUnavailable) else "Elasticsearch"
    log.warning("%s unavailable (%s); retrying %s in %d s", server, exc, what, countdown)
    raise task.retry(countdown=countdown, exc=exc) from exc


@app.task(bind=True, name=task_names.INGEST_BATCH, acks_late=True, max_retries=None)
def ingest_batch(
    self, pages: list[dict], index: str | None = None, job_id: str | None = None, key: str | None = None
) -> list[dict]:
    """Extract, sign, look up, decide and index a batch of pages.

    Args:
        pages: dicts with ``html``/``html_utf8``/``html_b64``/``html_path``/``archive`` and
            optional ``id``, ``url``, ``site``, ``lang``, ``published``.
        index: the alias to write to (default: the configured one).
        job_id: the job the batch belongs to (its outcomes are counted once, under ``key``).
        key: the batch's checkpoint key in the job.

    Returns:
        One outcome dict per page (``status`` new/duplicate/unchanged/rejected);
        nothing for a batch the job has already counted.
    """
    settings = worker_settings()
    if index:
        settings = settings.replace(index=index)
    tracked = bool(job_id and key and settings.redis_url)
    store = job_store_for(settings) if tracked else None
    job, unit = job_id or "", key or ""  # the job and the batch's checkpoint key, read only when tracked
    if store is not None and store.is_recorded(job, unit):
        return store.outcomes(job, unit) or []  # a late redelivery of a batch already done: its outcomes
    started = time.perf_counter()
    guard_key = f"{job_id}:{key}" if tracked else None  # a job's batch keys repeat across jobs: qualify them
    delivery = guard_key or self.request.id  # the same on every delivery and retry (plugin ingest's ``delivery``)
    try:
        with (
            store.heartbeat(job, unit, claim=True, delivery=self.request.id)
            if store is not None
            else contextlib.nullcontext(),
            guarded(settings, pages, guard_key) as guard,
        ):
            if guard is not None and guard.exhausted:
                outcomes, sources = crashed_batch(pages, guard.delivery)
            else:
                what = f"the batch of {len(pages)} pages"
                batch = dict(job_id=job_id, guard=guard, delivery=delivery)
                try:
                    # Redis down (it is the broker too): wait here; Elasticsearch down: retry through the broker
                    outcomes, sources = patiently(lambda: ingest_payloads(pages, settings, **batch), what=what)
                except (*TRANSIENT, ApiError, ServerError, PresenceUnavailable) as exc:
                    _retry_later(self, exc, settings, what)
            if store is not None:
                patiently(lambda: store.record(job, unit, outcomes, payloads=sources), what=f"recording {what}")
    except Retry:  # this try waits for Elasticsearch: its retry, in whichever worker, takes the batch over at once
        if store is not None:
            with contextlib.suppress(Exception):  # not handed over: the retry waits for the heartbeat to expire
                store.hand_over(job, unit, self.request.id)
        raise
    except UnitBusy as busy:
        # another delivery of this batch is alive (the broker's redelivery and the coordinator's resend can
        # meet): never two at once, or the crash guard would blame the page the other one is signing
        ttl = store.heartbeat_ttl if store is not None else settings.heartbeat_ttl  # only a tracked batch is busy
        log.info("batch %s: %s; trying again in %.0f s", key, busy, ttl)
        raise self.retry(countdown=ttl, exc=busy) from busy
    log.info("batch of %d pages in %.2f s", len(pages), time.perf_counter() - started)
    return outcomes


@app.task(bind=True, name=task_names.REINDEX_CHUNK, acks_late=True, max_retries=None)
def reindex_chunk(self, job_id: str, chunk: dict) -> dict:
    """Build one chunk of a reindex into the new index (see ``indexer.jobs.reindex``)."""
    settings = worker_settings()
    state = job_store_for(settings).state(job_id)
    settings = settings.replace(index=state.get("alias") or settings.index)
    try:
        return run_chunk(job_id, chunk, chunk_context(settings))
    except (*TRANSIENT, ApiError, ServerError, PresenceUnavailable) as exc:
        _retry_later(self, exc, settings, f"reindex chunk {chunk.get('key')}")


@app.task(bind=True, name=task_names.REINDEX, acks_late=True)
def reindex(self, job_id: str) -> dict:
    """Run (or resume) the reindex job ``job_id`` to its end; the job's state says how it went.

    It occupies this worker process while it runs: the chunks need at least
    one other. Delivered again while it still runs (a reindex longer than the
    broker's visibility timeout), the copy finds the job's lock held and returns.
    """
    settings = worker_settings()
    store = job_store_for(settings)
    job = store.get(job_id)
    alias = (job.params.get("index") if job else None) or settings.index
    try:
        job = Reindex(job_id, app=app, store=store, ctx=chunk_context(settings.replace(index=alias))).run()
    except ReindexError as exc:
        log.error("reindex job %s: %s", job_id, exc)
        return {"id": job_id, "status": "failed", "message": str(exc)}
    return job.as_dict()


@app.task(bind=True, name=task_names.RETRY_FAILURES, acks_late=True)
def retry_failures(self, job_id: str) -> dict:
    """Ingest the retryable failed pages of a job again (into the alias), counting them into the job."""
    settings = worker_settings()
    store = job_store_for(settings)
    job = store.get(job_id)
    if job is None:
        return {"id": job_id, "status": "missing"}
    settings = settings.replace(index=job.params.get("index") or settings.index)
    payloads = store.take_retryable(job_id)
    store.start(job_id, message=f"retrying {len(payloads)} failed pages")
    stamp = time.strftime("%Y%m%d%H%M%S")
    still = 0
    for n in range(0, len(payloads), settings.batch_size):
        batch = payloads[n : n + settings.batch_size]
        try:
            outcomes, sources = ingest_payloads(batch, settings, job_id=job_id)
        except Exception as exc:  # Elasticsearch still away: the pages stay retryable
            outcomes, sources = failed_batch(batch, exc), {str(p.get("id")): p for p in batch}
        store.record(job_id, f"retry-{stamp}-{n}", outcomes, payloads=sources)
        still += sum(1 for o in outcomes if o["status"] == "rejected")
    store.finish(job_id, "done", message=f"retried {len(payloads)} failed pages: {still} still rejected")
    done = store.get(job_id)
    return done.as_dict() if done is not None else {"id": job_id, "status": "missing"}  # expired meanwhile
