"""newsfold's state in Redis, in one place, every client from one factory.

- :mod:`newsfold.state.jobs`: bulk jobs (progress, checkpoints, failures,
  heartbeats) and the named locks a reindex takes;
- :mod:`newsfold.state.story_stats`: the collection's story frequencies (a
  count-min sketch) read by weighted signatures and the frequent-shingle filter;
- :mod:`newsfold.state.repeated_lines`: the lines each site carried per week
  (the Media Cloud boilerplate filter).

The core (``newsfold.plugin``) takes these objects as optional arguments and
never imports Redis; :func:`build_redis` is to Redis what
``newsfold.plugin.build_client`` is to Elasticsearch.
"""

from __future__ import annotations


def build_redis(url: str, *, timeout: float | None = None):
    """A ``redis.Redis`` client for ``url`` (``redis://[:password@]host:port/db``).

    Args:
        url: the Redis URL (``REDIS_URL``).
        timeout: connect and read timeout in seconds; None waits as long as
            the operating system does (workers and jobs), a small value fails
            fast (the web's login limiter and pages).

    Returns:
        The client; connections are made on first use.
    """
    import redis

    if timeout is None:
        return redis.Redis.from_url(url, health_check_interval=30)
    return redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout, health_check_interval=30)
