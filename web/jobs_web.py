"""The web's side of ingest and reindex jobs: the job store, starting a reindex and retrying failures.

Job state lives in Redis (``plugin.jobs.JobStore``); work is queued by task
name, so the web never imports the indexer.
"""

from __future__ import annotations

import importlib
import math
import threading
from dataclasses import dataclass, field

from flask import current_app

from newsfold.state import build_redis
from newsfold.web.resources import ServiceUnavailable, get_celery, get_settings

REINDEX_TASK = "indexer.tasks.reindex"
RETRY_TASK = "indexer.tasks.retry_failures"
REINDEX_SOURCES = ("text", "archive")
ACTIVE_STATUSES = ("queued", "running")
STORE_KEY = "newsfold.admin.jobs"
START_GUARD_SECONDS = 10
_lock = threading.Lock()


class JobRequestError(Exception):
    """A job request that cannot be carried out (a reindex already running, nothing to retry, ...)."""


def jobs_module():
    """``plugin.jobs`` (imported on first use).

    Raises:
        ServiceUnavailable: the module is not installed in this build.
    """
    try:
        return importlib.import_module("newsfold.state.jobs")
    except ModuleNotFoundError as exc:
        if exc.name != "newsfold.state.jobs":
            raise
        raise ServiceUnavailable("Jobs are not available: plugin.jobs is not installed.") from None


def get_job_store():
    """The current app's ``JobStore`` on ``settings.redis_url`` (built on first use, kept on the app).

    Raises:
        ServiceUnavailable: no Redis URL is configured.
    """
    store = current_app.extensions.get(STORE_KEY)
    if store is not None:
        return store
    settings = get_settings()
    if not settings.redis_url:
        raise ServiceUnavailable("Jobs are not available: no Redis URL is configured (set REDIS_URL).")
    job_store = jobs_module().JobStore
    with _lock:
        store = current_app.extensions.get(STORE_KEY)
        if store is None:
            # short timeouts: a page must answer 503 quickly when Redis is down, not hang
            client = build_redis(settings.redis_url, timeout=5.0)
            store = job_store(client)
            current_app.extensions[STORE_KEY] = store
    return store


def close_job_store(app) -> None:
    """Close the Redis connections of the app's job store, if it has one."""
    store = app.extensions.pop(STORE_KEY, None)
    client = getattr(store, "redis", None) or getattr(store, "_redis", None)
    if client is not None:
        client.close()


def start_reindex(source: str | None, *, user: str):
    """Create a reindex job and queue ``indexer.tasks.reindex`` for it.

    A short Redis lock makes the check for a running reindex and the
    creation of the new job one step, so two editors clicking at once start
    one job. When the task cannot be queued the job is marked failed (it
    would otherwise block every later reindex) and the error propagates.

    Raises:
        JobRequestError: an unknown source, or a reindex is already queued or running.
    """
    source = (source or "").strip()
    if source not in REINDEX_SOURCES:
        raise JobRequestError(f"choose what to reindex from: {' or '.join(REINDEX_SOURCES)} (got {source[:40]!r})")
    store = get_job_store()
    guard = f"{store.namespace}:reindex-start"
    if not store.redis.set(guard, user, nx=True, ex=START_GUARD_SECONDS):
        raise JobRequestError("Another reindex is being started right now. Reload the jobs page in a moment.")
    try:
        running = store.active("reindex")
        if running is not None:
            raise JobRequestError(f"A reindex is already {running.status}: job {running.id}. Wait for it to finish.")
        job = store.create("reindex", params={"source": source, "user": user, "index": get_settings().index})
    finally:
        store.redis.delete(guard)
    try:
        get_celery().send_task(REINDEX_TASK, kwargs={"job_id": job.id})
    except Exception as exc:
        store.finish(job.id, "failed", message=f"the reindex task could not be queued ({type(exc).__name__})")
        raise
    return job


def retry_job(job_id: str) -> int:
    """Queue ``indexer.tasks.retry_failures`` for a finished job with retryable failures.

    Returns:
        How many of the job's failures are retryable (what the task re-queues).

    Raises:
        LookupError: there is no such job.
        JobRequestError: the job is still running or has nothing to retry.
    """
    store = get_job_store()
    job = store.get(job_id)
    if job is None:
        raise LookupError(f"There is no job with the id {job_id!r}.")
    if job.status in ACTIVE_STATUSES:
        raise JobRequestError(f"Job {job_id} is still {job.status}; retry its failures when it has finished.")
    retryable = store.retryable_count(job_id)
    if not retryable:
        total, _ = store.failures(job_id, limit=0)
        raise JobRequestError(f"Job {job_id} has no retryable failures ({total} failures in all).")
    get_celery().send_task(RETRY_TASK, kwargs={"job_id": job_id})
    return retryable


@dataclass
class FailurePage:
    """One page of a job's failures."""

    page: int
    page_size: int
    total: int
    items: list[dict] = field(default_factory=list)

    @property
    def total_pages(self) -> int:
        return math.ceil(self.total / self.page_size) if self.total else 0

    @property
    def retryable(self) -> int:
        return sum(1 for f in self.items if f.get("retryable"))


def job_failures_page(store, job, *, page: int, page_size: int) -> FailurePage:
    """The ``page``-th page of a job's failures."""
    total, items = store.failures(job.id, offset=(page - 1) * page_size, limit=page_size)
    return FailurePage(page=page, page_size=page_size, total=total, items=list(items))
