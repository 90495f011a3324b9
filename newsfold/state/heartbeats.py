"""Heartbeats on the units of work of a job: which worker runs a batch or chunk now, and which died.

A worker keeps ``<job key>:alive:<unit>`` (value ``host:pid``) with a short
expiry while it runs a unit, and marks ``<job key>:started:<unit>`` when it
claims it; a coordinator reads them to send again the units whose worker
died (:meth:`Heartbeats.died`), and a second delivery of a unit waits while
the first is alive (:meth:`Heartbeats.claim`, :class:`UnitBusy`).
:class:`newsfold.state.jobs.JobStore` has these methods.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

from newsfold.state.job_records import RETENTION_SECONDS, text_of

HEARTBEAT_TTL = 10.0
HEARTBEAT_EVERY = 2.0


class Heartbeats:
    """The heartbeat methods of a job store; it provides ``redis``, ``heartbeat_ttl`` and the job keys."""

    redis: Any
    heartbeat_ttl: float

    def _key(self, job_id: str, part: str = "") -> str:
        raise NotImplementedError

    def beat(self, job_id: str, key: str, ttl: float | None = None) -> None:
        """Say that this process (``host:pid``, the value) is working on ``key`` for ``ttl`` seconds
        (default ``heartbeat_ttl``)."""
        ttl = ttl or self.heartbeat_ttl
        self.redis.set(self._key(job_id, f"alive:{key}"), f"{socket.gethostname()}:{os.getpid()}", px=int(ttl * 1000))

    def claim(self, job_id: str, key: str, ttl: float | None = None, *, delivery: str | None = None) -> str | None:
        """Start the heartbeat on ``key`` unless another delivery's heartbeat is current.

        Args:
            delivery: the task's id: a heartbeat an earlier try of the same
                task handed over (:meth:`hand_over`) is taken over, in any process.

        Returns:
            None when this process now holds ``key``, else the ``host:pid`` of the live holder.
        """
        ttl = ttl or self.heartbeat_ttl
        me = f"{socket.gethostname()}:{os.getpid()}"
        name = self._key(job_id, f"alive:{key}")
        started = self._key(job_id, f"started:{key}")
        if self.redis.set(name, me, px=int(ttl * 1000), nx=True):
            self.redis.set(started, me, ex=RETENTION_SECONDS)  # outlives the heartbeat: see died()
            return None
        holder = text_of(self.redis.get(name)) or None
        # expired meanwhile, this process's own (finished) delivery, or handed over by this task's earlier try
        if holder is None or holder == me or (delivery and holder == f"{_HANDED_OVER}{delivery}"):
            self.redis.set(name, me, px=int(ttl * 1000))
            self.redis.set(started, me, ex=RETENTION_SECONDS)
            return None
        return holder

    def hand_over(self, job_id: str, key: str, delivery: str) -> None:
        """Leave ``key``'s heartbeat to the next try of task ``delivery`` (a retry: same id, any process).

        Called when this try gives up for now and asks the broker to run the
        task again. The heartbeat stays current for one TTL, so the
        coordinator does not take the unit for dead, and no other delivery
        starts it; the retry, wherever it lands, claims it at once instead of
        waiting for it to expire.
        """
        name = self._key(job_id, f"alive:{key}")
        if text_of(self.redis.get(name)) == f"{socket.gethostname()}:{os.getpid()}":
            self.redis.set(name, f"{_HANDED_OVER}{delivery}", px=int(self.heartbeat_ttl * 1000))

    def died(self, job_id: str, keys: list[str]) -> list[bool]:
        """For each key, whether a delivery claimed it and its heartbeat is gone: its worker died.

        Answers True once per death (the mark is taken), so the coordinator
        sends the unit again once; the next delivery marks it again. Unlike
        watching ``alive``, this catches a worker that died before anyone saw
        its heartbeat.
        """
        if not keys:
            return []
        beating = self.alive(job_id, keys)
        pipe = self.redis.pipeline()
        for key, is_alive in zip(keys, beating, strict=True):
            if not is_alive:
                pipe.delete(self._key(job_id, f"started:{key}"))
        taken = iter(pipe.execute())
        return [False if is_alive else bool(next(taken)) for is_alive in beating]

    def workers(self, job_id: str) -> dict[str, str]:
        """``{key: "host:pid"}`` of the units being worked on now."""
        prefix = self._key(job_id, "alive:")
        keys = list(self.redis.scan_iter(match=prefix + "*", count=500))
        values = self.redis.mget(keys) if keys else []
        return {text_of(k)[len(prefix) :]: text_of(v) for k, v in zip(keys, values, strict=True) if v is not None}

    def alive(self, job_id: str, keys: list[str]) -> list[bool]:
        """For each key, whether a worker's heartbeat on it is current."""
        if not keys:
            return []
        pipe = self.redis.pipeline()
        for key in keys:
            pipe.exists(self._key(job_id, f"alive:{key}"))
        return [bool(n) for n in pipe.execute()]

    @contextlib.contextmanager
    def heartbeat(
        self, job_id: str, key: str, *, every: float | None = None, claim: bool = False, delivery: str | None = None
    ) -> Iterator[None]:
        """Keep a heartbeat on ``key`` while the block runs.

        The heartbeat is left to expire rather than deleted at the end: the
        task's result reaches the coordinator before it expires, so a missing
        heartbeat on an unfinished unit always means its worker died.

        With ``claim``, the block does not run while another delivery of the
        unit is alive (:class:`UnitBusy`): one live delivery at a time;
        ``delivery`` (the task's id) takes over what an earlier try handed over.
        """
        if claim:
            holder = self.claim(job_id, key, delivery=delivery)
            if holder is not None:
                raise UnitBusy(key, holder)
        stop = threading.Event()
        every = every or min(HEARTBEAT_EVERY, self.heartbeat_ttl / 5)

        def renew() -> None:
            while not stop.wait(every):
                with contextlib.suppress(Exception):  # a missed beat only risks a duplicate (idempotent) run
                    self.beat(job_id, key)

        if not claim:
            self.beat(job_id, key)
        thread = threading.Thread(target=renew, name=f"heartbeat-{key}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()


_HANDED_OVER = "handed-over:"  # the value of a heartbeat left to a task's next try


class UnitBusy(RuntimeError):
    """Another delivery of the same unit of work is running now (its heartbeat is current)."""

    def __init__(self, key: str, holder: str) -> None:
        super().__init__(f"{key} is being worked on by {holder}")
        self.holder = holder
