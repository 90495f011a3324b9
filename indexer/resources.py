"""What a worker process keeps: its settings (from the environment), and one client per server.

Cached per settings, so a batch never builds a client, and the pages of one
index share their Redis-backed stores (repeated lines, story statistics, the
job store).
"""

from __future__ import annotations

import os
from functools import lru_cache

from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout

from newsfold.indexer.presence import RedisPresence
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.index import ensure_index
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import uses_stats
from newsfold.state import build_redis, redis_down_errors
from newsfold.state.jobs import JobStore
from newsfold.state.repeated_lines import RepeatedLines
from newsfold.state.story_stats import StoryStats

TRANSIENT = (TransportConnectionError, ConnectionTimeout)


#: a server that cannot be reached: the batch waits or retries, never rejects its pages
UNREACHABLE: tuple[type[BaseException], ...] = (*TRANSIENT, *redis_down_errors())


@lru_cache(maxsize=1)
def worker_settings() -> Settings:
    return Settings.from_env()


@lru_cache(maxsize=8)
def client_for(settings: Settings):
    return build_client(settings)


@lru_cache(maxsize=8)
def repeated_lines_for(settings: Settings) -> RepeatedLines | None:
    if not (settings.repeated_lines and settings.redis_url):
        return None
    return RepeatedLines(build_redis(settings.redis_url), settings.index)


@lru_cache(maxsize=8)
def story_stats_for(settings: Settings) -> StoryStats | None:
    """The collection's story frequencies, when the signature settings read them."""
    if not (uses_stats(settings) and settings.redis_url):
        return None
    return StoryStats(build_redis(settings.redis_url), settings.index)


@lru_cache(maxsize=32)
def ensure_index_once(settings: Settings) -> bool:
    ensure_index(client_for(settings), settings, presence=presence_for(settings))
    return True


@lru_cache(maxsize=8)
def presence_for(settings: Settings) -> RedisPresence | None:
    """The band keys' presence filter (``NEWSFOLD_PRESENCE``), None when it is off or there is no Redis."""
    if not (settings.presence and settings.redis_url):
        return None
    return RedisPresence.for_settings(redis_for(settings), settings)


@lru_cache(maxsize=8)
def redis_for(settings: Settings):
    return build_redis(settings.redis_url)


@lru_cache(maxsize=8)
def job_store_for(settings: Settings) -> JobStore:
    return JobStore(redis_for(settings), heartbeat_ttl=settings.heartbeat_ttl)


def read_roots(settings: Settings) -> list[str]:
    """The folders a worker may read ``html_path`` files from: ``NEWSFOLD_READ_ROOTS`` and the archive folder."""
    roots = [r for r in (settings.read_roots or "").split(os.pathsep) if r.strip()]
    if settings.archive_dir:
        roots.append(settings.archive_dir)
    return roots
