"""A batch of page payloads in a worker: read each page, extract, sign, ingest, record the rejections.

Every page ends as one outcome: a bad page becomes a rejection with a
reason, never an exception; an outage of Redis or Elasticsearch is raised, so
the batch waits and retries instead of rejecting healthy pages. The Celery
tasks (``indexer.tasks``) are thin callers of this module.
"""

from __future__ import annotations

import base64
import contextlib
import logging

from elasticsearch import Elasticsearch

from newsfold.indexer.guard import CrashGuard, PageTimeout, batch_key, time_limit
from newsfold.indexer.jobs.reindex_chunks import ChunkContext, target_settings
from newsfold.indexer.records import PageFileError, read_page_file
from newsfold.indexer.resources import (
    TRANSIENT,
    UNREACHABLE,
    client_for,
    ensure_index_once,
    job_store_for,
    presence_for,
    read_roots,
    redis_for,
    repeated_lines_for,
    story_stats_for,
)
from newsfold.plugin.extract.article import Rejection
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.document import Outcome
from newsfold.plugin.fold.rejections import record_rejections
from newsfold.plugin.fold.rollover import roll_over_when_due
from newsfold.plugin.ids import BAD_ID, id_problem, shown
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import Page, SignedPage
from newsfold.plugin.sign.signing import sign_page
from newsfold.state.reindex_target import live_target
from newsfold.state.story_stats import StoryStats

log = logging.getLogger(__name__)


def page_from_payload(
    payload: dict, *, max_bytes: int = DEFAULT_MAX_PAGE_BYTES, roots: list[str] | None = None
) -> Page:
    """A ``Page`` from a task payload: ``archive`` (a reference into the raw-page archive),
    ``html_path`` (a file), ``html_utf8`` or ``html_b64`` (raw bytes: UTF-8 ones as text, others in base64)
    or ``html`` (text).

    An archive reference alone is enough: the metadata the payload does not
    give comes from the archive record (a reindex from the archive sends only references).
    """
    meta = {key: payload.get(key) for key in ("id", "url", "site", "lang", "published", "section")}
    if payload.get("archive"):
        from newsfold.indexer.jobs.archive import ArchiveRef, read_ref

        record = read_ref(ArchiveRef.from_dict(payload["archive"]), max_bytes=max_bytes)
        html: bytes | str = record.html or b""
        meta = {key: value if key in payload else getattr(record, key) for key, value in meta.items()}
    elif payload.get("html_path"):
        html = read_page_file(payload["html_path"], max_bytes=max_bytes, roots=roots)
    elif payload.get("html_utf8") is not None:  # raw bytes that were UTF-8, sent as text (smaller than base64)
        html = payload["html_utf8"].encode("utf-8")
    elif payload.get("html_b64") is not None:
        html = base64.b64decode(payload["html_b64"])
    else:
        html = payload.get("html") or ""
    return Page(html=html, **meta)


def sign_batch(
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
                wrong = id_problem(page.id) if page.id else None
                result = (
                    Rejection(BAD_ID, f"the id {wrong}: {shown(str(page.id))}")
                    if wrong
                    else sign_page(page, settings, repeated=repeated_lines_for(settings), stats=stats)
                )
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


def ingest_payloads(
    pages: list[dict],
    settings: Settings,
    *,
    job_id: str | None = None,
    guard: CrashGuard | None = None,
    delivery: str | None = None,
) -> tuple[list[dict], dict[str, dict]]:
    """Sign and ingest pages into the alias (and into a running reindex's new index); record rejections.

    ``delivery`` names the batch's delivery, the same on every retry (``plugin.ingest``'s argument).
    Returns one outcome dict per page (rejected ones carry ``url`` and
    ``site``) and each page's payload by the page id of its outcome.
    """
    signed, rejected, sources = sign_batch(pages, settings, stats=story_stats_for(settings), guard=guard)
    client = client_for(settings)
    ensure_index_once(settings)
    _roll_over_when_due(client, settings)
    stats, presence = story_stats_for(settings), presence_for(settings)
    outcomes = ingest(signed, client=client, settings=settings, stats=stats, delivery=delivery, presence=presence)
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


def _roll_over_when_due(client: Elasticsearch, settings: Settings) -> None:
    """Start a new write index when the current one is due (at most once a minute), never during a reindex."""
    if settings.redis_url and live_target(redis_for(settings), settings.index):
        return  # the reindex swaps the alias's write index: the rollover waits until it is done
    roll_over_when_due(client, settings, presence=presence_for(settings))


def _write_to_reindex(signed: list[SignedPage], settings: Settings) -> None:
    """While a reindex builds a new index, write the batch there too (its catch-up pass is the guarantee)."""
    target = live_target(redis_for(settings), settings.index)
    if not target:
        return
    client = client_for(settings)
    try:
        # checked first: a bulk write into a deleted index would create it again, without the mapping
        if client.indices.exists(index=target):
            ingest(signed, client=client, settings=target_settings(settings, target), presence=presence_for(settings))
    except Exception as exc:
        log.warning("could not also write the batch into %s (the reindex catches it up): %s", target, exc)


@contextlib.contextmanager
def guarded(settings: Settings, pages: list[dict], key: str | None):
    """A :class:`CrashGuard` for the batch (None without Redis); a delivery that ends in an error, not a
    crash (a retry, a failure), is not counted."""
    if not settings.redis_url:
        yield None
        return
    guard = CrashGuard(redis_for(settings), settings.index, key or batch_key(pages))
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
        client=client_for(settings),
        store=job_store_for(settings),
        repeated=repeated_lines_for(settings),
        stats=story_stats_for(settings),
        presence=presence_for(settings),
        sign=lambda payloads: sign_batch(payloads, settings, stats=story_stats_for(settings)),
    )
