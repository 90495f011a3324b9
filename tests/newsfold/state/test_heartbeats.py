"""NEWSFOLD_HEARTBEAT_TTL: how long a worker's heartbeat on a unit of a job outlives its last renewal."""

from __future__ import annotations

import pytest
import redis

from newsfold.plugin.settings import Settings
from newsfold.state.jobs import JobStore


def test_workers_keep_their_heartbeats_for_the_configured_time(redis_url):
    from newsfold.indexer.resources import job_store_for

    settings = Settings.from_env({"REDIS_URL": redis_url, "NEWSFOLD_HEARTBEAT_TTL": "3"})
    store = job_store_for(settings)  # the job store a worker uses
    job = store.create("ingest", params={})
    with store.heartbeat(job.id, "b1", claim=True):
        ttl = store.redis.pttl(store._key(job.id, "alive:b1"))
    assert 2000 < ttl <= 3000
    default = JobStore(redis.Redis.from_url(redis_url))
    default.beat(job.id, "b2")
    assert 3000 < default.redis.pttl(default._key(job.id, "alive:b2")) <= 10_000
    default.redis.close()


def test_a_heartbeat_shorter_than_a_second_is_refused():
    with pytest.raises(ValueError, match="NEWSFOLD_HEARTBEAT_TTL|heartbeat_ttl"):
        Settings.from_env({"NEWSFOLD_HEARTBEAT_TTL": "0.2"})
