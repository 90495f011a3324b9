"""Pages that hang or kill a worker: the per-page time limit and crash attribution (real Redis and stand-in)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import pytest
import redis

from newsfold.indexer import pages, tasks
from newsfold.indexer.guard import MAX_DELIVERIES, CrashGuard, PageTimeout, batch_key, time_limit
from tests.pages import page, story
from tests.paths import TESTS


def test_time_limit_stops_a_busy_block_and_is_off_at_zero():
    started = time.monotonic()
    with pytest.raises(PageTimeout), time_limit(0.2):
        while True:
            pass
    assert time.monotonic() - started < 2
    with time_limit(0):
        time.sleep(0.05)  # no timer armed: nothing raised


def test_a_slow_page_is_rejected_and_the_batch_goes_on(settings, monkeypatch):
    real = pages.sign_page

    def slow_for_one(page, *args, **kwargs):
        if page.id == "slow":
            with contextlib.suppress(Exception):  # a library catching Exception must not swallow the timeout
                time.sleep(5)
        return real(page, *args, **kwargs)

    monkeypatch.setattr(pages, "sign_page", slow_for_one)
    payloads = [{"id": "slow", "html": page("Slow", story(1))}, {"id": "fine", "html": page("Fine", story(2))}]
    signed, rejected, _ = pages.sign_batch(payloads, settings.replace(page_timeout=0.3), stats=None)
    assert [p.page_id for p in signed] == ["fine"]
    assert [(o.page_id, o.reason) for o in rejected] == [("slow", "timeout")]
    assert "NEWSFOLD_PAGE_TIMEOUT" in rejected[0].detail


def test_crash_guard_names_the_page_a_dead_delivery_was_signing(redis_url):
    client = redis.Redis.from_url(redis_url)
    key = batch_key([{"id": "a"}, {"id": "b"}])
    assert key == batch_key([{"id": "a"}, {"id": "b"}]) != batch_key([{"id": "b"}, {"id": "a"}])
    first = CrashGuard(client, "guardtest", key)
    first.start()
    first.signing("a")  # first delivery: no note (costs nothing)
    assert first.delivery == 1 and client.get(first._current) is None
    second = CrashGuard(client, "guardtest", key)  # the first delivery's worker died
    second.start()
    second.signing("b")
    assert second.delivery == 2 and client.get(second._current) == b"b"
    third = CrashGuard(client, "guardtest", key)  # ... and so did the second's, while signing b
    third.start()
    assert third.delivery == 3 and third.culprits == {"b"}
    third.released()  # an error, not a crash: not counted
    fourth = CrashGuard(client, "guardtest", key)
    fourth.start()
    assert fourth.delivery == 3 and fourth.culprits == {"b"}  # culprits are remembered
    fourth.finish()
    assert not client.exists(fourth._count, fourth._current, fourth._culprits)


@pytest.fixture
def worker_env(settings, redis_url, es, monkeypatch):
    live = settings.replace(redis_url=redis_url)
    monkeypatch.setattr(tasks, "worker_settings", lambda: live)
    return live


def _payloads():
    return [
        {"id": f"g{i}", "html": page(f"Story {i}", story(300 + i)), "url": f"https://a.test/g{i}"} for i in range(3)
    ]


def test_a_redelivered_batch_skips_the_page_that_killed_its_worker(worker_env, es):
    live, payloads = worker_env, _payloads()
    guard = CrashGuard(redis.Redis.from_url(live.redis_url), live.index, batch_key(payloads))
    guard.start()
    guard.start()  # two deliveries so far; the second died while signing g1
    guard.signing("g1")
    got = {o["page_id"]: o for o in tasks.ingest_batch(payloads, live.index)}
    assert got["g1"]["status"] == "rejected" and got["g1"]["reason"] == "worker_crashed"
    assert got["g0"]["status"] == got["g2"]["status"] == "new"
    assert es.count(index=live.index)["count"] == 2
    assert not redis.Redis.from_url(live.redis_url).exists(guard._count)  # done: forgotten


def test_a_batch_that_keeps_killing_workers_is_rejected_whole(worker_env, es):
    live, payloads = worker_env, _payloads()
    guard = CrashGuard(redis.Redis.from_url(live.redis_url), live.index, batch_key(payloads))
    for _ in range(MAX_DELIVERIES - 1):
        guard.start()
    got = tasks.ingest_batch(payloads, live.index)
    assert {(o["status"], o["reason"]) for o in got} == {("rejected", "worker_crashed")} and len(got) == 3
    assert es.count(index=live.index)["count"] == 0


CRASHING_APP = TESTS / "crashing_worker.py"


def _own_database(redis_url: str, db: int) -> str:
    """A Redis database of the test's own (emptied): no other test's worker takes its batches."""
    url = redis_url.rsplit("/", 1)[0] + f"/{db}"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.mark.slow
def test_a_page_that_kills_real_workers_every_time_gets_an_outcome(settings, redis_url, es):
    """A prefork worker whose child dies on one page (os._exit): the batch comes back, the page is named."""
    from celery import Celery

    from newsfold.indexer.jobs.dispatch import BatchRun, run_batches
    from newsfold.plugin.settings import settings_env

    live = settings.replace(redis_url=_own_database(redis_url, 5))
    env = {**os.environ, **settings_env(live), "PYTHONPATH": str(CRASHING_APP.parent.parent)}
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.crashing_worker", "worker", "--pool=prefork",
         "--concurrency=1", f"--hostname=crashtest-{os.getpid()}@%h", "--loglevel=WARNING",
         "--without-gossip", "--without-mingle"],
        env=env,
    )  # fmt: skip
    try:
        app = Celery("newsfold", broker=live.redis_url, backend=live.redis_url)
        payloads = _payloads()
        payloads[1]["html"] = page("Poison", story(399)) + "<!-- CRASH-WORKER -->"
        started = time.monotonic()
        got = {o["page_id"]: o for o in run_batches(app, [payloads], BatchRun(index=live.index))}
        assert time.monotonic() - started < 120
        assert got["g1"]["reason"] == "worker_crashed"
        assert got["g0"]["status"] == got["g2"]["status"] == "new"
        assert worker.poll() is None  # the pool replaced its dead children
    finally:
        worker.terminate()
        worker.wait(20)


@pytest.mark.slow
def test_a_crashing_page_does_not_stall_a_job_on_local_solo_workers(settings, redis_url, es, monkeypatch):
    """``newsfold ingest``'s setup: solo workers (restarted when one dies) and a job whose heartbeats are watched."""
    from newsfold.indexer.celery_app import make_celery
    from newsfold.indexer.jobs.dispatch import BatchRun, run_batches
    from newsfold.state.jobs import JobStore
    from newsfold.workers import LocalWorkers

    monkeypatch.setenv("PYTHONPATH", str(CRASHING_APP.parent.parent))
    live = settings.replace(redis_url=_own_database(redis_url, 6), heartbeat_ttl=3.0)
    store = JobStore(redis.Redis.from_url(live.redis_url))
    job = store.create("ingest", params={"index": live.index})
    app = make_celery(live)
    payloads = _payloads()
    payloads[1]["html"] = page("Poison", story(399)) + "<!-- CRASH-WORKER -->"
    with LocalWorkers(live, 1, app_module="tests.crashing_worker") as workers:
        workers.wait_ready(app)
        got = {
            o["page_id"]: o
            for o in run_batches(app, [payloads], BatchRun(index=live.index, store=store, job_id=job.id))
        }
        assert workers.restarts >= 2  # the first two deliveries each took a worker down
    assert got["g1"]["reason"] == "worker_crashed"
    assert got["g0"]["status"] == got["g2"]["status"] == "new"
    assert store.get(job.id).done == 3
    total, failures = store.failures(job.id)
    assert total == 1 and failures[0]["reason"] == "worker_crashed" and failures[0]["retryable"]
