"""A lock in Redis that renews itself while held (one reindex per alias, one coordinator per job)."""

from __future__ import annotations

import contextlib
import threading
import time

from newsfold.state.job_records import text_of

_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"


class LockBusy(RuntimeError):
    """The lock is held by someone else."""

    def __init__(self, name: str, holder: str) -> None:
        super().__init__(f"{name} is held by {holder}")
        self.holder = holder


class RedisLock:
    """A lock in Redis with an expiry, renewed in the background while held.

    The owner string is the value; renew and release only act when the
    value is still ours, so an expired lock taken over by someone else is
    never released by the old owner.
    """

    def __init__(self, redis_client, name: str, owner: str, *, ttl: float = 30.0) -> None:
        self.redis = redis_client
        self.name = name
        self.owner = owner
        self.ttl = ttl
        self._release = redis_client.register_script(_RELEASE)
        self._renew = redis_client.register_script(_RENEW)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False

    def holder(self) -> str | None:
        return text_of(self.redis.get(self.name))

    def acquire(self, *, wait: float = 0.0, poll: float = 0.5) -> None:
        """Take the lock, waiting up to ``wait`` seconds; renew it every ``ttl / 3`` seconds.

        Raises:
            LockBusy: another owner still holds it after ``wait``.
        """
        deadline = time.monotonic() + wait
        while not self.redis.set(self.name, self.owner, nx=True, px=int(self.ttl * 1000)):
            holder = self.holder()
            if time.monotonic() >= deadline:
                raise LockBusy(self.name, holder or "someone")
            time.sleep(poll)
        self._stop.clear()
        self.lost = False
        self._thread = threading.Thread(target=self._keep, name=f"lock-{self.name}", daemon=True)
        self._thread.start()

    def _keep(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                if not self._renew(keys=[self.name], args=[self.owner, int(self.ttl * 1000)]):
                    self.lost = True
                    return
            except Exception:  # Redis away for a moment: the next renewal may still make it
                continue

    def held(self) -> bool:
        """Whether we still hold the lock (checked in Redis)."""
        return not self.lost and self.holder() == self.owner

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with contextlib.suppress(Exception):
            self._release(keys=[self.name], args=[self.owner])
