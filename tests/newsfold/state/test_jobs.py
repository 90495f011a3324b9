"""JobStore and RedisLock against a real Redis."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid

import pytest
import redis

from newsfold.state.job_records import Job
from newsfold.state.jobs import MAX_RETRY_PAYLOAD, JobStore
from newsfold.state.locks import LockBusy, RedisLock


@pytest.fixture
def store(redis_url):
    client = redis.Redis.from_url(redis_url)
    yield JobStore(client, namespace=f"test-{uuid.uuid4().hex[:10]}")
    client.close()


def _outcomes(*pairs):
    return [
        {"page_id": pid, "status": status, **({"reason": reason, "detail": "why"} if reason else {})}
        for pid, status, reason in pairs
    ]


def test_create_get_and_list_newest_first(store):
    first = store.create("ingest", params={"sources": ["/data/a.jsonl"]}, total=10)
    time.sleep(0.01)
    second = store.create("reindex", params={"source": "text", "user": "ed"})
    assert (first.kind, first.status, first.total, first.done) == ("ingest", "queued", 10, 0)
    assert first.counts == {"new": 0, "duplicate": 0, "merged": 0, "updated": 0, "unchanged": 0, "rejected": 0}
    assert store.get(second.id).params == {"source": "text", "user": "ed"}
    assert store.get("nope") is None
    total, jobs = store.list(offset=0, limit=1)
    assert total == 2 and [j.id for j in jobs] == [second.id]
    assert [j.id for j in store.list(offset=1, limit=5)[1]] == [first.id]
    with pytest.raises(ValueError, match="kind must be one of"):
        store.create("backup", params={})


def test_record_counts_each_batch_once_and_keeps_retryable_failures(store):
    job = store.create("ingest", params={}, total=5)
    store.start(job.id)
    outcomes = _outcomes(
        ("a", "new", None),
        ("b", "duplicate", None),
        ("c", "rejected", "too_short"),
        ("d", "rejected", "failed"),
        ("e", "rejected", "failed"),
    )
    payloads = {
        "c": {"id": "c", "html": "x"},
        "d": {"id": "d", "html": "y"},
        "e": {"id": "e", "html": "z" * MAX_RETRY_PAYLOAD},
    }
    assert store.record(job.id, "0", outcomes, payloads=payloads) is True
    assert store.record(job.id, "0", outcomes, payloads=payloads) is False  # a redelivered batch
    got = store.get(job.id)
    assert got.done == 5
    assert got.counts == {"new": 1, "duplicate": 1, "merged": 0, "updated": 0, "unchanged": 0, "rejected": 3}
    assert got.rejected == {"failed": 2, "too_short": 1}
    assert store.recorded(job.id) == {"0"} and store.is_recorded(job.id, "0")
    total, failures = store.failures(job.id)
    assert total == 3
    by_item = {f["item"]: f for f in failures}
    assert [f["item"] for f in failures] == ["c", "d", "e"]
    assert by_item["c"]["retryable"] is False  # a content reason: a retry gives the same answer
    assert by_item["d"]["retryable"] is True and by_item["d"]["detail"] == "why"
    assert by_item["e"]["retryable"] is False  # too big to keep for a retry
    assert store.retryable_count(job.id) == 1
    assert store.failures(job.id, offset=1, limit=1)[1][0]["item"] == "d"


def test_take_retryable_removes_failures_and_their_counts(store):
    job = store.create("ingest", params={})
    store.record(
        job.id,
        "0",
        _outcomes(("a", "new", None), ("d", "rejected", "failed"), ("c", "rejected", "empty")),
        payloads={"d": {"id": "d", "html": "y"}},
    )
    assert store.take_retryable(job.id) == [{"id": "d", "html": "y"}]
    got = store.get(job.id)
    assert (got.done, got.counts["rejected"], got.rejected) == (2, 1, {"empty": 1})
    assert [f["item"] for f in store.failures(job.id)[1]] == ["c"]
    assert store.take_retryable(job.id) == []
    store.record(job.id, "retry-0", _outcomes(("d", "new", None)))
    assert store.get(job.id).counts["new"] == 2


def test_many_workers_update_one_job_atomically(store, redis_url):
    job = store.create("ingest", params={})

    def worker(w: int) -> None:
        mine = JobStore(redis.Redis.from_url(redis_url), namespace=store.namespace)
        for b in range(40):
            outcomes = _outcomes((f"{w}-{b}-a", "new", None), (f"{w}-{b}-b", "rejected", "empty"))
            mine.record(job.id, f"{b}", outcomes)  # every worker records the same keys: each counts once
            mine.record(job.id, f"w{w}-{b}", outcomes)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = store.get(job.id)
    assert got.done == (40 + 6 * 40) * 2
    assert got.counts["new"] == got.counts["rejected"] == 40 + 6 * 40
    assert len(store.recorded(job.id)) == 40 + 6 * 40


def test_active_start_finish_and_reset(store):
    job = store.create("reindex", params={"index": "a"})
    other = store.create("reindex", params={"index": "b"})
    assert store.active("reindex").id == job.id  # the oldest
    assert store.active("reindex", index="b").id == other.id
    assert store.active("ingest") is None
    store.start(job.id)
    store.record(job.id, "t0", _outcomes(("a", "new", None)))
    store.finish(job.id, "cancelled", message="interrupted")
    got = store.get(job.id)
    assert (got.status, got.message) == ("cancelled", "interrupted") and got.finished
    assert store.active("reindex", index="a") is None
    assert 0 < store.redis.ttl(f"{store.namespace}:job:{job.id}") <= 30 * 24 * 3600
    store.start(job.id)  # resumed: running again, kept for good
    assert store.get(job.id).status == "running" and store.get(job.id).finished is None
    assert store.redis.ttl(f"{store.namespace}:job:{job.id}") == -1
    store.reset_progress(job.id)
    got = store.get(job.id)
    assert (got.done, got.counts["new"], store.recorded(job.id)) == (0, 0, set())
    with pytest.raises(ValueError):
        store.finish(job.id, "running")


def test_state_and_heartbeats(store):
    job = store.create("reindex", params={})
    store.set_state(job.id, target="x-1", old="x-0")
    store.set_state(job.id, old=None)
    assert store.state(job.id) == {"target": "x-1"}
    store.beat(job.id, "c1", ttl=0.3)
    assert store.alive(job.id, ["c1", "c2"]) == [True, False]
    time.sleep(0.4)
    assert store.alive(job.id, ["c1"]) == [False]
    with store.heartbeat(job.id, "c3", every=0.1):
        time.sleep(0.3)
        assert store.alive(job.id, ["c3"]) == [True]


def test_rate_and_eta():
    start = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=10)
    job = Job(
        id="j",
        kind="ingest",
        status="running",
        created=start.isoformat(),
        updated=start.isoformat(),
        finished=None,
        total=300,
        done=100,
        counts={},
        rejected={},
        params={},
        message=None,
        started=start.isoformat(),
    )
    assert job.rate() == pytest.approx(10, rel=0.05)
    assert job.eta_seconds() == pytest.approx(20, rel=0.05)
    data = job.as_dict()
    assert data["rate"] == pytest.approx(10, rel=0.05) and data["eta_seconds"] == pytest.approx(20, rel=0.05)
    job.status, job.finished = "done", (start + dt.timedelta(seconds=20)).isoformat()
    assert job.rate() == pytest.approx(5) and job.eta_seconds() is None
    job.done = 0
    assert job.rate() is None


def test_lock_refuses_a_second_owner_and_is_renewed(redis_url):
    client = redis.Redis.from_url(redis_url)
    name = f"test-lock-{uuid.uuid4().hex[:8]}"
    first = RedisLock(client, name, "job-1", ttl=0.6)
    first.acquire()
    try:
        time.sleep(1.0)  # longer than the ttl: the renewal keeps it
        assert first.held()
        with pytest.raises(LockBusy) as busy:
            RedisLock(client, name, "job-2", ttl=0.6).acquire(wait=0.3, poll=0.05)
        assert busy.value.holder == "job-1"
    finally:
        first.release()
    second = RedisLock(client, name, "job-2", ttl=0.6)
    second.acquire()
    first.release()  # not ours any more: leaves job-2's lock alone
    assert second.held()
    second.release()
    assert client.get(name) is None
    client.close()


def test_an_abandoned_lock_expires(redis_url):
    client = redis.Redis.from_url(redis_url)
    name = f"test-lock-{uuid.uuid4().hex[:8]}"
    client.set(name, "dead-coordinator", px=400)  # its owner died without releasing
    lock = RedisLock(client, name, "job-2", ttl=5)
    lock.acquire(wait=2, poll=0.05)
    assert lock.held()
    lock.release()
    client.close()


def test_one_live_delivery_of_a_batch_at_a_time(store):
    from newsfold.state.heartbeats import UnitBusy

    job = store.create("ingest", params={})
    # another worker process is on batch 7 (its heartbeat is current)
    store.redis.set(store._key(job.id, "alive:7"), "otherhost:4242", px=10_000)
    with pytest.raises(UnitBusy, match="otherhost:4242"), store.heartbeat(job.id, "7", claim=True):
        raise AssertionError("a second delivery must not run while the first is alive")
    assert store.claim(job.id, "8") is None  # a free batch is claimed
    with store.heartbeat(job.id, "8", claim=True):  # this process's own heartbeat does not block it
        assert store.alive(job.id, ["8"]) == [True]
    store.redis.delete(store._key(job.id, "alive:7"))  # the other delivery's heartbeat expired: its worker died
    with store.heartbeat(job.id, "7", claim=True):
        assert store.workers(job.id)["7"].endswith(f":{__import__('os').getpid()}")


def test_a_retry_takes_over_the_batch_its_earlier_try_handed_over(store):
    # a try that waits for Elasticsearch asks the broker for a retry, which may land in another worker
    # process: it must not wait a heartbeat TTL against the heartbeat its own earlier try left behind
    job = store.create("ingest", params={})
    store.redis.set(store._key(job.id, "alive:6"), "otherhost:4242", px=10_000)
    store.hand_over(job.id, "6", "task-1")  # only the holder itself hands over
    assert store.claim(job.id, "6", delivery="task-1") == "otherhost:4242"
    assert store.claim(job.id, "5") is None  # this process runs batch 5 as task-1 ...
    store.hand_over(job.id, "5", "task-1")  # ... which retries later
    assert store.alive(job.id, ["5"]) == [True]  # still current: the coordinator does not send the batch again
    assert store.claim(job.id, "5", delivery="task-2") is not None  # another delivery still waits
    assert store.claim(job.id, "5") is not None
    assert store.claim(job.id, "5", delivery="task-1") is None  # the retry, in any process, takes it at once
    assert store.workers(job.id)["5"].endswith(f":{__import__('os').getpid()}")


def test_a_delivery_that_died_is_reported_once_even_if_never_seen_alive(store):
    job = store.create("ingest", params={})
    assert store.claim(job.id, "3") is None  # a worker takes batch 3 ...
    assert store.died(job.id, ["3"]) == [False]  # ... and is working on it
    store.redis.delete(store._key(job.id, "alive:3"))  # ... then dies: its heartbeat expires
    assert store.died(job.id, ["3", "4"]) == [True, False]  # 4 was never started: not dead, just queued
    assert store.died(job.id, ["3"]) == [False]  # once: the coordinator sends it again once
