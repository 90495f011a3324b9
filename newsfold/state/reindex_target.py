"""The new index a running reindex builds, announced in Redis so live ingest writes there too.

The coordinator (``indexer.jobs.reindex``) announces its target and withdraws it when it stops; a worker
(``indexer.pages``) reads it before each batch. The announcement expires on its own when a coordinator dies.
"""

from __future__ import annotations

from typing import Any

from newsfold.state.job_records import text_of


def target_key(alias: str) -> str:
    """The key announcing a running reindex's new index to live ingest."""
    return f"newsfold:reindex:{alias}:target"


def announce_target(redis_client: Any, alias: str, target: str, *, ttl_ms: int) -> None:
    """Say that a reindex of ``alias`` builds ``target`` (kept ``ttl_ms`` unless announced again)."""
    redis_client.set(target_key(alias), target, px=ttl_ms)


def withdraw_target(redis_client: Any, alias: str) -> None:
    """No reindex of ``alias`` builds an index any more."""
    redis_client.delete(target_key(alias))


def live_target(redis_client: Any, alias: str) -> str | None:
    """The new index a running reindex of ``alias`` builds, or None."""
    value = redis_client.get(target_key(alias))
    return None if value is None else text_of(value)
