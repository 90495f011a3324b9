"""Readable messages for the failures an operator can fix (servers down, bad settings)."""

from __future__ import annotations


def describe(exc: BaseException) -> str | None:
    """A one-line explanation for a known failure, or None for a bug (re-raised)."""
    from elastic_transport import ConnectionError as TransportConnectionError
    from elastic_transport import ConnectionTimeout
    from kombu.exceptions import OperationalError
    from redis.exceptions import ConnectionError as RedisConnectionError

    if isinstance(exc, ConnectionTimeout | TransportConnectionError):
        return f"cannot reach Elasticsearch ({exc}); check ELASTICSEARCH_URL and that the cluster is up"
    if isinstance(exc, OperationalError | RedisConnectionError):
        return f"cannot reach Redis ({exc}); check REDIS_URL and that Redis is up"
    if isinstance(exc, RuntimeError | FileNotFoundError):
        return str(exc)
    return None
