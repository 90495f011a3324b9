"""Fault tests: a server goes away in the middle of a job; every page still ends with exactly one outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from newsfold.embedded import EmbeddedRedis
from newsfold.samples import generate

pytestmark = pytest.mark.slow


@pytest.fixture(params=["standin", "near-real-time"])
def target(request, es, es_url):
    """Where the run writes: the stand-in as it is, or behind tests/nrt_proxy.py (Elasticsearch's refreshes)."""
    if request.param == "standin":
        yield es_url, es
        return
    from newsfold.plugin.client import build_client
    from newsfold.plugin.settings import Settings
    from tests.nrt_proxy import NrtProxy

    proxy = NrtProxy(refresh_interval=1.0)
    client = build_client(Settings(elasticsearch_url=proxy.url))
    yield proxy.url, client
    client.close()
    proxy.close()


def _ingest(pages: Path | None, out: Path, *, es_url: str, redis_url: str, index: str, resume: str | None = None,
            **env_extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEWSFOLD_")}
    env.update(ELASTICSEARCH_URL=es_url, REDIS_URL=redis_url, NEWSFOLD_INDEX=index, NEWSFOLD_BATCH_SIZE="4",
               NEWSFOLD_OUTAGE_WAIT="60", **env_extra)
    args = [str(pages)] if pages else []
    if resume:
        args += ["--resume", resume]
    return subprocess.Popen(
        [sys.executable, "-m", "newsfold.cli", "ingest", *args, "--out", str(out), "--workers", "2"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def _finish(run: subprocess.Popen, timeout: float = 240) -> str:
    """Wait for a run to end with rc 0; on a hang, stop its process group and fail with what it printed."""
    import signal

    try:
        _, err = run.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(run.pid, signal.SIGKILL)
        _, err = run.communicate(timeout=30)
        pytest.fail(f"the run did not end within {timeout:.0f} s; it printed:\n{err[-4000:]}")
    assert run.returncode == 0, err[-3000:]
    return err


def _assert_every_page_once(tmp_path: Path, name: str) -> None:
    """The run's output has one line per page, the same pages as the undisturbed run, none lost to the fault."""
    outcomes = _lines(tmp_path / name)
    pages = sorted(o.get("page_id") or o.get("origin") for o in outcomes)
    assert pages == sorted(o.get("page_id") or o.get("origin") for o in _lines(tmp_path / "calm.jsonl"))
    assert len(pages) == len(set(pages)), "a page was reported twice"
    lost = [o for o in outcomes if o.get("reason") in ("internal_error", "failed", "worker_crashed")]
    assert not lost, lost


def _calm_clusters(tmp_path, pages, es, es_url, index) -> set[frozenset[str]]:
    """The clusters of an undisturbed run of the same pages."""
    server = EmbeddedRedis()
    try:
        _finish(_ingest(pages, tmp_path / "calm.jsonl", es_url=es_url, redis_url=server.url, index=index))
    finally:
        server.close()
    return _clusters(es, index)


def _wait_for_lines(path: Path, n: int, run: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(_lines(path)) < n and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.05)
    assert run.poll() is None, "the run ended before the fault"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _clusters(es, index: str) -> set[frozenset[str]]:
    res = es.search(index=index, size=1000, source=["newsfold.cluster_id"], query={"match_all": {}})
    groups: dict[str, set[str]] = {}
    for hit in res["hits"]["hits"]:
        groups.setdefault(hit["_source"]["newsfold"]["cluster_id"], set()).add(hit["_id"])
    return {frozenset(g) for g in groups.values()}


def test_a_redis_restart_during_ingest_loses_nothing(tmp_path, settings, target):
    es_url, es = target
    pages = generate(tmp_path / "corpus", seed=11, stories=12)
    calm = _calm_clusters(tmp_path, pages, es, es_url, f"{settings.index}-calm")
    redis = EmbeddedRedis()  # persistent: its append-only file survives the restart
    try:
        run = _ingest(pages, tmp_path / "out.jsonl", es_url=es_url, redis_url=redis.url, index=settings.index)
        _wait_for_lines(tmp_path / "out.jsonl", 8, run)
        redis.restart(down_seconds=2.0)
        _finish(run)
    finally:
        redis.close()
    _assert_every_page_once(tmp_path, "out.jsonl")
    assert _clusters(es, settings.index) == calm
    es.options(ignore_status=404).indices.delete(index=f"{settings.index}-calm*")


def test_elasticsearch_paused_past_the_client_timeout_loses_nothing(tmp_path, settings, es, es_url):
    import signal

    from newsfold.embedded import EmbeddedElasticsearch
    from newsfold.plugin.client import build_client

    pages = generate(tmp_path / "corpus", seed=12, stories=10)
    calm = _calm_clusters(tmp_path, pages, es, es_url, f"{settings.index}-calm")
    server = EmbeddedElasticsearch()  # a server of its own, to pause
    redis = EmbeddedRedis()
    try:
        run = _ingest(pages, tmp_path / "out.jsonl", es_url=server.url, redis_url=redis.url, index=settings.index,
                      NEWSFOLD_ES_TIMEOUT="2", NEWSFOLD_TASK_RETRIES="8")
        _wait_for_lines(tmp_path / "out.jsonl", 8, run)
        os.kill(server.server.pid, signal.SIGSTOP)  # frozen, sockets open: every request times out
        time.sleep(5.0)
        os.kill(server.server.pid, signal.SIGCONT)
        _finish(run)
        client = build_client(settings.replace(elasticsearch_url=server.url))
        assert _clusters(client, settings.index) == calm
        client.close()
    finally:
        redis.close()
        server.close()
    _assert_every_page_once(tmp_path, "out.jsonl")
    es.options(ignore_status=404).indices.delete(index=f"{settings.index}-calm*")


def test_a_killed_coordinator_resumes_and_every_page_is_indexed_once(tmp_path, settings, target):
    es_url, es = target
    import signal

    pages = generate(tmp_path / "corpus", seed=13, stories=10)
    calm = _calm_clusters(tmp_path, pages, es, es_url, f"{settings.index}-calm")
    redis = EmbeddedRedis()
    try:
        first = _ingest(pages, tmp_path / "first.jsonl", es_url=es_url, redis_url=redis.url, index=settings.index)
        _wait_for_lines(tmp_path / "first.jsonl", 8, first)
        os.killpg(first.pid, signal.SIGKILL)  # the coordinator and its local workers, no cleanup
        _, err = first.communicate(timeout=60)
        job = err.split("ingest job ")[1].split()[0].rstrip(";")
        resumed = _ingest(None, tmp_path / "second.jsonl", es_url=es_url, redis_url=redis.url, index=settings.index,
                          resume=job)
        _finish(resumed)
    finally:
        redis.close()
    assert _clusters(es, settings.index) == calm  # every page once, the same stories
    # the resumed run reports every page, the batches the first run finished included (from the job's records)
    _assert_every_page_once(tmp_path, "second.jsonl")
    total = es.count(index=settings.index)["count"]
    assert total == es.count(index=f"{settings.index}-calm")["count"]
    es.options(ignore_status=404).indices.delete(index=f"{settings.index}-calm*")


def _worker_pids(parent: int) -> list[int]:
    """The Celery worker processes a run started (children of its coordinator running celery)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if int(fields[1]) == parent and b"celery" in cmdline:
            pids.append(int(stat.parent.name))
    return sorted(pids)


def test_a_killed_worker_loses_nothing(tmp_path, settings, target):
    import signal

    es_url, es = target
    pages = generate(tmp_path / "corpus", seed=14, stories=10)
    calm = _calm_clusters(tmp_path, pages, es, es_url, f"{settings.index}-calm")
    redis = EmbeddedRedis()
    try:
        run = _ingest(pages, tmp_path / "out.jsonl", es_url=es_url, redis_url=redis.url, index=settings.index)
        _wait_for_lines(tmp_path / "out.jsonl", 8, run)
        workers = _worker_pids(run.pid)
        assert workers, "no worker process found"
        os.kill(workers[0], signal.SIGKILL)  # mid-batch, no cleanup: its batch must be done again
        _finish(run)
    finally:
        redis.close()
    _assert_every_page_once(tmp_path, "out.jsonl")
    assert _clusters(es, settings.index) == calm
    es.options(ignore_status=404).indices.delete(index=f"{settings.index}-calm*")
