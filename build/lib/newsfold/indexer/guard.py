"""Pages that hang or kill a worker: a time limit per page, and crash attribution per batch.

A page whose extraction takes too long is stopped by a ``SIGALRM`` timer
(``NEWSFOLD_PAGE_TIMEOUT``) and rejected with reason ``timeout``; the batch
goes on. A page that kills the worker process itself (a parser crash, the
kernel's OOM killer) cannot be caught in that process. Celery delivers the
batch again (``acks_late`` with ``reject_on_worker_lost``, or the job
driver's heartbeat check), and :class:`CrashGuard` counts those deliveries
in Redis. From the second delivery on, the worker notes in Redis which page
it is signing before it starts on it; a later delivery that finds such a
note knows that page took its worker down, rejects it with reason
``worker_crashed`` and signs the rest. A batch that keeps killing workers
outside the signing step is rejected whole after ``MAX_DELIVERIES``
deliveries. Either way the pages get an outcome (retryable from the job)
and the batch stops coming back.

The normal path costs one Redis round trip per batch (the delivery count).
"""

from __future__ import annotations

import contextlib
import hashlib
import signal
import threading
from collections.abc import Iterator

MAX_DELIVERIES = 6  # a batch is rejected whole when it comes back this many times
TTL_SECONDS = 2 * 24 * 3600


class PageTimeout(BaseException):  # noqa: N818 - a BaseException, so no library's "except Exception" swallows it
    """Raised inside a page's extraction when its time is up."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`PageTimeout` in the block after ``seconds`` (no limit for 0, off the main thread or on Windows)."""
    usable = seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expired(signum, frame):
        raise PageTimeout(f"took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def batch_key(payloads: list[dict]) -> str:
    """A stable name for a batch without a job key: a hash of its pages' ids (or urls, or positions)."""
    digest = hashlib.sha1()
    for n, p in enumerate(payloads):
        digest.update(str(p.get("id") or p.get("url") or f"#{n}").encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()[:24]


class CrashGuard:
    """Delivery count and the page being signed, for one batch (see the module docstring)."""

    def __init__(self, redis_client, namespace: str, key: str) -> None:
        self.redis = redis_client
        base = f"newsfold:{namespace}:batch:{key}"
        self._count, self._current, self._culprits = f"{base}:deliveries", f"{base}:current", f"{base}:crashed"
        self.delivery = 1
        self.culprits: set[str] = set()

    def start(self) -> None:
        """Count this delivery; a page noted by a delivery that died becomes a culprit."""
        pipe = self.redis.pipeline()
        pipe.incr(self._count)
        pipe.expire(self._count, TTL_SECONDS)
        pipe.getdel(self._current)
        pipe.smembers(self._culprits)
        delivery, _, current, culprits = pipe.execute()
        self.delivery = int(delivery)
        self.culprits = {c.decode() if isinstance(c, bytes) else str(c) for c in culprits or ()}
        if current is not None:
            page = current.decode() if isinstance(current, bytes) else str(current)
            self.culprits.add(page)
            pipe = self.redis.pipeline()
            pipe.sadd(self._culprits, page)
            pipe.expire(self._culprits, TTL_SECONDS)
            pipe.execute()

    @property
    def exhausted(self) -> bool:
        """True when the batch has come back too often: reject it whole."""
        return self.delivery >= MAX_DELIVERIES

    def signing(self, page_id: str) -> None:
        """Note the page about to be signed (only on a redelivery: a first delivery pays nothing)."""
        if self.delivery > 1:
            self.redis.set(self._current, page_id, ex=TTL_SECONDS)

    def signed(self) -> None:
        """The signing step is over (a crash after this point blames no page)."""
        if self.delivery > 1:
            self.redis.delete(self._current)

    def released(self) -> None:
        """This delivery ended in an error, not a crash: do not count it."""
        pipe = self.redis.pipeline()
        pipe.decr(self._count)
        pipe.delete(self._current)
        pipe.execute()

    def finish(self) -> None:
        """The batch is done: forget it."""
        self.redis.delete(self._count, self._current, self._culprits)
