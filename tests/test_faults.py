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


def _ingest(pages: Path, out: Path, *, es_url: str, redis_url: str, index: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEWSFOLD_")}
    env.update(ELASTICSEARCH_URL=es_url, REDIS_URL=redis_url, NEWSFOLD_INDEX=index, NEWSFOLD_BATCH_SIZE="4",
               NEWSFOLD_OUTAGE_WAIT="60")
    return subprocess.Popen(
        [sys.executable, "-m", "newsfold.cli", "ingest", str(pages), "--out", str(out), "--workers", "2", "--quiet"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _clusters(es, index: str) -> set[frozenset[str]]:
    res = es.search(index=index, size=1000, source=["newsfold.cluster_id"], query={"match_all": {}})
    groups: dict[str, set[str]] = {}
    for hit in res["hits"]["hits"]:
        groups.setdefault(hit["_source"]["newsfold"]["cluster_id"], set()).add(hit["_id"])
    return {frozenset(g) for g in groups.values()}


def test_a_redis_restart_during_ingest_loses_nothing(tmp_path, settings, es, es_url):
    pages = generate(tmp_path / "corpus", seed=11, stories=12)
    expected = {json.loads(line)["id"] for line in pages.read_text().splitlines()}
    calm_redis = EmbeddedRedis()
    try:  # the undisturbed run, for the clusters
        calm = _ingest(pages, tmp_path / "calm.jsonl", es_url=es_url, redis_url=calm_redis.url,
                       index=f"{settings.index}-calm")
        _, err = calm.communicate(timeout=300)
        assert calm.returncode == 0, err[-3000:]
    finally:
        calm_redis.close()
    redis = EmbeddedRedis()  # persistent: its append-only file survives the restart
    try:
        run = _ingest(pages, tmp_path / "out.jsonl", es_url=es_url, redis_url=redis.url, index=settings.index)
        deadline = time.monotonic() + 120
        while len(_lines(tmp_path / "out.jsonl")) < 8 and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.05)
        assert run.poll() is None, "the run ended before the restart"
        redis.restart(down_seconds=2.0)
        _, err = run.communicate(timeout=300)
        assert run.returncode == 0, err[-3000:]
    finally:
        redis.close()
    outcomes = _lines(tmp_path / "out.jsonl")
    ids = [o["page_id"] for o in outcomes if o.get("page_id")]
    assert sorted(ids) == sorted(set(ids)), "a page was reported twice"
    assert set(ids) == expected - {o["page_id"] for o in outcomes if o.get("status") == "rejected"} | set(ids)
    assert len(outcomes) == len(_lines(tmp_path / "calm.jsonl"))
    bad = [o for o in outcomes if o.get("reason") in ("internal_error", "failed")]
    assert not bad, bad
    assert _clusters(es, settings.index) == _clusters(es, f"{settings.index}-calm")
    es.options(ignore_status=404).indices.delete(index=f"{settings.index}-calm*")
