# ruff: noqa: F811  (the fixtures corpus, calm and target come from test_faults and are parameters here)
"""Faults on a cluster of three real nodes (``./run test --backend cluster``): a node killed or paused during
``newsfold ingest``, a node killed during ``newsfold reindex``, the whole cluster stopped and started again under a
job that then resumes.

Each run writes into an index of 3 shards and 1 replica, and its result is compared with the undisturbed run of
the same corpus (tests/system/test_faults.py): nothing lost, no story split, exactly one ``new`` per story.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from newsfold.embedded import EmbeddedRedis
from newsfold.plugin.fold.by_id import behind
from tests.backends import CLUSTER
from tests.system.test_faults import (  # noqa: F401  (corpus, calm and target are fixtures used here)
    _assert_as_undisturbed,
    _clusters,
    _env,
    _finish,
    _ingest,
    _job,
    _lines,
    _stop,
    _wait_for_progress,
    calm,
    corpus,
    target,
)
from tests.waits import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CLUSTER, reason="kills and pauses nodes of the cluster backend (--backend cluster)"),
]

SPREAD = {"NEWSFOLD_SHARDS": "3", "NEWSFOLD_REPLICAS": "1"}


@pytest.fixture
def cluster(es_server):
    """The session's cluster, whole and green again after each test."""
    yield es_server.cluster
    for node in es_server.cluster.nodes.values():
        if node.process is None:
            node.restart()
    es_server.cluster.wait_for_nodes(3, timeout=180, status="green")


def _every_copy_started(es, run: subprocess.Popen) -> None:
    """Wait until every shard copy of every index has started (green): the fault then takes a node whose shards
    all have a copy elsewhere. An index a worker made during the first batch (the founding index) may still be
    starting its replica; a node lost before it has started takes the index's only copy with it (red), and the
    run would wait for that node, which these tests never bring back."""
    health = (
        es.options(ignore_status=408)
        .cluster.health(
            wait_for_status="green",
            wait_for_no_initializing_shards=True,
            wait_for_no_relocating_shards=True,
            timeout="120s",
        )
        .body
    )
    assert health["status"] == "green" and not health["timed_out"], health
    assert run.poll() is None, "the run ended before the fault"


def _a_primary_node(es, index: str) -> str:
    """The name of a node holding a primary shard of the index (where stories are being founded)."""
    rows = es.cat.shards(index=index, format="json", h="prirep,node,state")
    return next(r["node"] for r in rows if r["prirep"] == "p" and r["state"] == "STARTED")


def _one_new_per_story(out) -> None:
    outcomes = _lines(out)
    new = [o["cluster_id"] for o in outcomes if o["status"] == "new"]
    merged_away = {c for o in outcomes if o["status"] == "merged" for c in o.get("merged_clusters") or []}
    stories = {o["cluster_id"] for o in outcomes if o.get("cluster_id")} - merged_away
    assert sorted(set(new) - merged_away) == sorted(stories), "a story without its one new, or with two"
    assert len(new) == len(set(new))


def test_a_node_holding_a_primary_killed_during_ingest_loses_nothing(tmp_path, settings, corpus, calm, target,
                                                                      cluster):  # fmt: skip
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()
    run = None
    try:
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index, **SPREAD)
        _wait_for_progress(redis.url, run)
        _every_copy_started(es, run)
        victim = _a_primary_node(es, settings.index)
        cluster.kill(victim)
        _finish(run, out)
        _assert_as_undisturbed(out, calm, es, settings.index, *_job(redis.url))
        _one_new_per_story(out)
    finally:
        _stop(run)
        redis.close()


def test_the_node_the_workers_talked_to_first_killed_during_ingest_loses_nothing(tmp_path, settings, corpus, calm,
                                                                                  target, cluster):  # fmt: skip
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()
    run = None
    try:
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index, **SPREAD)
        _wait_for_progress(redis.url, run)
        _every_copy_started(es, run)
        assert es_url.split(",")[0] == cluster.node("newsfold-1").url
        cluster.kill("newsfold-1")
        _finish(run, out)
        _assert_as_undisturbed(out, calm, es, settings.index, *_job(redis.url))
        _one_new_per_story(out)
    finally:
        _stop(run)
        redis.close()


def test_a_node_paused_for_30_s_during_ingest_loses_nothing(tmp_path, settings, corpus, calm, target, cluster):
    es_url, es = target
    out = tmp_path / "out.jsonl"
    redis = EmbeddedRedis()
    run = None
    try:
        run = _ingest(corpus, out, es_url=es_url, redis_url=redis.url, index=settings.index,
                      NEWSFOLD_ES_TIMEOUT="10", **SPREAD)  # fmt: skip
        _wait_for_progress(redis.url, run)
        _every_copy_started(es, run)
        cluster.pause("newsfold-2")
        try:
            time.sleep(30)
        finally:
            cluster.resume("newsfold-2")
        _finish(run, out, timeout=400)
        _assert_as_undisturbed(out, calm, es, settings.index, *_job(redis.url))
        _one_new_per_story(out)
    finally:
        _stop(run)
        redis.close()


def test_the_whole_cluster_stopped_during_ingest_then_the_job_resumes_to_the_end(tmp_path, settings, corpus, calm,
                                                                                  target, cluster):  # fmt: skip
    """Every node stopped mid-run: the batches wait and retry (the broker's backoff) while the cluster is down;
    the coordinator is then stopped too, and ``newsfold ingest --resume`` finishes the job once it is back."""
    es_url, es = target
    redis = EmbeddedRedis()
    first = None
    try:
        first = _ingest(corpus, tmp_path / "first.jsonl", es_url=es_url, redis_url=redis.url, index=settings.index,
                        NEWSFOLD_TASK_RETRIES="20", **SPREAD)  # fmt: skip
        store, job = _wait_for_progress(redis.url, first)
        cluster.stop_all()
        assert wait_until(lambda: "Elasticsearch unavailable" in (tmp_path / "first.err").read_text(), timeout=120)
        os.killpg(first.pid, signal.SIGKILL)  # the operator stops the run while the cluster is down
        first.wait(timeout=60)
        cluster.start_again()
        out = tmp_path / "second.jsonl"
        _finish(_ingest(None, out, es_url=es_url, redis_url=redis.url, index=settings.index, resume=job,
                        NEWSFOLD_TASK_RETRIES="20", **SPREAD), out, timeout=400)  # fmt: skip
        _assert_as_undisturbed(out, calm, es, settings.index, store, job)
        _one_new_per_story(out)
    finally:
        _stop(first)
        redis.close()


def _reindex(out, *, es_url: str, redis_url: str, index: str, resume: str | None = None) -> subprocess.Popen:
    args = ["--resume", resume] if resume else []
    with out.open("w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "newsfold.cli", "reindex", *args, "--workers", "2", "--quiet"],
            env=_env(es_url, redis_url, index, **SPREAD), stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True,
        )  # fmt: skip


def test_a_node_killed_during_reindex_leaves_a_complete_index(tmp_path, settings, corpus, calm, target, cluster):
    """The reindex goes on through the other nodes, or fails and resumes; the index behind the alias is whole."""
    es_url, es = target
    redis = EmbeddedRedis()
    try:
        loaded = tmp_path / "ingest.jsonl"
        _finish(_ingest(corpus, loaded, es_url=es_url, redis_url=redis.url, index=settings.index, **SPREAD), loaded)
        old = behind(es, settings.index).write
        log = tmp_path / "reindex.err"
        run = _reindex(log, es_url=es_url, redis_url=redis.url, index=settings.index)
        assert wait_until(lambda: "reindex job" in log.read_text() or run.poll() is not None, timeout=120)
        job = log.read_text().split("reindex job ", 1)[1].split(":", 1)[0]
        cluster.kill(_a_primary_node(es, old))
        if run.wait(timeout=400) != 0:  # it may fail on the lost node: the job resumes from its checkpoint
            again = tmp_path / "resume.err"
            assert _reindex(again, es_url=es_url, redis_url=redis.url, index=settings.index, resume=job).wait(
                timeout=400) == 0, again.read_text()[-3000:]  # fmt: skip
        assert behind(es, settings.index).write != old  # the alias points at the rebuilt index
        es.indices.refresh(index=settings.index)
        _, calm_clusters = calm
        assert es.count(index=settings.index)["count"] == sum(len(c) for c in calm_clusters)  # every page once
        assert _clusters(es, settings.index) == calm_clusters
    finally:
        redis.close()
