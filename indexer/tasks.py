"""Celery tasks. Thin: payloads are small dicts, the work is in ``plugin``."""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import time
from functools import lru_cache

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError

from newsfold.indexer.celery_app import app
from newsfold.indexer.guard import CrashGuard, PageTimeout, batch_key, time_limit
from newsfold.indexer.records import PageFileError, read_page_file
from newsfold.indexer.reindex import ChunkContext, Reindex, ReindexError, live_target, run_chunk, target_settings
from newsfold.plugin.batch import ingest
from newsfold.plugin.client import build_client
from newsfold.plugin.document import Outcome, Page, SignedPage
from newsfold.plugin.extract import Rejection
from newsfold.plugin.index import ensure_index
from newsfold.plugin.rejections import record_rejections
from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import uses_stats
from newsfold.plugin.signing import sign_page
from newsfold.state import build_redis, patiently, redis_down_errors
from newsfold.state.jobs import HEARTBEAT_TTL, JobStore, UnitBusy, failed_batch
from newsfold.state.repeated_lines import RepeatedLines
from newsfold.state.story_stats import StoryStats

log = logging.getLogger(__name__)
logging.getLogger("trafilatura").setLevel(logging.ERROR)  # per-page problems become rejection reasons

TRANSIENT = (TransportConnectionError, ConnectionTimeout)
#: a server that cannot be reached: the batch waits or retries, never rejects its pages
UNREACHABLE = (*TRANSIENT, *redis_down_errors())


@lru_cache(maxsize=1)
def worker_settings() -> Settings:
    return Settings.from_env()


@lru_cache(maxsize=8)
def _client(settings: Settings):
    return build_client(settings)


@lru_cache(maxsize=8)
def _repeated(settings: Settings) -> RepeatedLines | None:
    if not (settings.repeated_lines and settings.redis_url):
        return None
    return RepeatedLines(build_redis(settings.redis_url), settings.index)


@lru_cache(maxsize=8)
def _stats(settings: Settings) -> StoryStats | None:
    """The collection's story frequencies, when the signature settings read them."""
    if not (uses_stats(settings) and settings.redis_url):
        return None
    return StoryStats(build_redis(settings.redis_url), settings.index)


@lru_cache(maxsize=32)
def _ensured(settings: Settings) -> bool:
    ensure_index(_client(settings), settings)
    return True


@lru_cache(maxsize=8)
def _redis(settings: Settings):
    return build_redis(settings.redis_url)


@lru_cache(maxsize=8)
def _store(settings: Settings) -> JobStore:
    return JobStore(_redis(settings))


def read_roots(settings: Settings) -> list[str]:
    """The folders a worker may read ``html_path`` files from: ``NEWSFOLD_READ_ROOTS`` and the archive folder."""
    roots = [r for r in (settings.read_roots or "").split(os.pathsep) if r.strip()]
    if settings.archive_dir:
        roots.append(settings.archive_dir)
    return roots


def page_from_payload(payload: dict, *, max_bytes: int = 10 * 1024 * 1024, roots: list[str] | None = None) -> Page:
    """A ``Page`` from a task payload: ``archive`` (a reference into the raw-page archive),
    ``html_path`` (a file), ``html_b64`` (raw bytes) or ``html`` (text).

    An archive reference alone is enough: the metadata the payload does not
    give comes from the archive record (a reindex from the archive sends only references).
    """
    meta = {key: payload.get(key) for key in ("id", "url", "site", "lang", "published")}
    if payload.get("archive"):
        from newsfold.indexer.archive import ArchiveRef, read_ref

        record = read_ref(ArchiveRef.from_dict(payload["archive"]))
        html: bytes | str = record.html or b""
        meta = {key: value if key in payload else getattr(record, key) for key, value in meta.items()}
    elif payload.get("html_path"):
        html = read_page_file(payload["html_path"], max_bytes=max_bytes, roots=roots)
    elif payload.get("html_b64") is not None:
        html = base64.b64decode(payload["html_b64"])
    else:
        html = payload.get("html") or ""
    return Page(html=html, **meta)


def _sign(
    payloads: list[dict], settings: Settings, *, stats: StoryStats | None, guard: CrashGuard | None = None
) -> tuple[list[SignedPage], list[Outcome], dict[str, dict]]:
    """Extract and sign each page; also each page id's payload, with the url and site read.

    Each page gets ``settings.page_timeout`` seconds; with a ``guard``, a page
    that took a worker down on an earlier delivery is rejected unread.
    """
    signed: list[SignedPage] = []
    rejected: list[Outcome] = []
    sources: dict[str, dict] = {}
    for n, payload in enumerate(payloads):
        page_id = str(payload.get("id") or payload.get("url") or f"#{n}")
        source = dict(payload)
        if guard is not None and page_id in guard.culprits:
            detail = f"the worker process died while extracting this page (delivery {guard.delivery} of its batch)"
            rejected.append(Outcome(page_id, "rejected", reason="worker_crashed", detail=detail))
            sources[page_id] = source
            continue
        try:
            if guard is not None:
                guard.signing(page_id)
            with time_limit(settings.page_timeout):
                page = page_from_payload(payload, max_bytes=settings.max_page_bytes, roots=read_roots(settings))
                page_id = str(page.id or page.url or page_id)
                source.update(url=page.url, site=page.site)
                result = sign_page(page, settings, repeated=_repeated(settings), stats=stats)
        except PageTimeout as exc:
            log.warning("page %s: extraction stopped, %s", page_id, exc)
            result = Rejection("timeout", f"extraction and signing {exc} (NEWSFOLD_PAGE_TIMEOUT)")
        except UNREACHABLE:
            raise  # an outage of Redis or Elasticsearch says nothing about the page: the batch waits and retries
        except PageFileError as exc:
            result = Rejection(exc.reason, exc.detail)
        except OSError as exc:
            result = Rejection("unreadable", f"cannot read the page: {exc}")
        except Exception as exc:  # the per-page boundary: log the page and go on with the batch
            log.exception("page %s failed", page_id)
            result = Rejection("internal_error", f"{type(exc).__name__}: {exc}")
        if isinstance(result, Rejection):
            rejected.append(Outcome(page_id, "rejected", reason=result.reason, detail=result.detail))
        else:
            signed.append(result)
            page_id = result.page_id
        sources[page_id] = source
    if guard is not None:
        guard.signed()
    return signed, rejected, sources


def sign_payloads(payloads: list[dict], settings: Settings) -> tuple[list[SignedPage], list[Outcome]]:
    """Extract and sign each page; a bad page becomes a rejected outcome, never an exception."""
    signed, rejected, _ = _sign(payloads, settings, stats=_stats(settings))
    return signed, rejected


def ingest_payloads(
    pages: list[dict], settings: Settings, *, job_id: str | None = None, guard: CrashGuard | None = None
) -> tuple[list[dict], dict[str, dict]]:
    """Sign and ingest pages into the alias (and into a running reindex's new index); record rejections.

    Returns one outcome dict per page (rejected ones carry ``url`` and
    ``site``) and each page's payload by the page id of its outcome.
    """
    signed, rejected, sources = _sign(pages, settings, stats=_stats(settings), guard=guard)
    client = _client(settings)
    _ensured(settings)
    outcomes = ingest(signed, client=client, settings=settings, stats=_stats(settings))
    if signed and settings.redis_url:
        _write_to_reindex(signed, settings)
    got = [o.as_dict() for o in rejected + outcomes]
    for o in got:
        if o["status"] == "rejected":
            src = sources.get(o["page_id"]) or {}
            o.update({k: src[k] for k in ("url", "site") if src.get(k)})
    try:
        record_rejections(got, client=client, settings=settings, job_id=job_id)
    except TRANSIENT:
        raise
    except Exception as exc:  # the pages are indexed; a missing rejection record must not undo the batch
        log.error("could not record the rejected pages of a batch: %s", exc)
    return got, sources


def _write_to_reindex(signed: list[SignedPage], settings: Settings) -> None:
    """While a reindex builds a new index, write the batch there too (its catch-up pass is the guarantee)."""
    target = live_target(_redis(settings), settings.index)
    if not target:
        return
    client = _client(settings)
    try:
        # checked first: a bulk write into a deleted index would create it again, without the mapping
        if client.indices.exists(index=target):
            ingest(signed, client=client, settings=target_settings(settings, target))
    except Exception as exc:
        log.warning("could not also write the batch into %s (the reindex catches it up): %s", target, exc)


def _retry_later(task, exc: Exception, settings: Settings, what: str):
    """Retry a task on a transient Elasticsearch error (exponential backoff), else re-raise."""
    if isinstance(exc, ApiError) and exc.meta.status not in (429, 502, 503, 504):
        raise exc
    if task.request.retries >= settings.task_retries:
        log.error("giving up on %s after %d retries: %s", what, task.request.retries, exc)
        raise exc
    countdown = min(60, 2 ** (task.request.retries + 1))
    log.warning("Elasticsearch unavailable (%s); retrying %s in %d s", exc, what, countdown)
    raise task.retry(countdown=countdown, exc=exc) from exc


@app.task(bind=True, name="indexer.tasks.ingest_batch", acks_late=True, max_retries=None)
def ingest_batch(
    self, pages: list[dict], index: str | None = None, job_id: str | None = None, key: str | None = None
) -> list[dict]:
    """Extract, sign, look up, decide and index a batch of pages.

    Args:
        pages: dicts with ``html``/``html_b64``/``html_path``/``archive`` and
            optional ``id``, ``url``, ``site``, ``lang``, ``published``.
        index: the alias to write to (default: the configured one).
        job_id: the job the batch belongs to; its outcomes are counted into
            it once, under ``key``.
        key: the batch's checkpoint key in the job.

    Returns:
        One outcome dict per page (``status`` new/duplicate/unchanged/rejected);
        nothing for a batch the job has already counted.
    """
    settings = worker_settings()
    if index:
        settings = settings.replace(index=index)
    tracked = bool(job_id and key and settings.redis_url)
    store = _store(settings) if tracked else None
    if tracked and store.is_recorded(job_id, key):
        return store.outcomes(job_id, key) or []  # a late redelivery of a batch already done: its outcomes
    started = time.perf_counter()
    guard_key = f"{job_id}:{key}" if tracked else None  # a job's batch keys repeat across jobs: qualify them
    try:
        with (
            store.heartbeat(job_id, key, claim=True) if tracked else contextlib.nullcontext(),
            _guarded(settings, pages, guard_key) as guard,
        ):
            if guard is not None and guard.exhausted:
                outcomes, sources = crashed_batch(pages, guard.delivery)
            else:
                what = f"the batch of {len(pages)} pages"
                try:
                    # Redis down (it is the broker too): wait here; Elasticsearch down: retry through the broker
                    outcomes, sources = patiently(
                        lambda: ingest_payloads(pages, settings, job_id=job_id, guard=guard), what=what
                    )
                except (*TRANSIENT, ApiError) as exc:
                    _retry_later(self, exc, settings, what)
            if tracked:
                patiently(lambda: store.record(job_id, key, outcomes, payloads=sources), what=f"recording {what}")
    except UnitBusy as busy:
        # another delivery of this batch is alive (the broker's redelivery and the coordinator's resend can
        # meet): never two at once, or the crash guard would blame the page the other one is signing
        log.info("batch %s: %s; trying again in %.0f s", key, busy, HEARTBEAT_TTL)
        raise self.retry(countdown=HEARTBEAT_TTL, exc=busy) from busy
    log.info("batch of %d pages in %.2f s", len(pages), time.perf_counter() - started)
    return outcomes


@contextlib.contextmanager
def _guarded(settings: Settings, pages: list[dict], key: str | None):
    """A :class:`CrashGuard` for the batch (None without Redis); a delivery that ends in an error, not a
    crash (a retry, a failure), is not counted."""
    if not settings.redis_url:
        yield None
        return
    guard = CrashGuard(_redis(settings), settings.index, key or batch_key(pages))
    guard.start()
    try:
        yield guard
    except BaseException:
        guard.released()
        raise
    guard.finish()


def crashed_batch(pages: list[dict], deliveries: int) -> tuple[list[dict], dict[str, dict]]:
    """Outcomes for a batch that kept killing its workers: every page rejected (retryable), nothing read."""
    detail = f"the batch was delivered {deliveries} times and a worker process died each time"
    outcomes, sources = [], {}
    for n, p in enumerate(pages):
        page_id = str(p.get("id") or p.get("url") or f"#{n}")
        outcomes.append({"page_id": page_id, "status": "rejected", "reason": "worker_crashed", "detail": detail})
        sources[page_id] = p
    return outcomes, sources


def chunk_context(settings: Settings) -> ChunkContext:
    """The resources a reindex chunk (or the coordinator's catch-up) works with."""
    return ChunkContext(
        settings=settings,
        client=_client(settings),
        store=_store(settings),
        repeated=_repeated(settings),
        stats=_stats(settings),
        sign=lambda payloads: _sign(payloads, settings, stats=_stats(settings)),
    )


@app.task(bind=True, name="indexer.tasks.reindex_chunk", acks_late=True, max_retries=None)
def reindex_chunk(self, job_id: str, chunk: dict) -> dict:
    """Build one chunk of a reindex into the new index (see ``indexer.reindex``)."""
    settings = worker_settings()
    state = _store(settings).state(job_id)
    settings = settings.replace(index=state.get("alias") or settings.index)
    try:
        return run_chunk(job_id, chunk, chunk_context(settings))
    except (*TRANSIENT, ApiError) as exc:
        _retry_later(self, exc, settings, f"reindex chunk {chunk.get('key')}")


@app.task(bind=True, name="indexer.tasks.reindex", acks_late=True)
def reindex(self, job_id: str) -> dict:
    """Run (or resume) the reindex job ``job_id`` to its end; the job's state says how it went.

    It occupies this worker process while it runs: the chunks need at least
    one other. Delivered again while it still runs (a reindex longer than the
    broker's visibility timeout), the copy finds the job's lock held and returns.
    """
    settings = worker_settings()
    store = _store(settings)
    job = store.get(job_id)
    alias = (job.params.get("index") if job else None) or settings.index
    try:
        job = Reindex(job_id, app=app, store=store, ctx=chunk_context(settings.replace(index=alias))).run()
    except ReindexError as exc:
        log.error("reindex job %s: %s", job_id, exc)
        return {"id": job_id, "status": "failed", "message": str(exc)}
    return job.as_dict()


@app.task(bind=True, name="indexer.tasks.retry_failures", acks_late=True)
def retry_failures(self, job_id: str) -> dict:
    """Ingest the retryable failed pages of a job again (into the alias), counting them into the job."""
    settings = worker_settings()
    store = _store(settings)
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
    return store.get(job_id).as_dict()
