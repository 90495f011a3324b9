"""Feeding units of work to the Celery workers: a bounded number in flight, dead workers' units sent again.

:func:`drive` is the loop, fed by a :class:`Work` the job implements (how a
unit is sent, what its result means, how its worker is watched);
:func:`run_batches` drives batches of pages through the ``ingest_batch`` task.
Used by the ingest job and ``newsfold cluster`` (batches) and by the reindex
coordinator (chunks), in a plain process or inside a worker.
"""

from __future__ import annotations

import contextlib
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from newsfold import task_names
from newsfold.state import patiently
from newsfold.state.heartbeats import HEARTBEAT_EVERY
from newsfold.state.job_records import failed_batch
from newsfold.state.jobs import JobStore

if TYPE_CHECKING:
    from celery import Celery

log = logging.getLogger(__name__)

#: seconds after an outage before units without a heartbeat are sent again: two renewal periods
OUTAGE_GRACE = 2 * HEARTBEAT_EVERY + 1.0


class Work(ABC):
    """The job's side of :func:`drive`: how a unit is sent, what its result means, how its worker is watched.

    A job implements :meth:`send` and :meth:`finished`; the other methods
    default to "the units have no heartbeats" and "nobody is listening".
    """

    @abstractmethod
    def send(self, key: str, item: Any) -> Any:
        """Queue one unit; returns its ``celery.result.AsyncResult`` (or anything that answers like one)."""

    @abstractmethod
    def finished(self, key: str, item: Any, value: Any, error: BaseException | None) -> None:
        """Hear one unit's return value, or its exception when the task failed for good (once per unit)."""

    def alive(self, keys: list[str]) -> list[bool] | None:
        """Whether a worker's heartbeat is fresh on each unit (``JobStore.alive``); None: no heartbeats."""
        return None

    def died(self, keys: list[str]) -> list[bool]:
        """Whether a delivery claimed each unit and died (``JobStore.died``), its heartbeat seen or not."""
        return [False] * len(keys)

    def idle(self) -> None:
        """Called about every ``Timing.check_every`` seconds (a progress display)."""
        return None

    def waiting(self, message: str | None) -> None:
        """Hears ``"waiting for Redis (N s)"`` while an outage lasts, and None when it is over."""
        return None


@dataclass(frozen=True)
class Timing:
    """How :func:`drive` paces itself (see there): polling, checks, and how long an outage is waited out."""

    poll: float = 0.05
    max_poll: float = 0.5
    check_every: float = 1.0
    max_outage: float = 300.0
    outage_grace: float = OUTAGE_GRACE


@dataclass
class _Pending:
    key: str
    item: Any
    result: Any  # celery.result.AsyncResult
    seen_alive: bool = False


def drive(items: Iterable[tuple[str, Any]], work: Work, *, max_in_flight: int = 64, timing: Timing = Timing()) -> None:
    """Send ``(key, item)`` units with ``work.send`` and hand each result to ``work.finished``.

    ``items`` may be a lazy iterator: at most ``max_in_flight`` units are
    queued at a time. ``work.finished(key, item, value, error)`` gets the
    task's return value, or its exception when the task failed for good.

    With heartbeats (``work.alive``, from ``JobStore.heartbeat``), a unit whose
    worker was seen working on it and whose heartbeat then expired before a
    result came is sent again: its worker died (Celery would redeliver the
    message only after the broker's visibility timeout, an hour). The units
    are idempotent, so the late redelivery of the first message is harmless.
    With ``work.died`` (``JobStore.died``), a unit whose delivery claimed it and
    died is sent again even when its heartbeat was never seen (a worker killed
    within a second of starting the unit).
    ``work.idle`` runs about every ``timing.check_every`` seconds (progress display).
    Each poll asks the result backend about every unit in flight, so the
    pause between polls doubles (from ``timing.poll`` up to ``timing.max_poll``)
    while nothing finishes: polling 64 units every 50 ms cost the coordinator
    5-12 ms of CPU per page and Redis as much again.

    An outage of Redis (the broker and the result store) is waited out for up
    to ``timing.max_outage`` seconds, with ``work.waiting("waiting for Redis (N s)")``
    while it lasts and ``work.waiting(None)`` when it is over; no unit is lost or
    handed to ``work.finished`` twice. A longer outage raises its error. Units no
    worker is seen on are sent again ``timing.outage_grace`` seconds after Redis
    is back: a worker that kept running through the outage renews its lapsed
    heartbeat by then, and its unit is not run twice at once.
    """
    _Driver(iter(items), work, max_in_flight, timing).run()


def _down_errors() -> tuple[type[BaseException], ...]:
    """What Redis (broker and result store) being away looks like to the coordinator."""
    from kombu.exceptions import OperationalError

    from newsfold.state import redis_down_errors

    return (*redis_down_errors(), OperationalError)


class _Driver:
    """The state of one :func:`drive`: units in flight, the one taken but unsent, the pace, an outage."""

    def __init__(self, source: Iterator[tuple[str, Any]], work: Work, max_in_flight: int, timing: Timing) -> None:
        self.source, self.work, self.max_in_flight, self.timing = source, work, max_in_flight, timing
        self.pending: list[_Pending] = []
        # a unit taken from ``source`` but not yet sent (the broker was away)
        self.unsent: tuple[str, Any] | None = None
        self.exhausted = False
        self.next_check = time.monotonic() + timing.check_every
        self.pause = timing.poll
        self.outage = _Outage(max_wait=timing.max_outage, on_wait=work.waiting)
        self.recheck_at: float | None = None  # when to look for units lost in an outage

    def run(self) -> None:
        while self.pending or not self.exhausted or self.unsent:
            try:
                self._fill()
                progressed = self._collect()
                self._check()
            except _down_errors() as exc:
                self.outage.wait(exc)  # raises when the outage lasts longer than ``max_outage``
                continue
            if progressed:
                self.pause = self.timing.poll
            elif self.pending:
                time.sleep(self.pause)
                self.pause = min(self.timing.max_poll, self.pause * 2)

    def _fill(self) -> None:
        """Send units until ``max_in_flight`` are pending or the source is exhausted."""
        while not self.exhausted and len(self.pending) < self.max_in_flight:
            unit = self.unsent or next(self.source, None)
            if unit is None:
                self.exhausted = True
                return
            self.unsent = unit
            key, item = unit
            self.pending.append(_Pending(key, item, self.work.send(key, item)))
            self.unsent = None

    def _collect(self) -> bool:
        """Hand every ready result on (once); True when any was."""
        progressed = False
        for p in list(self.pending):
            if not p.result.ready():
                continue
            if p.result.successful():
                value, error = p.result.get(disable_sync_subtasks=False), None
            else:
                value, error = None, p.result.result
                if not isinstance(error, BaseException):
                    error = RuntimeError(str(error))
            self.pending.remove(p)  # before anything else can fail: a result is handed on once
            progressed = True
            self.work.finished(p.key, p.item, value, error)
            with contextlib.suppress(Exception):
                p.result.forget()
        return progressed

    def _check(self) -> None:
        """The periodic heartbeat check and progress call, and the look for units lost in an outage."""
        if time.monotonic() >= self.next_check:
            self.next_check = time.monotonic() + self.timing.check_every
            if self.pending:
                self._resend_dead()
            self.work.idle()
        if self.outage.over():
            self.recheck_at = time.monotonic() + self.timing.outage_grace
        if self.recheck_at is not None and time.monotonic() >= self.recheck_at:
            self.recheck_at = None
            self._resend_after_outage()

    def _resend(self, p: _Pending) -> None:
        p.result = self.work.send(p.key, p.item)
        p.seen_alive = False

    def _resend_dead(self) -> None:
        keys = [p.key for p in self.pending]
        running = self.work.alive(keys)
        if running is None:
            return
        for p, is_alive, dead in zip(self.pending, running, self.work.died(keys), strict=True):
            if is_alive:
                p.seen_alive = True
            elif (p.seen_alive or dead) and not p.result.ready():
                log.warning("the worker running %s stopped answering; sending it again", p.key)
                self._resend(p)

    def _resend_after_outage(self) -> None:
        """After an outage, send again every unit no worker is seen on: its result or its message may be lost.

        A task that finished while Redis was away could not store its result, and
        one whose worker lost the broker may sit unacknowledged until the
        visibility timeout; neither would ever answer. Units are idempotent (a
        batch already counted returns at once), so a unit that was only waiting
        in the queue costs one extra message.
        """
        running = self.work.alive([p.key for p in self.pending]) or [False] * len(self.pending)
        resent = 0
        for p, is_alive in zip(self.pending, running, strict=True):
            if not is_alive and not p.result.ready():
                self._resend(p)
                resent += 1
        if resent:
            log.warning("sent %d units again after the outage (their results or messages may be lost)", resent)


class _Outage:
    """Waiting out an outage of the broker: backoff, a message, and a limit."""

    def __init__(self, *, max_wait: float, on_wait: Callable[[str | None], None]) -> None:
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
        self.on_wait(f"waiting for Redis ({waited:.0f} s)")
        time.sleep(min(self.pause, self.max_wait - waited))
        self.pause = min(self.pause * 2, 10.0)

    def over(self) -> bool:
        """Note that Redis answers; True when an outage just ended."""
        ended = self.started is not None
        if self.started is not None:
            log.warning("Redis is back after %.0f s", time.monotonic() - self.started)
            self.on_wait(None)
        self.started, self.pause = None, 0.5
        return ended


MAX_PAGES_IN_FLIGHT = 1_600  # pages queued at once: 16 batches of 100 (the default size), 64 of 25


def in_flight_batches(batch_size: int) -> int:
    """How many batches of ``batch_size`` pages to keep queued (at least 4)."""
    return max(4, MAX_PAGES_IN_FLIGHT // max(1, batch_size))


def _ignore(outcomes: list[dict]) -> None:
    return None


@dataclass(frozen=True)
class BatchRun:
    """How :func:`run_batches` runs: where the pages go, who hears the outcomes, the job they count into, pacing.

    Attributes:
        index: the index the workers ingest into (None: their settings' own).
        on_done: hears each batch's outcomes as they come back.
        collect: keep every outcome for the return value (False for an archive of millions: read them in ``on_done``).
        max_in_flight: batches queued at a time (:func:`in_flight_batches`).
        store: the job store, with ``job_id``: the workers count each batch into the job once, under its key.
        job_id: the job the batches belong to.
        on_idle: called about every ``timing.check_every`` seconds (a progress display).
        on_wait: hears "waiting for Redis (N s)" while an outage lasts, and None when it is over.
        timing: polling, and how long a Redis outage is waited out (``Timing.max_outage``).
    """

    index: str | None = None
    on_done: Callable[[list[dict]], object] = _ignore
    collect: bool = True
    max_in_flight: int = 64
    store: JobStore | None = None
    job_id: str | None = None
    on_idle: Callable[[], None] | None = None
    on_wait: Callable[[str | None], None] | None = None
    timing: Timing = field(default_factory=Timing)


@dataclass
class _Batches(Work):
    """Batches of pages through the ``ingest_batch`` task, counted into a job when there is one."""

    app: Celery
    run: BatchRun
    outcomes: list[dict] = field(default_factory=list)

    def send(self, key: str, item: list[dict]) -> Any:
        run = self.run
        kwargs = {"job_id": run.job_id, "key": key} if run.store is not None and run.job_id is not None else {}
        return self.app.send_task(task_names.INGEST_BATCH, args=[item, run.index], kwargs=kwargs)

    def finished(self, key: str, item: list[dict], value: Any, error: BaseException | None) -> None:
        got = value
        if error is not None:
            got = failed_batch(item, error)
            store, job_id = self.run.store, self.run.job_id
            if store is not None and job_id is not None:  # tracked
                patiently(
                    lambda: store.record(job_id, key, got, payloads={str(p.get("id")): p for p in item}),
                    what=f"recording the failed batch {key}",
                )
        if self.run.collect:
            self.outcomes.extend(got)
        self.run.on_done(got)

    def alive(self, keys: list[str]) -> list[bool] | None:
        store, job_id = self.run.store, self.run.job_id
        if store is None or job_id is None:  # not tracked
            return None
        return store.alive(job_id, keys)

    def died(self, keys: list[str]) -> list[bool]:
        store, job_id = self.run.store, self.run.job_id
        if store is None or job_id is None:  # not tracked
            return [False] * len(keys)
        return store.died(job_id, keys)

    def idle(self) -> None:
        if self.run.on_idle is not None:
            self.run.on_idle()

    def waiting(self, message: str | None) -> None:
        if self.run.on_wait is not None:
            self.run.on_wait(message)


def run_batches(
    app: Celery, batches: Iterable[list[dict] | tuple[str, list[dict]]], run: BatchRun | None = None
) -> list[dict]:
    """Queue batches for the workers and collect one outcome per page (how: :class:`BatchRun`).

    ``batches`` may be a lazy iterator: at most ``run.max_in_flight`` batches are
    queued at a time, so an archive of millions of pages streams through in
    constant memory (``BatchRun(collect=False)``, outcomes consumed in
    ``on_done``). A batch whose task fails for good (for example Elasticsearch
    stayed down through all retries) yields a ``rejected`` outcome with reason
    ``failed`` for each of its pages, so nothing is silently dropped.

    With a job (``run.store`` and ``run.job_id``), batches are ``(key, pages)`` pairs
    (plain lists are numbered from 0): the workers count each batch into the
    job once under its key, the checkpoint a resumed run skips; a batch that
    failed for good is counted here, with its pages kept for a retry; and a
    batch whose worker died is sent again at once (see :func:`drive`).
    A Redis outage is waited out for up to ``run.timing.max_outage`` seconds
    (``on_wait`` hears "waiting for Redis" while it lasts).
    """
    run = BatchRun() if run is None else run
    work = _Batches(app, run)
    units = (batch if isinstance(batch, tuple) else (str(n), batch) for n, batch in enumerate(batches))
    drive(units, work, max_in_flight=run.max_in_flight, timing=run.timing)
    return work.outcomes
