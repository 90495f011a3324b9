"""The web's side of ingest and reindex jobs: starting a reindex, retrying failures, paging failures.

Job state lives in Redis (``newsfold.state.jobs.JobStore``, the app's
``web.resources``); work is queued by task name, so the web never imports the indexer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from newsfold import task_names
from newsfold.state.jobs import ACTIVE
from newsfold.web.formatting import Paged
from newsfold.web.resources import get_celery, get_job_store, get_settings

START_GUARD_SECONDS = 10


class JobRequestError(Exception):
    """A job request that cannot be carried out (a reindex already running, nothing to retry, ...)."""


def start_reindex(source: str | None, *, user: str):
    """Create a reindex job and queue the reindex task for it.

    A short Redis lock makes the check for a running reindex and the
    creation of the new job one step, so two editors clicking at once start
    one job. When the task cannot be queued the job is marked failed (it
    would otherwise block every later reindex) and the error propagates.

    Raises:
        JobRequestError: an unknown source, or a reindex is already queued or running.
    """
    source = (source or "").strip()
    if source not in task_names.REINDEX_SOURCES:
        choices = " or ".join(task_names.REINDEX_SOURCES)
        raise JobRequestError(f"choose what to reindex from: {choices} (got {source[:40]!r})")
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
        get_celery().send_task(task_names.REINDEX, kwargs={"job_id": job.id})
    except Exception as exc:
        store.finish(job.id, "failed", message=f"the reindex task could not be queued ({type(exc).__name__})")
        raise
    return job


def retry_job(job_id: str) -> int:
    """Queue the retry task for a finished job with retryable failures.

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
    if job.status in ACTIVE:
        raise JobRequestError(f"Job {job_id} is still {job.status}; retry its failures when it has finished.")
    retryable = store.retryable_count(job_id)
    if not retryable:
        total, _ = store.failures(job_id, limit=0)
        raise JobRequestError(f"Job {job_id} has no retryable failures ({total} failures in all).")
    get_celery().send_task(task_names.RETRY_FAILURES, kwargs={"job_id": job_id})
    return retryable


@dataclass
class FailurePage(Paged):
    """One page of a job's failures."""

    items: list[dict] = field(default_factory=list)

    @property
    def retryable(self) -> int:
        return sum(1 for f in self.items if f.get("retryable"))


def job_failures_page(store, job, *, page: int, page_size: int) -> FailurePage:
    """The ``page``-th page of a job's failures."""
    total, items = store.failures(job.id, offset=(page - 1) * page_size, limit=page_size)
    return FailurePage(page=page, page_size=page_size, total=total, items=list(items))
