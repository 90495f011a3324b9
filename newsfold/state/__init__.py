"""newsfold's state in Redis, in one place, every client from one factory.

- :mod:`newsfold.state.jobs`: bulk jobs (progress, checkpoints, failures),
  with the heartbeats of their units (:mod:`newsfold.state.heartbeats`), and
  the named locks a reindex takes;
- :mod:`newsfold.state.story_stats`: the collection's story frequencies (a
  count-min sketch) read by weighted signatures and the frequent-shingle filter;
- :mod:`newsfold.state.repeated_lines`: the lines each site carried per week
  (the Media Cloud boilerplate filter).

The core (``newsfold.plugin``) takes these objects as optional arguments and
never imports Redis; :func:`build_redis` is to Redis what
``newsfold.plugin.build_client`` is to Elasticsearch.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


def redis_down_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that mean "Redis cannot be reached right now" (wait and try again), not a bad request."""
    import redis.exceptions

    return (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, redis.exceptions.BusyLoadingError)


def patiently(call: Callable[[], T], *, what: str, attempts: int = 6, max_wait: float = 30.0) -> T:
    """``call()``, waiting out a Redis outage: on a connection error, wait (1, 2, 4 ... s) and call again.

    Args:
        call: the work; it must be safe to run again (newsfold's ingest and job records are).
        what: named in the log message ("the batch of 100 pages").
        attempts: calls before giving up (the last error is raised).
        max_wait: the longest single wait, in seconds.
    """
    down = redis_down_errors()
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except down as exc:
            if attempt == attempts:
                log.error("Redis is still unavailable after %d attempts at %s: %s", attempts, what, exc)
                raise
            wait = min(max_wait, 2.0 ** (attempt - 1))
            log.warning("Redis is unavailable (%s): waiting %.0f s before trying %s again", exc, wait, what)
            time.sleep(wait)
    raise AssertionError("unreachable")


def build_redis(url: str | None, *, timeout: float | None = None):
    """A ``redis.Redis`` client for ``url`` (``redis://[:password@]host:port/db``).

    Args:
        url: the Redis URL (``REDIS_URL``).
        timeout: connect and read timeout in seconds; None waits as long as
            the operating system does (workers and jobs), a small value fails
            fast (the web's login limiter and pages).

    Returns:
        The client; connections are made on first use.

    Raises:
        ValueError: no URL (``REDIS_URL`` is not set).
    """
    import redis

    if not url:
        raise ValueError("no Redis URL configured (set REDIS_URL)")

    if timeout is None:
        return redis.Redis.from_url(url, health_check_interval=30)
    return redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout, health_check_interval=30)
