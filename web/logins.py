"""Login state kept on the server: failed-login counters and open admin sessions.

Both live in Redis when the app has it (shared by every web process) and
fall back to this process when it has none or cannot reach it. The Redis
client is the app's own (``web.resources``), built with short timeouts: a
login or an admin page must not hang on a Redis that is down.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import threading
import time

import redis.exceptions

log = logging.getLogger(__name__)


class LoginLimiter:
    """Counts failed logins within a window and pauses guessing without locking the real user out.

    - per address and user name: ``max_failures`` failures pause logins for
      that name from that address;
    - per address: ``ADDRESS_FACTOR`` times as many failures (any names)
      pause every login from that address;
    - per user name, from any address: never a pause (an attacker could lock
      the admin out from everywhere), but each further attempt for the name
      is slowed down by up to ``MAX_SLOWDOWN`` seconds.

    The counters live in Redis (each expires ``window_seconds`` after its
    first failure). Without Redis, or while it cannot be reached, each
    process counts on its own.
    """

    MAX_LOCAL_KEYS = 10_000
    ADDRESS_FACTOR = 4
    MAX_SLOWDOWN = 1.0

    def __init__(self, *, max_failures: int, window_seconds: int, namespace: str, redis=None):
        self.max_failures = max_failures
        self.window_seconds = window_seconds
        self.namespace = namespace
        self._redis = redis
        self._local: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def _keys(self, ip: str, user: str) -> list[str]:
        """The counters of a login: (address, user), address, user; in that order."""
        # the user name is hashed: it is whatever a visitor typed
        user_hash = hashlib.sha256(user.strip().lower().encode("utf-8")).hexdigest()[:32]
        base = f"{self.namespace}:login-failures"
        return [f"{base}:pair:{ip}:{user_hash}", f"{base}:ip:{ip}", f"{base}:user:{user_hash}"]

    def _limits(self) -> list[int | None]:
        """The failures that pause logins, per counter of :meth:`_keys` (None: never a pause)."""
        return [self.max_failures, self.max_failures * self.ADDRESS_FACTOR, None]

    def _redis_failed(self, keys: list[str]) -> None:
        pipe = self._redis.pipeline(transaction=True)
        for key in keys:
            # SET NX EX starts a window only for a new counter; INCR keeps the expiry
            pipe.set(key, 0, ex=self.window_seconds, nx=True)
            pipe.incr(key)
        pipe.execute()

    def _redis_counts(self, keys: list[str]) -> list[tuple[int, int]]:
        pipe = self._redis.pipeline(transaction=False)
        for key in keys:
            pipe.get(key)
            pipe.ttl(key)
        values = pipe.execute()
        return [(int(count or 0), max(int(ttl), 1)) for count, ttl in zip(values[::2], values[1::2], strict=True)]

    def _local_counts(self, keys: list[str]) -> list[tuple[int, int]]:
        now = time.monotonic()
        with self._lock:
            found = [self._local.get(key, (0, 0.0)) for key in keys]
        return [(count if until > now else 0, max(int(until - now), 1)) for count, until in found]

    def _waits(self, counts: list[tuple[int, int]]) -> int | None:
        waits = [ttl for (count, ttl), limit in zip(counts, self._limits(), strict=True) if limit and count >= limit]
        return max(waits) if waits else None

    def _local_failed(self, keys: list[str]) -> None:
        now = time.monotonic()
        with self._lock:
            self._prune(now)
            for key in keys:
                count, until = self._local.get(key, (0, now + self.window_seconds))
                self._local[key] = (count + 1, until)

    def _prune(self, now: float) -> None:
        expired = [key for key, (_, until) in self._local.items() if until <= now]
        for key in expired:
            del self._local[key]
        while len(self._local) >= self.MAX_LOCAL_KEYS:  # bounded under a flood of addresses or names
            del self._local[next(iter(self._local))]

    def _call(self, remote, local, keys):
        if self._redis is not None:
            try:
                return remote(keys)
            except redis.exceptions.RedisError as exc:
                log.warning("failed-login counters fall back to this process: Redis error %s", exc)
        return local(keys)

    def wait_seconds(self, ip: str, user: str) -> int | None:
        """Seconds until a login for ``user`` from ``ip`` is accepted again; None when it is now."""
        return self._waits(self._call(self._redis_counts, self._local_counts, self._keys(ip, user)))

    def slowdown(self, ip: str, user: str) -> float:
        """Seconds to hold a login attempt for a user name that failed often from anywhere (0 usually)."""
        (count, _) = self._call(self._redis_counts, self._local_counts, self._keys(ip, user))[2]
        over = count - self.max_failures
        return min(self.MAX_SLOWDOWN, 0.1 * over) if over > 0 else 0.0

    def failed(self, ip: str, user: str) -> None:
        """Count one failed login from ``ip`` for ``user``."""
        self._call(self._redis_failed, self._local_failed, self._keys(ip, user))

    def succeeded(self, ip: str, user: str) -> None:
        """Forget the failures of ``ip`` for ``user`` after a successful login (the address's own stay)."""
        keys = self._keys(ip, user)[:1]

        def remote(keys):
            self._redis.delete(*keys)

        def local(keys):
            with self._lock:
                for key in keys:
                    self._local.pop(key, None)

        self._call(remote, local, keys)


class SessionStore:
    """Open admin sessions, kept on the server so a logout (or an expiry) ends them for every copy of the cookie.

    A login starts a session id with a time to live; each request renews it;
    logout deletes it. In Redis when the app has one (a Redis that cannot be
    reached ends sessions rather than trust a cookie), else in this process.
    """

    MAX_LOCAL = 10_000

    def __init__(self, *, namespace: str, redis=None) -> None:
        self.namespace = namespace
        self._redis = redis
        self._local: dict[str, float] = {}
        self._lock = threading.Lock()

    def _key(self, sid: str) -> str:
        return f"{self.namespace}:session:{sid}"

    def start(self, ttl: int) -> str:
        """A new session id, alive for ``ttl`` seconds without a request."""
        sid = secrets.token_urlsafe(24)
        if self._redis is not None:
            try:
                self._redis.set(self._key(sid), 1, ex=ttl)
                return sid
            except redis.exceptions.RedisError as exc:
                log.warning("sessions kept in this process: Redis error %s", exc)
        with self._lock:
            if len(self._local) >= self.MAX_LOCAL:
                now = time.monotonic()
                self._local = {k: v for k, v in self._local.items() if v > now}
            self._local[sid] = time.monotonic() + ttl
        return sid

    def alive(self, sid: str, ttl: int) -> bool:
        """Whether the session is open; renews it for ``ttl`` seconds when it is."""
        if not sid:
            return False
        if self._redis is not None:
            try:
                if self._redis.expire(self._key(sid), ttl):
                    return True
            except redis.exceptions.RedisError as exc:
                log.warning("cannot check an admin session in Redis: %s", exc)
        with self._lock:
            until = self._local.get(sid)
            if until is None or until <= time.monotonic():
                self._local.pop(sid, None)
                return False
            self._local[sid] = time.monotonic() + ttl
        return True

    def end(self, sid: str) -> None:
        """End a session (logout)."""
        if not sid:
            return
        if self._redis is not None:
            try:
                self._redis.delete(self._key(sid))
            except redis.exceptions.RedisError as exc:
                log.warning("cannot end an admin session in Redis: %s", exc)
        with self._lock:
            self._local.pop(sid, None)
