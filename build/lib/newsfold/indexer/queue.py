"""Feeding units of work to the Celery workers: a bounded number in flight, dead workers' units sent again.

Used by ``newsfold ingest``/``cluster`` (batches) and by the reindex
coordinator (chunks), in a plain process or inside a worker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


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
    ``on_idle`` runs about every ``check_every`` seconds (progress display).
    Each poll asks the result backend about every unit in flight, so the
    pause between polls doubles (from ``poll`` up to ``max_poll``) while
    nothing finishes: polling 64 units every 50 ms cost the coordinator
    5-12 ms of CPU per page and Redis as much again.
    """
    source = iter(items)
    pending: list[_Pending] = []
    exhausted = False
    next_check = time.monotonic() + check_every
    pause = poll
    while pending or not exhausted:
        while not exhausted and len(pending) < max_in_flight:
            unit = next(source, None)
            if unit is None:
                exhausted = True
                break
            key, item = unit
            pending.append(_Pending(key, item, send(key, item)))
        still = []
        for p in pending:
            if not p.result.ready():
                still.append(p)
                continue
            if p.result.successful():
                value, error = p.result.get(disable_sync_subtasks=False), None
            else:
                value, error = None, p.result.result
                if not isinstance(error, BaseException):
                    error = RuntimeError(str(error))
            p.result.forget()
            on_result(p.key, p.item, value, error)
        progressed = len(still) < len(pending)
        pending = still
        if time.monotonic() >= next_check:
            next_check = time.monotonic() + check_every
            if alive is not None and pending:
                _resend_dead(pending, send, alive)
            if on_idle is not None:
                on_idle()
        if progressed:
            pause = poll
        elif pending:
            time.sleep(pause)
            pause = min(max_poll, pause * 2)


def _resend_dead(pending: list[_Pending], send, alive) -> None:
    for p, is_alive in zip(pending, alive([p.key for p in pending]), strict=True):
        if is_alive:
            p.seen_alive = True
        elif p.seen_alive and not p.result.ready():
            log.warning("the worker running %s stopped answering; sending it again", p.key)
            p.result = send(p.key, p.item)
            p.seen_alive = False
