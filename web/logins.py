"""Login state kept on the server: failed-login counters, open admin sessions, API token revocations and uses.

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


class TokenStore:
    """The API tokens' state kept on the server: which are revoked and when each was last used.

    The tokens themselves are configured (``NEWSFOLD_API_TOKEN_HASHES``); an admin revokes one from
    ``/admin/tokens`` and it is refused from then on, by every web process (the revocations live in Redis,
    with this process's own as a fallback while Redis cannot be reached). Removing the entry from the
    setting is what revokes it for good: a Redis that loses its data forgets the revocations.
    """

    #: seconds between two writes of one token's last use by this process
    USE_RESOLUTION = 30.0

    def __init__(self, *, namespace: str, redis=None) -> None:
        self._revoked_key = f"{namespace}:api-tokens:revoked"
        self._used_key = f"{namespace}:api-tokens:last-use"
        self._redis = redis
        self._revoked: set[str] = set()
        self._used: dict[str, float] = {}
        self._written: dict[str, float] = {}
        self._lock = threading.Lock()

    def _try(self, what: str, call):
        if self._redis is None:
            return None
        try:
            return call(self._redis)
        except redis.exceptions.RedisError as exc:
            log.warning("API tokens: cannot %s in Redis (this process's own state is used): %s", what, exc)
            return None

    def revoke(self, digest: str) -> None:
        """Refuse the token of ``digest`` from now on."""
        with self._lock:
            self._revoked.add(digest)
        self._try("record a revocation", lambda r: r.sadd(self._revoked_key, digest))

    def revoked(self) -> set[str]:
        """The digests of the revoked tokens."""
        found = self._try("read the revocations", lambda r: r.smembers(self._revoked_key)) or set()
        with self._lock:
            return self._revoked | {d.decode() if isinstance(d, bytes) else str(d) for d in found}

    def is_revoked(self, digest: str) -> bool:
        """Whether the token of ``digest`` was revoked."""
        with self._lock:
            if digest in self._revoked:
                return True
        return bool(self._try("read the revocations", lambda r: r.sismember(self._revoked_key, digest)))

    def used(self, digest: str) -> None:
        """Note a use of the token of ``digest`` now (written at most every ``USE_RESOLUTION`` seconds)."""
        now = time.time()
        with self._lock:
            self._used[digest] = now
            if now - self._written.get(digest, 0.0) < self.USE_RESOLUTION:
                return
            self._written[digest] = now
        self._try("record a token's use", lambda r: r.hset(self._used_key, digest, f"{now:.0f}"))

    def last_uses(self) -> dict[str, float]:
        """``{digest: epoch seconds}`` of the tokens used since Redis (or this process) started keeping them."""
        found = self._try("read the tokens' last uses", lambda r: r.hgetall(self._used_key)) or {}
        uses = {(k.decode() if isinstance(k, bytes) else str(k)): float(v) for k, v in found.items()}
        with self._lock:
            for digest, at in self._used.items():
                uses[digest] = max(at, uses.get(digest, 0.0))
        return uses
