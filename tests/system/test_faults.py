"""Fault tests: a server or a process goes away in the middle of a job; every page still ends with exactly one outcome.

Each fault runs ``newsfold ingest`` over one shared corpus against the
session's Elasticsearch (a real node with ``--backend elasticsearch``, where
searches see writes only after a refresh; else the stand-in), and
its result is compared with one undisturbed run of the same corpus (made once
for the module): every page reported once with the same rejections, every page
indexed once, the same clusters.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from newsfold.embedded import EmbeddedRedis
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.index import drop_index
from newsfold.plugin.settings import Settings
from newsfold.samples import generate
from newsfold.state import build_redis
from newsfold.state.jobs import JobStore
from tests.waits import wait_until

pytestmark = pytest.mark.slow

BATCH_SIZE = 4
#: a dead worker's batch is sent again this long after its last heartbeat (10 s by default)
HEARTBEAT_TTL = 3


# ---------------------------------------------------------------- the corpus and its undisturbed run
@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """One generated corpus for every fault (28 pages: copies of 10 stories, an empty page, a non-HTML one)."""
    return generate(tmp_path_factory.mktemp("corpus"), seed=13, stories=10)


@pytest.fixture(scope="module")
def calm(corpus, es_url, tmp_path_factory):
    """The undisturbed run of the corpus: its outcomes and its clusters."""
    out = tmp_path_factory.mktemp("calm") / "calm.jsonl"
    index = f"calm-{uuid.uuid4().hex[:12]}"
    server = EmbeddedRedis()
    try:
        _finish(_ingest(corpus, out, es_url=es_url, redis_url=server.url, index=index), out)
    finally:
        server.close()
    client = build_client(Settings(elasticsearch_url=es_url))
    clusters = _clusters(client, index)
    drop_index(client, Settings(elasticsearch_url=es_url, index=index))
    client.close()
    return _lines(out), clusters


@pytest.fixture
def target(settings):
    """Where a fault run writes: the session's Elasticsearch (its index is deleted afterwards)."""
    client = build_client(settings)
    yield settings.elasticsearch_url, client
    drop_index(client, settings)  # by name: Elasticsearch refuses wildcard deletes (destructive_requires_name)
    client.close()


# ---------------------------------------------------------------- helpers
def _ingest(pages: Path | None, out: Path, *, es_url: str, redis_url: str, index: str, resume: str | None = None,
            workers: int = 2, **env_extra: str) -> subprocess.Popen:
    """Start ``newsfold ingest`` in a process group of its own; what it prints goes to ``<out>.err``."""
    args = [str(pages)] if pages else []
    if resume:
        args += ["--resume", resume]
    with out.with_suffix(".err").open("w") as err:  # a file, not a pipe: nobody reads until the run ends
        return subprocess.Popen(
            [sys.executable, "-m", "newsfold.cli", "ingest", *args, "--out", str(out), "--workers", str(workers)],
            env=_env(es_url, redis_url, index, **env_extra), stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True,
        )


def _env(es_url: str, redis_url: str, index: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEWSFOLD_")}
    env.update(ELASTICSEARCH_URL=es_url, REDIS_URL=redis_url, NEWSFOLD_INDEX=index,
               NEWSFOLD_BATCH_SIZE=str(BATCH_SIZE), NEWSFOLD_OUTAGE_WAIT="60",
               NEWSFOLD_HEARTBEAT_TTL=str(HEARTBEAT_TTL), **extra)
    return env


def _finish(run: subprocess.Popen, out: Path, timeout: float = 240) -> str:
    """Wait for a run to end with rc 0; on a hang, stop its process group and fail with what it printed."""
    try:
        run.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
        pytest.fail(f"the run did not end within {timeout:.0f} s; it printed:\n{_printed(out)[-4000:]}")
    assert run.returncode == 0, _printed(out)[-3000:]
    return _printed(out)


def _printed(out: Path) -> str:
    return out.with_suffix(".err").read_text(errors="replace")


def _wait_for_progress(redis_url: str, run: subprocess.Popen, timeout: float = 120) -> tuple[JobStore, str]:
    """The run's job, once its first batch is counted and the run still goes on: where a fault strikes.

    Counted in the job, not in the run's printed lines, which lag its workers: on the stand-in, the workers could
    be done with all 28 pages by the time the eighth line showed."""
    store, job = _job(redis_url)
    assert wait_until(lambda: store.get(job).done >= BATCH_SIZE or run.poll() is not None, timeout=timeout)
    assert run.poll() is None, "the run ended before the fault"
    return store, job


def _stop(*runs: subprocess.Popen | None) -> None:
    """Kill what is left of runs a failed test leaves behind (their process groups), so none outlives its test."""
    for run in runs:
        if run is not None and run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(timeout=30)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _page(outcome: dict) -> str:
    return outcome.get("page_id") or outcome.get("origin")


def _clusters(es, index: str) -> set[frozenset[str]]:
    res = es.search(index=index, size=1000, source=["newsfold.cluster_id"], query={"match_all": {}})
    groups: dict[str, set[str]] = {}
    for hit in res["hits"]["hits"]:
        groups.setdefault(hit["_source"]["newsfold"]["cluster_id"], set()).add(hit["_id"])
    return {frozenset(g) for g in groups.values()}


def _assert_as_undisturbed(out: Path, calm, es, index: str, store: JobStore, job: str) -> None:
    """One line per page, the undisturbed run's rejections and no others, every page indexed once, same clusters;
    the job lists no indexed page among its failures."""
    calm_outcomes, calm_clusters = calm
    outcomes = _lines(out)
    pages = sorted(_page(o) for o in outcomes)
    assert len(pages) == len(set(pages)), "a page was reported twice"
    assert pages == sorted(_page(o) for o in calm_outcomes)
    rejected = {_page(o): o.get("reason") for o in outcomes if o["status"] == "rejected"}
    assert rejected == {_page(o): o.get("reason") for o in calm_outcomes if o["status"] == "rejected"}
    es.indices.refresh(index=index)
    indexed = {page for cluster in _clusters(es, index) for page in cluster}
    assert not indexed & set(rejected), "a page is both indexed and reported rejected"
    _, failures = store.failures(job, limit=1000)
    assert {f["item"]: f["reason"] for f in failures} == rejected
    assert es.count(index=index)["count"] == sum(len(c) for c in calm_clusters)  # each page once
    assert _clusters(es, index) == calm_clusters


def _job(redis_url: str) -> tuple[JobStore, str]:
    """The run's job (each fault has a Redis of its own, so it is the only one)."""
    store = JobStore(build_redis(redis_url))
    assert wait_until(lambda: store.list()[0] > 0, timeout=60)
    return store, store.list()[1][0].id


def _children(parent: int) -> set[int]:
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                pids.add(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _kill_a_busy_worker(store: JobStore, job_id: str, candidates, *, when=lambda: True, pause: int = 0) -> str:
    """SIGKILL a process among ``candidates()`` holding the heartbeat of a batch not yet done, as soon as ``when()``
    holds too; returns the batch's key. With ``pause``, that process is stopped (SIGSTOP) just before the kill."""
    busy: dict[str, int] = {}

    def signal_all(pids, sig) -> None:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def find() -> bool:
        if not when():
            return False
        pids = candidates()
        # the candidates are held still while looking: a batch on the stand-in can take less than a poll, and
        # the rest of a run ended between two looks
        signal_all(pids, signal.SIGSTOP)
        try:
            for key, where in store.workers(job_id).items():
                pid = int(where.rsplit(":", 1)[1])
                if pid in pids and not store.is_recorded(job_id, key):
                    busy[key] = pid
                    return True
            return False
        finally:
            signal_all([p for p in pids if p not in busy.values()], signal.SIGCONT)

    assert wait_until(find, timeout=60), "no worker was seen busy with a batch"
    key, pid = next(iter(busy.items()))
    if pause:
        os.kill(pause, signal.SIGSTOP)
    os.kill(pid, signal.SIGKILL)  # mid-batch, no cleanup: the batch must be done again, by one delivery
    return key


# ---------------------------------------------------------------- the faults
def test_a_redis_restart_during_ingest_loses_nothing(tmp_path, settings, corpus, calm, target):
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()  # persistent: its append-only file survives the restart
    run = None
    try:
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index)
        _wait_for_progress(redis.url, run)
        redis.restart(down_seconds=2.0)
        _finish(run, out)
        _assert_as_undisturbed(out, calm, es, settings.index, *_job(redis.url))
    finally:
        _stop(run)
        redis.close()


def test_elasticsearch_paused_past_the_client_timeout_loses_nothing(tmp_path, settings, corpus, calm, target,
                                                                    es_server):
    """SIGSTOP of the server process (sockets open, nothing answered) until a request has outwaited the client's
    timeout and its batch was sent again; then the server goes on."""
    if es_server.pid is None:
        pytest.skip("the cluster at ELASTICSEARCH_URL is not a process of this run: it cannot be paused")
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()
    run = None
    try:
        # no client-side retry: the timed-out request fails the batch, which the broker retries with backoff
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index,
                      NEWSFOLD_ES_TIMEOUT="2", NEWSFOLD_ES_MAX_RETRIES="0", NEWSFOLD_TASK_RETRIES="8")
        _wait_for_progress(redis.url, run)
        es_server.pause()
        try:
            timed_out = wait_until(lambda: "Elasticsearch unavailable" in _printed(out), timeout=60)
        finally:
            es_server.resume()
        assert timed_out, "no request outwaited the client's timeout while the server was paused"
        _finish(run, out)
        _assert_as_undisturbed(out, calm, es, settings.index, *_job(redis.url))
    finally:
        _stop(run)
        redis.close()


def test_a_killed_coordinator_resumes_and_every_page_is_indexed_once(tmp_path, settings, corpus, calm, target):
    es_url, es = target
    redis = EmbeddedRedis()
    first = None
    try:
        first = _ingest(corpus, tmp_path / "first.jsonl", es_url=es_url, redis_url=redis.url, index=settings.index)
        store, job = _wait_for_progress(redis.url, first)
        os.killpg(first.pid, signal.SIGKILL)  # the coordinator and its local workers, no cleanup
        first.wait(timeout=60)
        assert store.get(job).status == "running"  # as a killed coordinator leaves it
        assert store.get(job).done < len(calm[0]), "the job was done before the kill"
        out = tmp_path / "second.jsonl"
        _finish(_ingest(None, out, es_url=es_url, redis_url=redis.url, index=settings.index, resume=job), out)
        # the resumed run reports every page, the batches the first run finished included (from the job's records)
        _assert_as_undisturbed(out, calm, es, settings.index, store, job)
    finally:
        _stop(first)
        redis.close()


def test_a_killed_worker_loses_nothing(tmp_path, settings, corpus, calm, target):
    """One of ``newsfold ingest``'s solo workers killed mid-batch (its supervisor starts another)."""
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()
    run = None
    try:
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index)
        # looked for from the start: on the stand-in, a wait for progress first could outlast the whole run
        store, job = _job(redis.url)
        _kill_a_busy_worker(store, job, lambda: _children(run.pid))
        _finish(run, out)
        _assert_as_undisturbed(out, calm, es, settings.index, store, job)
    finally:
        _stop(run)
        redis.close()


def test_a_killed_pool_child_of_a_prefork_worker_loses_nothing(tmp_path, settings, corpus, calm, target):
    """Production's setup: a prefork worker; one pool child killed mid-batch, the worker itself lives on.

    The broker delivers the dead child's batch again (``task_reject_on_worker_lost``)
    and the coordinator sends it again once the child's heartbeat has expired:
    when the worker is slow to get to the first, both are in the queue at once.
    The worker is paused over the kill until the coordinator has sent the
    batch again, and the kill waits for the queue to be empty, so the two
    deliveries are the next two messages and two processes are free to take
    them together. They must take turns, or the crash guard blames the page the
    other delivery is signing and that page ends both indexed and rejected
    (``worker_crashed``).
    """
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()
    with (tmp_path / "worker.err").open("w") as err:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "newsfold.indexer.celery_app", "worker", "--pool=prefork",
             "--concurrency=2", f"--hostname=prefork-{os.getpid()}@%h", "--loglevel=WARNING", "--without-gossip",
             "--without-mingle"],
            env=_env(es_url, redis.url, settings.index), stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True,
        )  # fmt: skip
    run = None
    try:
        # no local workers: the prefork worker takes the batches
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index, workers=0)
        store, job = _job(redis.url)
        assert wait_until(lambda: len(_children(worker.pid)) == 2, timeout=60)
        children = _children(worker.pid)
        # every batch is sent at the start: once Celery's default queue is empty, the last ones are running
        key = _kill_a_busy_worker(
            store, job, lambda: children, when=lambda: store.redis.llen("celery") == 0, pause=worker.pid
        )
        try:
            resent = f"the worker running {key} stopped answering; sending it again"
            assert wait_until(lambda: resent in _printed(out), timeout=60), _printed(out)[-2000:]
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        _finish(run, out)
        assert worker.poll() is None  # the worker lives on; its pool replaced the child
        _assert_as_undisturbed(out, calm, es, settings.index, store, job)
    finally:
        _stop(run)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(30)
        redis.close()


def test_a_job_lost_with_redis_ends_in_one_line_that_says_how_to_run_it_again(tmp_path, settings, corpus, calm,
                                                                                target):
    """Issue 39, item 6: a Redis that keeps nothing, restarted mid-run, took the job along, and the run ended in a
    ``LookupError`` traceback. It ends in one line naming the job and the command that runs it again; that
    command indexes every page once, in the undisturbed run's stories."""
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()
    run = None
    try:
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index)
        _, job = _wait_for_progress(redis.url, run)
        redis.restart(down_seconds=2.0, lose_data=True)
        run.wait(timeout=240)
        printed = _printed(out)
        # (the workers may log a traceback of their own as Redis goes: the run's end is what is checked)
        assert run.returncode == 1 and "LookupError" not in printed, printed[-3000:]
        last = printed.strip().splitlines()[-1]
        assert last.startswith(f"newsfold: job {job} was lost") and "cannot be resumed" in last, printed[-3000:]
        command = last.split("`")[1]
        assert command.startswith(f"newsfold ingest --index {settings.index} ") and command.endswith(str(corpus))
        assert JobStore(build_redis(redis.url)).get(job) is None  # not brought back as a fragment of a job
        again = tmp_path / "again.jsonl"
        _finish(_ingest(corpus, again, es_url=es_url, redis_url=redis.url, index=settings.index), again)
        assert sorted(_page(o) for o in _lines(again)) == sorted(_page(o) for o in calm[0])
        es.indices.refresh(index=settings.index)
        assert es.count(index=settings.index)["count"] == sum(len(c) for c in calm[1])  # each page once
        assert _clusters(es, settings.index) == calm[1]
    finally:
        _stop(run)
        redis.close()
