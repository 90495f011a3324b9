"""Readable messages for the failures an operator can fix (servers down, bad settings)."""

from __future__ import annotations

import sys


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


def exit_code(exc: BaseException, program: str) -> int:
    """A command's last word on an interrupt or a known failure: one line on stderr, and the exit code.

    Ctrl-C gives 130, a failure :func:`describe` knows gives 1; anything
    else is a bug and is raised again with its traceback.
    """
    if isinstance(exc, KeyboardInterrupt):
        print(f"{program}: interrupted", file=sys.stderr)
        return 130
    message = describe(exc)
    if message is None:
        raise exc
    print(f"{program}: {message}", file=sys.stderr)
    return 1


def check_servers(settings) -> None:
    """Fail fast, with a readable message, when Elasticsearch or Redis cannot be reached."""
    import redis
    from elasticsearch import Elasticsearch

    from newsfold.plugin.client import build_client
    from newsfold.state import build_redis

    # no retries, but every node of the list is tried once: a dead node first in the list is passed over
    nodes = [url for url in (settings.elasticsearch_url or "").split(",") if url.strip()]
    client: Elasticsearch = build_client(settings.replace(es_max_retries=max(0, len(nodes) - 1), es_timeout=10))
    try:
        client.indices.exists(index=settings.index)  # needs only the product's own index privileges
    except Exception as exc:
        message = describe(exc)
        raise RuntimeError(message or f"Elasticsearch at {settings.elasticsearch_url} failed: {exc}") from exc
    finally:
        client.close()
    try:
        build_redis(settings.redis_url, timeout=5.0).ping()
    except redis.RedisError as exc:
        raise RuntimeError(f"cannot reach Redis at {shown_url(settings.redis_url)} ({exc}); check REDIS_URL") from exc


def shown_url(url: str | None) -> str:
    """A server URL fit for messages and logs: any password replaced by ``***``."""
    from urllib.parse import urlsplit, urlunsplit

    if not url:
        return str(url)
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
