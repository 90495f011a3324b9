"""Reindex against the real stand-ins: real Redis, real Celery worker processes, a server speaking the ES API."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid

import pytest
import redis

from newsfold.indexer.celery_app import make_celery
from newsfold.indexer.jobs.dispatch import BatchRun, run_batches
from newsfold.indexer.jobs.reindex import Reindex, ReindexError, lock_key
from newsfold.indexer.jobs.reindex_plan import prefix_length
from newsfold.indexer.pages import chunk_context
from newsfold.plugin.fold import founding
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.index import current_index
from newsfold.plugin.fold.rejections import rejection_actions, rejections_index
from newsfold.plugin.fold.store import current_labels
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.state.jobs import JobStore
from newsfold.state.locks import RedisLock
from newsfold.workers import LocalWorkers
from tests.pages import page, story

pytestmark = pytest.mark.slow

STORIES = 6
COPIES = 4


@pytest.fixture
def live(settings, redis_url):
    return settings.replace(redis_url=redis_url, es_timeout=5.0)


@pytest.fixture
def store(live):
    client = redis.Redis.from_url(live.redis_url)
    yield JobStore(client)
    client.close()


@pytest.fixture
def apart(live):
    """Settings on a Redis database of their own, for tests that start their own workers:
    the shared pool's workers (on database 0) never take their tasks."""
    url = live.redis_url.rsplit("/", 1)[0] + "/3"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield live.replace(redis_url=url, heartbeat_ttl=3.0), JobStore(client)  # a dead worker is seen in 3 s
    client.flushdb()
    client.close()


@pytest.fixture(scope="module")
def pool(es_url, redis_url):
    """Two worker processes shared by the tests that do not kill one (the index comes with each task)."""
    from newsfold.plugin.settings import Settings

    base = Settings.from_env().replace(elasticsearch_url=es_url, redis_url=redis_url, es_timeout=5.0)
    app = make_celery(base)
    with LocalWorkers(base, 2) as workers:
        workers.wait_ready(app)
        yield app


def _pages(prefix: str, stories: range, copies: int = COPIES) -> list[dict]:
    out = []
    for s in stories:
        paras = story(1000 + s)
        for c in range(copies):
            out.append(
                {
                    "id": f"{prefix}{s}-{c}",
                    "url": f"https://site{c}.test/{prefix}{s}",
                    "html": page(f"Story {s} as told by site {c}", paras, site=f"site{c}.test"),
                }
            )
    return out


def _load(es, live, payloads: list[dict]) -> None:
    """Ingest pages in this process (the quickest way to fill the old index)."""
    signed = [
        sign_page(Page(html=p["html"], id=p["id"], url=p["url"], site=p["url"].split("/")[2]), live) for p in payloads
    ]
    ingest(signed, client=es, settings=live)


def _partition(es, live, ids: list[str]) -> set[frozenset]:
    labels = current_labels(ids, client=es, settings=live)
    assert set(labels) == set(ids), sorted(set(ids) - set(labels))
    groups: dict[str, set] = {}
    for page_id, cluster in labels.items():
        groups.setdefault(cluster, set()).add(page_id)
    return {frozenset(g) for g in groups.values()}


def _reindex(job_id, app, store, live, **kwargs):
    return Reindex(job_id, app=app, store=store, ctx=chunk_context(live), **kwargs).run()


def _new_job(store, live, source="text"):
    return store.create("reindex", params={"source": source, "user": "tests", "index": live.index})


def test_prefix_length_grows_with_the_index():
    assert prefix_length(0, 500) == prefix_length(500, 500) == prefix_length(8000, 500) == 1
    assert prefix_length(8001, 500) == 2 and prefix_length(16**3 * 500, 500) == 3


def test_rejection_actions_record_rejected_and_clear_written_pages():
    actions = rejection_actions(
        [
            {
                "page_id": "a",
                "status": "rejected",
                "reason": "too_short",
                "detail": "12 tokens",
                "url": "u",
                "site": "s",
            },
            {"page_id": "b", "status": "new", "cluster_id": "b"},
            {"page_id": "c", "status": "unchanged", "cluster_id": "c"},
        ],
        index="x-rejected",
        job_id="j",
        at="2024-01-01T00:00:00Z",
    )
    assert actions == [
        {
            "_op_type": "index",
            "_index": "x-rejected",
            "_id": "a",
            "_source": {
                "page_id": "a",
                "url": "u",
                "site": "s",
                "reason": "too_short",
                "detail": "12 tokens",
                "at": "2024-01-01T00:00:00Z",
                "job_id": "j",
            },
        },
        {"_op_type": "delete", "_index": "x-rejected", "_id": "b"},
    ]


def test_reindex_swaps_the_alias_while_search_keeps_answering(es, live, store, pool):
    payloads = _pages("p", range(STORIES)) + _pages("single", range(50, 56), copies=1)
    _load(es, live, payloads)
    ids = [p["id"] for p in payloads]
    before = _partition(es, live, ids)
    assert len(before) == STORIES + 6
    old = current_index(es, live)
    first_ingested = es.get(index=live.index, id="p0-1")["_source"]["ingested"]
    answers: list[int] = []
    failures: list[Exception] = []
    stop = threading.Event()

    def search() -> None:
        while not stop.is_set():
            try:
                answers.append(es.count(index=live.index)["count"])
            except Exception as exc:  # noqa: BLE001 (the assertion below shows it)
                failures.append(exc)
            time.sleep(0.01)

    watcher = threading.Thread(target=search)
    watcher.start()
    try:
        job = _reindex(_new_job(store, live).id, pool, store, live, chunk_pages=5, grace=0.5)
    finally:
        stop.set()
        watcher.join()
    assert not failures and answers and set(answers) == {len(ids)}  # never empty, never half-built
    new = current_index(es, live)
    assert new != old and not es.indices.exists(index=old)
    assert es.indices.get_alias(name=live.index)[new]["aliases"][live.index]["is_write_index"] is True
    assert es.count(index=live.index)["count"] == len(ids)
    assert _partition(es, live, ids) == before
    assert job.status == "done" and job.done == job.total == len(ids)
    assert job.counts["new"] + job.counts["duplicate"] == len(ids)
    assert es.indices.get_settings(index=new)[new]["settings"]["index"]["number_of_replicas"] == str(live.replicas)
    assert es.get(index=live.index, id="p0-1")["_source"]["ingested"] == first_ingested  # kept, not "now"
    assert store.redis.get(lock_key(live.index)) is None


def test_a_reindex_rebuilds_every_period_of_a_rolled_alias_and_keeps_stories_across_them(es, live, store, pool):
    """Behind a rolled-over alias a reindex rebuilt the write index alone, its pages looked up only among
    themselves: a story whose copies straddled the rollover split in two, and older indices kept old signatures."""
    from newsfold.plugin.fold.by_id import behind
    from newsfold.plugin.fold.rollover import roll_over

    payloads = _pages("r", range(3))
    early = [p for p in payloads if p["id"].endswith(("-0", "-1"))]
    late = [p for p in payloads if p not in early] + _pages("late", range(70, 72), copies=1)
    _load(es, live, early)
    roll_over(es, live, force=True)
    _load(es, live, late)
    ids = [p["id"] for p in payloads + late[-2:]]
    before = _partition(es, live, ids)
    assert len(before) == 3 + 2 and frozenset({"r0-0", "r0-1", "r0-2", "r0-3"}) in before
    was = behind(es, live.index)
    steps: list[str] = []
    job = _reindex(_new_job(store, live).id, pool, store, live, chunk_pages=5, grace=0.5,
                   progress=lambda job, phase: steps.append(phase))  # fmt: skip
    now = behind(es, live.index)
    assert len(now.indices) == 2 and not set(now.indices) & set(was.indices)  # both periods rebuilt, the old gone
    assert now.created == was.created  # each keeps its period: the window and the rollover age still hold
    assert es.count(index=now.indices[1])["count"] == len(early)
    assert es.count(index=now.write)["count"] == len(late) and now.write == now.indices[0]
    assert _partition(es, live, ids) == before  # a story across the rollover is still one story
    assert job.status == "done" and job.done == job.total == len(ids)
    assert job.counts["new"] == 5 and "2 indices (periods)" in job.message and steps.count("swap") == 2
    assert not es.indices.exists_alias(name=f"{now.write}-lookup")
    # the rebuilt stories' commit marks are the alias's: read through it, no story is left pending (a merge would
    # otherwise take a reported story into a later one)
    found = founding.foundings(current_labels(ids, client=es, settings=live).values(), client=es, settings=live)
    assert len(found) == 5 and {f.state for f in found.values()} == {"committed"}, found


def test_editor_decisions_survive_a_reindex(es, live, store, pool):
    from newsfold.plugin.edit.corrections import corrections_index, split_page

    payloads = _pages("e", range(2))
    _load(es, live, payloads)
    split_page("e0-2", user="editor", client=es, settings=live)
    ids = [p["id"] for p in payloads]
    before = _partition(es, live, ids)
    assert frozenset({"e0-2"}) in before
    made_during: list[str] = []

    def correct_meanwhile(current, phase):
        if phase == "swap" and not made_during:  # every chunk has been written already
            split_page("e1-3", user="editor", client=es, settings=live)
            made_during.append("e1-3")

    _reindex(_new_job(store, live).id, pool, store, live, chunk_pages=5, grace=0.5, progress=correct_meanwhile)
    after = _partition(es, live, ids)
    assert frozenset({"e0-2"}) in after and frozenset({"e1-3"}) in after
    assert after - {frozenset({"e1-3"}), frozenset({"e1-0", "e1-1", "e1-2"})} == before - {
        frozenset({"e1-0", "e1-1", "e1-2", "e1-3"})
    }
    assert es.count(index=corrections_index(live))["count"] == 2  # the log is kept, not rewritten


def test_half_built_index_is_deleted_on_failure(es, live, store, pool, tmp_path):
    _load(es, live, _pages("f", range(2)))
    old = current_index(es, live)
    live = live.replace(archive_dir=str(tmp_path / "empty-archive"))
    job = _new_job(store, live, source="archive")
    with pytest.raises(ReindexError, match="holds no page files"):
        _reindex(job.id, pool, store, live, grace=0.5)
    got = store.get(job.id)
    assert got.status == "failed" and "was deleted" in got.message
    target = store.state(job.id)["target"]
    assert target != old and not es.indices.exists(index=target)
    assert current_index(es, live) == old and es.count(index=live.index)["count"] == 2 * COPIES
    assert store.redis.get(lock_key(live.index)) is None


def test_lock_refuses_a_second_reindex(es, live, store, pool):
    _load(es, live, _pages("l", range(1)))
    holder = RedisLock(store.redis, lock_key(live.index), "reindex-running-elsewhere", ttl=30)
    holder.acquire()
    try:
        job = _new_job(store, live)
        with pytest.raises(ReindexError, match="another reindex .* is running"):
            _reindex(job.id, pool, store, live)
        assert store.get(job.id).status == "failed"
        assert store.state(job.id) == {}  # nothing was built
        assert holder.held()
    finally:
        holder.release()


def test_killed_worker_and_killed_coordinator_lose_nothing(es, apart, caplog):
    live, store = apart
    payloads = _pages("k", range(8)) + _pages("solo", range(60, 68), copies=1)
    _load(es, live, payloads)
    ids = [p["id"] for p in payloads]
    before = _partition(es, live, ids)
    app = make_celery(live)
    caplog.set_level(logging.WARNING, logger="newsfold.indexer.jobs.dispatch")
    # 1. a worker killed in the middle of a chunk: the coordinator sees its heartbeat stop and sends the chunk again
    with LocalWorkers(live, 3) as workers:
        workers.wait_ready(app)
        # 1. a worker killed in the middle of a chunk: its heartbeat stops, the coordinator sends the chunk again
        first = _new_job(store, live)
        pids = {p.pid: p for p in workers.processes}
        killed: list[str] = []

        def kill_a_busy_worker(current, phase):
            if killed or len(store.recorded(first.id)) < 2:
                return
            for key, where in store.workers(first.id).items():
                pid = int(where.rsplit(":", 1)[1])
                if pid in pids and not store.is_recorded(first.id, key):
                    pids[pid].kill()  # SIGKILL mid-chunk: the message is never acknowledged
                    killed.append(key)
                    return

        done = _reindex(first.id, app, store, live, chunk_pages=3, grace=0.5, progress=kill_a_busy_worker)
        assert killed and f"the worker running {killed[0]} stopped answering; sending it again" in caplog.text
        assert done.status == "done" and done.done == len(ids)
        assert es.count(index=live.index)["count"] == len(ids)
        assert _partition(es, live, ids) == before
        # 2. the coordinator dies mid-job: started again, it goes on from its checkpoint
        second = _new_job(store, live)

        def interrupt(current, phase):
            if len(store.recorded(second.id)) >= 4:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            _reindex(second.id, app, store, live, chunk_pages=3, grace=0.5, progress=interrupt)
        assert store.get(second.id).status == "cancelled"
        assert current_index(es, live) == store.state(first.id)["target"]  # not swapped yet
        assert 4 <= len(store.recorded(second.id)) < 16
        # as a coordinator killed outright leaves it: still "running", its lock held until it expires
        store.start(second.id)
        store.redis.set(lock_key(live.index), second.id, px=1500)
        done = _reindex(second.id, app, store, live, chunk_pages=3, grace=0.5)
    assert done.status == "done" and current_index(es, live) == store.state(second.id)["target"]
    assert es.count(index=live.index)["count"] == len(ids)  # every page exactly once
    assert _partition(es, live, ids) == before  # the same clusters as an uninterrupted run
    assert done.done == len(ids)  # each chunk counted once, the interrupted ones after the resume


def test_live_writes_during_a_reindex_end_up_in_the_new_index(es, live, store, pool):
    old_pages = _pages("o", range(4)) + _pages("single", range(80, 84), copies=1)
    _load(es, live, old_pages)
    old = current_index(es, live)
    late_copy = _pages("o", range(1), copies=COPIES + 1)[-1] | {"id": "late-copy"}
    written: dict[str, list[str]] = {"workers": [], "direct": [], "before_swap": [], "routed_before_swap": []}

    def during(current, phase):
        if phase == "load" and not written["workers"]:
            # through the workers: the batch goes to the alias (old index) and to the new index
            batch = _pages("w", range(10, 12), copies=2) + [late_copy]
            run_batches(pool, [batch], BatchRun(index=live.index))
            written["workers"] = [p["id"] for p in batch]
            # straight into the alias, as an embedding application would (no second write)
            direct = _pages("d", range(20, 21), copies=2)
            _load(es, live, direct)
            written["direct"] = [p["id"] for p in direct]
        if phase == "swap" and not written["before_swap"]:
            # after every chunk and the first catch-up, just before the swap: only the second catch-up sees it
            last = _pages("s", range(25, 26), copies=1)
            _load(es, live, last)
            written["before_swap"] = [p["id"] for p in last]
        if phase == "grace" and not written["routed_before_swap"]:
            # a write the alias sent to the old index just before the swap, acknowledged after it
            late = _pages("g", range(30, 31), copies=1)
            _load(es, live.replace(index=old), late)
            written["routed_before_swap"] = [p["id"] for p in late]

    job = _reindex(_new_job(store, live).id, pool, store, live, chunk_pages=3, progress=during)
    assert job.status == "done" and all(written.values())
    everything = [p["id"] for p in old_pages] + [i for ids in written.values() for i in ids]
    docs = es.mget(index=live.index, ids=everything, source=["newsfold.cluster_id"])["docs"]
    assert [d["_id"] for d in docs if not d["found"]] == []
    assert es.count(index=live.index)["count"] == len(everything)
    labels = current_labels(["o0-0", "late-copy"], client=es, settings=live)
    assert labels["late-copy"] == labels["o0-0"]  # the live copy joined its story in the new index
    assert int(store.state(job.id)["caught_up"]) >= len(written["before_swap"]) + len(written["routed_before_swap"])


def test_ingest_job_counts_batches_once_and_records_rejected_pages(es, live, store, pool):
    job = store.create("ingest", params={"index": live.index})
    good = _pages("r", range(1), copies=2)
    batch = good + [{"id": "blank", "url": "https://x.test/blank", "html": ""}]
    outcomes = run_batches(pool, [("0", batch)], BatchRun(index=live.index, store=store, job_id=job.id))
    assert sorted(o["status"] for o in outcomes) == ["duplicate", "new", "rejected"]
    got = store.get(job.id)
    assert (got.done, got.counts["rejected"], got.rejected) == (3, 1, {"empty": 1})
    assert store.recorded(job.id) == {"0"}
    # the same batch delivered again (a worker died before acknowledging it) is not counted twice,
    # and answers with the outcomes the job recorded for it
    again = run_batches(pool, [("0", batch)], BatchRun(index=live.index, store=store, job_id=job.id))
    assert sorted((o["page_id"], o["status"]) for o in again) == sorted((o["page_id"], o["status"]) for o in outcomes)
    assert store.get(job.id).done == 3
    record = es.get(index=rejections_index(live), id="blank")["_source"]
    assert (record["reason"], record["job_id"], record["url"], record["site"]) == (
        "empty",
        job.id,
        "https://x.test/blank",
        None,
    )
    assert es.count(index=live.index)["count"] == 2


def test_archive_reindex_re_extracts_records_rejections_and_keeps_pages_without_archive(
    es, apart, tmp_path, monkeypatch, capsys
):
    live, store = apart
    from newsfold.cli import main

    pages = _pages("a", range(3), copies=2)
    short = {"id": "short", "url": "https://s.test/short", "html": page("Brief", [" ".join(["council"] * 30) + "."])}
    src = tmp_path / "src"
    src.mkdir()
    lines = []
    for p in [*pages, short]:
        (src / f"{p['id']}.html").write_text(p["html"])
        lines.append(json.dumps({"id": p["id"], "url": p["url"], "html": f"{p['id']}.html"}))
    (src / "pages.jsonl").write_text("\n".join(lines) + "\n")
    archive = tmp_path / "archive"
    monkeypatch.setenv("ELASTICSEARCH_URL", live.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", live.redis_url)
    monkeypatch.setenv("NEWSFOLD_INDEX", live.index)
    monkeypatch.setenv("NEWSFOLD_ES_TIMEOUT", "5")
    assert main(["ingest", str(src / "pages.jsonl"), "--archive", str(archive), "--quiet", "--workers", "1"]) == 0
    assert "7 pages" in capsys.readouterr().err
    _load(es, live, _pages("noarchive", range(5, 6), copies=1))  # ingested without the archive
    assert es.count(index=live.index)["count"] == 8
    before = _partition(es, live, [p["id"] for p in pages])
    # the workers now extract with a stricter setting: the short page is rejected this time
    monkeypatch.setenv("NEWSFOLD_ARCHIVE_DIR", str(archive))
    monkeypatch.setenv("NEWSFOLD_MIN_TOKENS", "40")
    assert main(["reindex", "--source", "archive", "--quiet", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    job_id = err.split("reindex job ")[1].split(":")[0]
    job = store.get(job_id)
    assert job.status == "done" and job.rejected == {"too_short": 1}
    ids = {d["_id"] for d in es.search(index=live.index, size=100, source=False)["hits"]["hits"]}
    assert ids == {p["id"] for p in pages} | {"noarchive5-0"}
    assert _partition(es, live, [p["id"] for p in pages]) == before
    record = es.get(index=rejections_index(live), id="short")["_source"]
    assert (record["reason"], record["job_id"], record["url"]) == ("too_short", job_id, "https://s.test/short")
    assert f"{job_id} done" in err and "pages/s" in err


def test_cli_refuses_a_reindex_while_one_is_active(live, store, monkeypatch, capsys):
    from newsfold.cli import main

    running = _new_job(store, live)
    store.start(running.id)
    monkeypatch.setenv("ELASTICSEARCH_URL", live.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", live.redis_url)
    monkeypatch.setenv("NEWSFOLD_INDEX", live.index)
    with pytest.raises(SystemExit, match=f"already running \\(job {running.id}\\)"):
        main(["reindex", "--quiet", "--workers", "0"])
    store.finish(running.id, "cancelled")
    with pytest.raises(SystemExit, match="there is no job"):
        main(["reindex", "--resume", f"reindex-{uuid.uuid4().hex[:6]}", "--quiet", "--workers", "0"])


def test_retry_failures_ingests_the_failed_pages_again(es, live, store, pool):
    job = store.create("ingest", params={"index": live.index})
    pages = _pages("t", range(1), copies=2)
    failed = [{"page_id": p["id"], "status": "rejected", "reason": "failed", "detail": "ES down"} for p in pages]
    store.record(job.id, "0", failed, payloads={p["id"]: p for p in pages})
    store.finish(job.id, "done")
    result = pool.send_task("indexer.tasks.retry_failures", kwargs={"job_id": job.id}).get(timeout=60)
    assert result["status"] == "done" and "retried 2 failed pages: 0 still rejected" in result["message"]
    got = store.get(job.id)
    assert (got.done, got.counts["new"], got.counts["duplicate"], got.counts["rejected"]) == (2, 1, 1, 0)
    assert store.failures(job.id) == (0, [])
    assert es.count(index=live.index)["count"] == 2


def test_a_page_whose_id_predates_the_id_grammar_is_a_bad_id_rejection_not_a_failed_chunk(es, live, store, pool):
    """Issue 32, item 8: an id written before ``plugin.ids`` existed (a newline in it) cannot be ingested any more;
    a reindex from text rejects that page with its reason and carries every other page."""
    from newsfold.plugin.fold.document import own_document

    payloads = _pages("g", range(2))
    _load(es, live, payloads)
    legacy = sign_page(Page(html=page("Legacy id", story(1090)), id="placeholder", url="https://old.test/x"), live)
    legacy.page_id = "legacy\nid"
    doc = own_document(legacy, cluster_id="legacy\nid", match=None, ingested="2024-01-01T00:00:00Z")
    es.index(index=live.index, id="legacy\nid", document=doc, refresh=True)
    job = _reindex(_new_job(store, live).id, pool, store, live, chunk_pages=5, grace=0.5)
    assert job.status == "done" and job.rejected == {"bad_id": 1}, (job.status, job.rejected, job.message)
    assert es.count(index=live.index)["count"] == len(payloads)
    es.indices.refresh(index=rejections_index(live))
    (record,) = es.search(index=rejections_index(live), query={"term": {"reason": "bad_id"}})["hits"]["hits"]
    assert record["_id"] == "legacy\nid" and "U+000A" in record["_source"]["detail"]


def test_a_create_of_the_new_index_retried_by_the_client_is_not_a_failure(es, live, store, pool, monkeypatch):
    """The node that created the new index died before answering; the client's retry met "already exists" and
    failed the reindex (the cluster's reindex-kill test found it). The name is the job's own: it is the same index."""
    from newsfold.indexer.jobs import reindex as reindex_module
    from newsfold.plugin.fold.index import index_body, new_index_name

    payloads = _pages("r", range(3))
    _load(es, live, payloads)
    target = new_index_name(live)
    body = index_body(live)
    es.indices.create(index=target, settings=body["settings"], mappings=body["mappings"])  # the first attempt
    monkeypatch.setattr(reindex_module, "new_index_name", lambda settings: target)
    job = _reindex(_new_job(store, live).id, pool, store, live, chunk_pages=5, grace=0.5)
    assert job.status == "done", job.message
    assert current_index(es, live) == target and es.count(index=live.index)["count"] == len(payloads)
