"""Celery tasks. Thin: payloads are small dicts, the work is in ``plugin``."""

from __future__ import annotations

import base64
import logging
import time
from functools import lru_cache

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout
from elasticsearch import ApiError

from indexer.celery_app import app
from plugin.client import build_client
from plugin.collection import StoryStats
from plugin.dedup import Outcome, Page, SignedPage, ingest, sign_page
from plugin.extract import Rejection
from plugin.index import ensure_index
from plugin.settings import Settings
from plugin.signature import uses_stats
from plugin.stats import RepeatedLines

log = logging.getLogger(__name__)
logging.getLogger("trafilatura").setLevel(logging.ERROR)  # per-page problems become rejection reasons

TRANSIENT = (TransportConnectionError, ConnectionTimeout)


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
    import redis

    return RepeatedLines(redis.Redis.from_url(settings.redis_url), settings.index)


@lru_cache(maxsize=8)
def _stats(settings: Settings) -> StoryStats | None:
    """The collection's story frequencies, when the signature settings read them."""
    if not (uses_stats(settings) and settings.redis_url):
        return None
    import redis

    return StoryStats(redis.Redis.from_url(settings.redis_url), settings.index)


@lru_cache(maxsize=32)
def _ensured(settings: Settings) -> bool:
    ensure_index(_client(settings), settings)
    return True


def page_from_payload(payload: dict) -> Page:
    """A ``Page`` from a task payload: ``archive`` (a reference into the raw-page archive),
    ``html_path`` (a file), ``html_b64`` (raw bytes) or ``html`` (text)."""
    if payload.get("archive"):
        from indexer.archive import ArchiveRef, read_ref

        record = read_ref(ArchiveRef.from_dict(payload["archive"]))
        html: bytes | str = record.html or b""
    elif payload.get("html_path"):
        with open(payload["html_path"], "rb") as fh:
            html = fh.read()
    elif payload.get("html_b64") is not None:
        html = base64.b64decode(payload["html_b64"])
    else:
        html = payload.get("html") or ""
    return Page(
        html=html,
        url=payload.get("url"),
        id=payload.get("id"),
        site=payload.get("site"),
        lang=payload.get("lang"),
        published=payload.get("published"),
    )


def sign_payloads(payloads: list[dict], settings: Settings) -> tuple[list[SignedPage], list[Outcome]]:
    """Extract and sign each page; a bad page becomes a rejected outcome, never an exception."""
    signed: list[SignedPage] = []
    rejected: list[Outcome] = []
    for n, payload in enumerate(payloads):
        page_id = str(payload.get("id") or payload.get("url") or f"#{n}")
        try:
            result = sign_page(
                page_from_payload(payload), settings, repeated=_repeated(settings), stats=_stats(settings)
            )
        except OSError as exc:
            result = Rejection("unreadable", f"cannot read the page: {exc}")
        except Exception as exc:  # the per-page boundary: log the page and go on with the batch
            log.exception("page %s failed", page_id)
            result = Rejection("internal_error", f"{type(exc).__name__}: {exc}")
        if isinstance(result, Rejection):
            rejected.append(Outcome(page_id, "rejected", reason=result.reason, detail=result.detail))
        else:
            signed.append(result)
    return signed, rejected


@app.task(bind=True, name="indexer.tasks.ingest_batch", acks_late=True, max_retries=None)
def ingest_batch(self, pages: list[dict], index: str | None = None) -> list[dict]:
    """Extract, sign, look up, decide and index a batch of pages.

    Args:
        pages: dicts with ``html``/``html_b64``/``html_path`` and optional
            ``id``, ``url``, ``site``, ``lang``, ``published``.
        index: the alias to write to (default: the configured one).

    Returns:
        One outcome dict per page (``status`` new/duplicate/unchanged/rejected).
    """
    settings = worker_settings()
    if index:
        settings = settings.replace(index=index)
    started = time.perf_counter()
    signed, rejected = sign_payloads(pages, settings)
    try:
        _ensured(settings)
        outcomes = ingest(signed, client=_client(settings), settings=settings, stats=_stats(settings))
    except (*TRANSIENT, ApiError) as exc:
        if isinstance(exc, ApiError) and exc.meta.status not in (429, 502, 503, 504):
            raise
        if self.request.retries >= settings.task_retries:
            log.error("giving up on a batch of %d pages after %d retries: %s", len(pages), self.request.retries, exc)
            raise
        countdown = min(60, 2 ** (self.request.retries + 1))
        log.warning("Elasticsearch unavailable (%s); retrying the batch in %d s", exc, countdown)
        raise self.retry(countdown=countdown, exc=exc) from exc
    log.info("batch of %d pages in %.2f s", len(pages), time.perf_counter() - started)
    return [o.as_dict() for o in rejected + outcomes]
