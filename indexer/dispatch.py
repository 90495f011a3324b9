"""Feeding units of work to the Celery workers: a bounded number in flight, dead workers' units sent again.

:func:`drive` is the loop; :func:`run_batches` drives batches of pages
through the ``ingest_batch`` task. Used by the ingest job and ``newsfold
cluster`` (batches) and by the reindex coordinator (chunks), in a plain
process or inside a worker.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from newsfold import task_names
from newsfold.state import patiently
from newsfold.state.job_records import failed_batch
from newsfold.state.jobs import HEARTBEAT_EVERY, JobStore

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger(__name__)

#: seconds after an outage before units without a heartbeat are sent again: two renewal periods
OUTAGE_GRACE = 2 * HEARTBEAT_EVERY + 1.0


@dataclass
class _Pending:
    key: str
    item: Any
    result: Any  # celery.result.AsyncResult
    seen_alive: bool = False


def drive(
    items: Iterable[tuple[str, Any]],
    send: Callable[[str, Any], Any],
    on_result: Callable[[str, Any, Any, BaseException | None], None],
    *,
    max_in_flight: int = 64,
    poll: float = 0.05,
    max_poll: float = 0.5,
    alive: Callable[[list[str]], list[bool]] | None = None,
    check_every: float = 1.0,
    on_idle: Callable[[], None] | None = None,
    max_outage: float = 300.0,
    on_wait: Callable[[str | None], None] | None = None,
    died: Callable[[list[str]], list[bool]] | None = None,
    outage_grace: float = OUTAGE_GRACE,
) -> None:
    """Send ``(key, item)`` units with ``send`` and hand each result to ``on_result``.

    ``items`` may be a lazy iterator: at most ``max_in_flight`` units are
    queued at a time. ``on_result(key, item, value, error)`` gets the task's
    return value, or its exception when the task failed for good.

    With ``alive`` (the heartbeats of ``JobStore.heartbeat``), a unit whose
    worker was seen working on it and whose heartbeat then expired before a
    result came is sent again: its worker died (Celery would redeliver the
    message only after the broker's visibility timeout, an hour). The units
    are idempotent, so the late redelivery of the first message is harmless.
    With ``died`` (``JobStore.died``), a unit whose delivery claimed it and
    died is sent again even when its heartbeat was never seen (a worker killed
    within a second of starting the unit).
    ``on_idle`` runs about every ``check_every`` seconds (progress display).
    Each poll asks the result backend about every unit in flight, so the
    pause between polls doubles (from ``poll`` up to ``max_poll``) while
    nothing finishes: polling 64 units every 50 ms cost the coordinator
    5-12 ms of CPU per page and Redis as much again.

    An outage of Redis (the broker and the result store) is waited out for up
    to ``max_outage`` seconds, with ``on_wait("waiting for Redis (N s)")``
    while it lasts and ``on_wait(None)`` when it is over; no unit is lost or
    handed to ``on_result`` twice. A longer outage raises its error. Units no
    worker is seen on are sent again ``outage_grace`` seconds after Redis is
    back: a worker that kept running through the outage renews its lapsed
    heartbeat by then, and its unit is not run twice at once.
    """
    source = iter(items)
    pending: list[_Pending] = []
    unsent: tuple[str, Any] | None = None  # a unit taken from ``items`` but not yet sent (the broker was away)
    exhausted = False
    next_check = time.monotonic() + check_every
    pause = poll
    outage = _Outage(max_wait=max_outage, on_wait=on_wait)
    recheck_at: float | None = None  # when to look for units lost in an outage
    while pending or not exhausted or unsent:
        try:
            while not exhausted and len(pending) < max_in_flight:
                unit = unsent or next(source, None)
                if unit is None:
                    exhausted = True
                    break
                unsent = unit
                key, item = unit
                pending.append(_Pending(key, item, send(key, item)))
                unsent = None
            progressed = False
            for p in list(pending):
                if not p.result.ready():
                    continue
                if p.result.successful():
                    value, error = p.result.get(disable_sync_subtasks=False), None
                else:
                    value, error = None, p.result.result
                    if not isinstance(error, BaseException):
                        error = RuntimeError(str(error))
                pending.remove(p)  # before anything else can fail: a result is handed on once
                progressed = True
                on_result(p.key, p.item, value, error)
                with contextlib.suppress(Exception):
                    p.result.forget()
            if time.monotonic() >= next_check:
                next_check = time.monotonic() + check_every
                if alive is not None and pending:
                    _resend_dead(pending, send, alive, died)
                if on_idle is not None:
                    on_idle()
            if outage.over():
                recheck_at = time.monotonic() + outage_grace
            if recheck_at is not None and time.monotonic() >= recheck_at:
                recheck_at = None
                _resend_after_outage(pending, send, alive)
        except _down_errors() as exc:
            outage.wait(exc)  # raises when the outage lasts longer than ``max_outage``
            continue
        if progressed:
            pause = poll
        elif pending:
            time.sleep(pause)
            pause = min(max_poll, pause * 2)


def _down_errors() -> tuple[type[BaseException], ...]:
    """What Redis (broker and result store) being away looks like to the coordinator."""
    from kombu.exceptions import OperationalError

    from newsfold.state import redis_down_errors

    return (*redis_down_errors(), OperationalError)


class _Outage:
    """Waiting out an outage of the broker: backoff, a message, and a limit."""

    def __init__(self, *, max_wait: float, on_wait: Callable[[str | None], None] | None) -> None:
        self.max_wait = max_wait
        self.on_wait = on_wait
        self.started: float | None = None
        self.pause = 0.5

    def wait(self, exc: BaseException) -> None:
        now = time.monotonic()
        if self.started is None:
            self.started = now
            log.warning("Redis is unavailable (%s): waiting up to %.0f s for it to come back", exc, self.max_wait)
        waited = now - self.started
        if waited >= self.max_wait:
            raise exc
        if self.on_wait is not None:
            self.on_wait(f"waiting for Redis ({waited:.0f} s)")
        time.sleep(min(self.pause, self.max_wait - waited))
        self.pause = min(self.pause * 2, 10.0)

    def over(self) -> bool:
        """Note that Redis answers; True when an outage just ended."""
        ended = self.started is not None
        if self.started is not None:
            log.warning("Redis is back after %.0f s", time.monotonic() - self.started)
            if self.on_wait is not None:
                self.on_wait(None)
        self.started, self.pause = None, 0.5
        return ended


def _resend_after_outage(pending: list[_Pending], send, alive) -> None:
    """After an outage, send again every unit no worker is seen on: its result or its message may be lost.

    A task that finished while Redis was away could not store its result, and
    one whose worker lost the broker may sit unacknowledged until the
    visibility timeout; neither would ever answer. Units are idempotent (a
    batch already counted returns at once), so a unit that was only waiting
    in the queue costs one extra message.
    """
    running = alive([p.key for p in pending]) if alive is not None else [False] * len(pending)
    resent = 0
    for p, is_alive in zip(pending, running, strict=True):
        if not is_alive and not p.result.ready():
            p.result = send(p.key, p.item)
            p.seen_alive = False
            resent += 1
    if resent:
        log.warning("sent %d units again after the outage (their results or messages may be lost)", resent)


def _resend_dead(pending: list[_Pending], send, alive, died=None) -> None:
    keys = [p.key for p in pending]
    gone = died(keys) if died is not None else [False] * len(keys)
    for p, is_alive, dead in zip(pending, alive(keys), gone, strict=True):
        if is_alive:
            p.seen_alive = True
        elif (p.seen_alive or dead) and not p.result.ready():
            log.warning("the worker running %s stopped answering; sending it again", p.key)
            p.result = send(p.key, p.item)
            p.seen_alive = False




MAX_PAGES_IN_FLIGHT = 1_600  # pages queued at once: 16 batches of 100 (the default size), 64 of 25


def in_flight_batches(batch_size: int) -> int:
    """How many batches of ``batch_size`` pages to keep queued (at least 4)."""
    return max(4, MAX_PAGES_IN_FLIGHT // max(1, batch_size))


def run_batches(
    app: Celery,
    batches: Iterable[list[dict] | tuple[str, list[dict]]],
    *,
    index: str | None = None,
    on_done: Callable[[list[dict]], object] = lambda outcomes: None,
    max_in_flight: int = 64,
    poll: float = 0.05,
    collect: bool = True,
    store: JobStore | None = None,
    job_id: str | None = None,
    on_idle: Callable[[], None] | None = None,
    max_outage: float = 300.0,
    on_wait: Callable[[str | None], None] | None = None,
) -> list[dict]:
    """Queue batches for the workers and collect one outcome per page.

    ``batches`` may be a lazy iterator: at most ``max_in_flight`` batches are
    queued at a time, so an archive of millions of pages streams through in
    constant memory (pass ``collect=False`` and consume outcomes in
    ``on_done``). A batch whose task fails for good (for example Elasticsearch
    stayed down through all retries) yields a ``rejected`` outcome with reason
    ``failed`` for each of its pages, so nothing is silently dropped.

    With a job (``store`` and ``job_id``), batches are ``(key, pages)`` pairs
    (plain lists are numbered from 0): the workers count each batch into the
    job once under its key, the checkpoint a resumed run skips; a batch that
    failed for good is counted here, with its pages kept for a retry; and a
    batch whose worker died is sent again at once (see ``indexer.dispatch.drive``).
    A Redis outage is waited out for up to ``max_outage`` seconds (``on_wait``
    hears "waiting for Redis" while it lasts).
    """
    outcomes: list[dict] = []
    tracked = store is not None and job_id is not None

    def units():
        for n, batch in enumerate(batches):
            yield batch if isinstance(batch, tuple) else (str(n), batch)

    def send(key: str, batch: list[dict]):
        kwargs = {"job_id": job_id, "key": key} if tracked else {}
        return app.send_task(task_names.INGEST_BATCH, args=[batch, index], kwargs=kwargs)

    def on_result(key: str, batch: list[dict], got, error) -> None:
        if error is not None:
            got = failed_batch(batch, error)
            if store is not None and job_id is not None:  # tracked
                patiently(
                    lambda: store.record(job_id, key, got, payloads={str(p.get("id")): p for p in batch}),
                    what=f"recording the failed batch {key}",
                )
        if collect:
            outcomes.extend(got)
        on_done(got)

    drive(
        units(),
        send,
        on_result,
        max_in_flight=max_in_flight,
        poll=poll,
        alive=partial(store.alive, job_id) if store is not None and job_id is not None else None,
        died=partial(store.died, job_id) if store is not None and job_id is not None else None,
        on_idle=on_idle,
        max_outage=max_outage,
        on_wait=on_wait,
    )
    return outcomes
