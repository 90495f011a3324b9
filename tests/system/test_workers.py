"""The real pipeline: Celery worker processes on a real Redis, a server speaking the Elasticsearch API."""

from __future__ import annotations

import gzip
import json
import random
import threading
import time

import pytest

from newsfold.cli import main
from newsfold.indexer.celery_app import make_celery
from newsfold.indexer.jobs.dispatch import BatchRun, run_batches
from newsfold.workers import LocalWorkers
from tests.pages import page, story

pytestmark = pytest.mark.slow


@pytest.fixture
def pipeline(settings, redis_url, es):
    live = settings.replace(redis_url=redis_url)
    app = make_celery(live)
    with LocalWorkers(live, 2) as workers:
        workers.wait_ready(app)
        yield live, app


def test_workers_fold_copies_ingested_at_the_same_moment(pipeline, es):
    live, app = pipeline
    rng = random.Random(3)
    payloads = []
    for s in range(4):
        paras = story(100 + s)
        for c in range(6):
            payloads.append(
                {"id": f"s{s}-c{c}", "html": page(f"Headline {s} variant {c}", paras, site=f"site{c}.test")}
            )
    rng.shuffle(payloads)
    # one page per task: the two workers race on every story
    outcomes = run_batches(app, [[p] for p in payloads], BatchRun(index=live.index))
    assert len(outcomes) == 24 and {o["status"] for o in outcomes} <= {"new", "duplicate"}
    docs = es.mget(index=live.index, ids=[p["id"] for p in payloads], source=["newsfold.cluster_id"])["docs"]
    clusters = {d["_id"]: d["_source"]["newsfold"]["cluster_id"] for d in docs}
    for s in range(4):
        assert len({clusters[f"s{s}-c{c}"] for c in range(6)}) == 1, clusters
    assert len(set(clusters.values())) == 4


def test_worker_rejects_bad_pages_without_losing_the_batch(pipeline, es):
    live, app = pipeline
    batch = [
        {"id": "good", "html": page("A good page", story(200))},
        {"id": "empty", "html": ""},
        {"id": "binary", "html_b64": "iVBORw0KGgoAAAANSUhEUgAA"},
    ]
    outcomes = {o["page_id"]: o for o in run_batches(app, [batch], BatchRun(index=live.index))}
    assert outcomes["good"]["status"] == "new"
    assert (outcomes["empty"]["reason"], outcomes["binary"]["reason"]) == ("empty", "not_html")
    assert es.count(index=live.index)["count"] == 1


def test_a_batch_whose_worker_is_killed_is_sent_again(settings, redis_url, es, caplog):
    import logging

    import redis

    from newsfold.state.jobs import JobStore

    url = redis_url.rsplit("/", 1)[0] + "/4"  # a database of its own: no other worker takes these batches
    redis.Redis.from_url(url).flushdb()
    live = settings.replace(redis_url=url, heartbeat_ttl=3.0)
    store = JobStore(redis.Redis.from_url(url))
    job = store.create("ingest", params={"index": live.index})
    app = make_celery(live)
    batches = [
        [{"id": f"b{b}-{i}", "html": page(f"Story {b} {i}", story(700 + 10 * b + i))} for i in range(4)]
        for b in range(24)  # enough work that the workers are busy at the first checks
    ]
    caplog.set_level(logging.WARNING, logger="newsfold.indexer.jobs.dispatch")
    with LocalWorkers(live, 2) as workers:
        workers.wait_ready(app)
        pids = {p.pid: p for p in workers.processes}
        killed: list[str] = []

        done = threading.Event()

        def kill_a_busy_worker() -> None:
            # Watches closely (a batch may take well under a second on a fast machine), not from ``on_idle``.
            watcher = redis.Redis.from_url(url)
            while not killed and not done.is_set():
                for key, where in JobStore(watcher).workers(job.id).items():
                    pid = int(where.rsplit(":", 1)[1])
                    if not killed and pid in pids and not store.is_recorded(job.id, key):
                        pids[pid].kill()  # SIGKILL mid-batch: never acknowledged
                        killed.append(key)
                time.sleep(0.005)
            watcher.close()

        hunter = threading.Thread(target=kill_a_busy_worker)
        hunter.start()
        try:
            outcomes = run_batches(app, batches, BatchRun(index=live.index, store=store, job_id=job.id))
        finally:
            done.set()
            hunter.join(10)
    assert killed and f"the worker running {killed[0]} stopped answering" in caplog.text
    assert len(outcomes) == 96 and {o["status"] for o in outcomes} <= {"new", "unchanged"}
    assert es.count(index=live.index)["count"] == 96
    got = store.get(job.id)
    assert got.done == 96 and store.recorded(job.id) == {str(b) for b in range(24)}


def _write_pages(tmp_path):
    (tmp_path / "html").mkdir()
    rows = []
    paras = story(300)
    for i, site in enumerate(["a.test", "b.test", "c.test"]):
        (tmp_path / "html" / f"p{i}.html").write_text(page(f"Copy {i}", paras, site=site))
        rows.append({"id": f"p{i}", "url": f"https://{site}/x", "site": site, "lang": None, "html": f"html/p{i}.html"})
    (tmp_path / "html" / "other.html.gz").write_bytes(gzip.compress(page("Other", story(301)).encode()))
    rows.append({"id": "other", "url": None, "site": None, "lang": None, "html": "html/other.html.gz"})
    (tmp_path / "html" / "bad.html").write_bytes(b"%PDF-1.7 not a page")
    rows.append({"id": "bad", "url": None, "site": None, "lang": None, "html": "html/bad.html"})
    rows.append({"id": "gone", "url": None, "site": None, "lang": None, "html": "html/none.html"})
    lines = [json.dumps(r) for r in rows] + ["{not json"]
    (tmp_path / "pages.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "pages.jsonl"


def test_cli_cluster_answers_every_page(tmp_path, settings, redis_url, monkeypatch, capsys):
    pages = _write_pages(tmp_path)
    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    out = tmp_path / "out.jsonl"
    assert main(["cluster", str(pages), "--out", str(out), "--index", settings.index, "--quiet"]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(got) == 7
    by_id = {g["id"]: g for g in got}
    assert by_id["p0"]["cluster"] == by_id["p1"]["cluster"] == by_id["p2"]["cluster"] == "p0"
    assert by_id["other"]["cluster"] == "other"
    assert by_id["bad"]["cluster"] is None and by_id["bad"]["error"].startswith("not_html")
    assert by_id["gone"]["error"].startswith("unreadable")
    assert by_id[None]["error"].startswith("line 7 is not valid JSON")
    assert "2 new, 2 duplicate" in capsys.readouterr().err


def test_cli_extract_answers_every_page(tmp_path):
    pages = _write_pages(tmp_path)
    out = tmp_path / "extract.jsonl"
    assert main(["extract", str(pages), "--out", str(out), "--quiet", "--jobs", "1"]) == 0
    got = {g["id"]: g for g in map(json.loads, out.read_text().splitlines())}
    assert len(got) == 7
    assert got["p0"]["title"].startswith("Copy 0") and len(got["p0"]["text"]) > 200
    assert got["other"]["lang"] == "en"
    assert got["bad"]["error"].startswith("not_html")
    assert "error" in got["gone"] and "error" in got[None]


def test_cli_reports_unreachable_elasticsearch(tmp_path, redis_url, monkeypatch, capsys):
    pages = _write_pages(tmp_path)
    monkeypatch.setenv("ELASTICSEARCH_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("NEWSFOLD_ES_MAX_RETRIES", "0")
    code = main(["cluster", str(pages), "--out", str(tmp_path / "o.jsonl"), "--quiet", "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 1
    assert "cannot reach Elasticsearch" in err and "Traceback" not in err


def test_cli_reports_unreachable_redis(tmp_path, settings, monkeypatch, capsys):
    pages = _write_pages(tmp_path)
    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:9/0")
    code = main(["cluster", str(pages), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert "cannot reach Redis" in err and "Traceback" not in err


def test_pages_in_flight_are_bounded_whatever_the_batch_size():
    from newsfold.indexer.jobs.dispatch import MAX_PAGES_IN_FLIGHT, in_flight_batches

    assert in_flight_batches(25) == 64 and in_flight_batches(100) == 16
    assert in_flight_batches(100) * 100 <= MAX_PAGES_IN_FLIGHT
    assert in_flight_batches(10_000) == 4 and in_flight_batches(0) >= 4  # never stalls the workers
