"""Race-free under near-real-time search: the claim of docs/concurrency.md, tested through tests/nrt_proxy.py."""

from __future__ import annotations

import random
import threading

import pytest

from newsfold.indexer.celery_app import make_celery
from newsfold.indexer.dispatch import run_batches
from newsfold.plugin import batch
from newsfold.plugin.client import build_client
from newsfold.plugin.document import Page
from newsfold.plugin.index import ensure_index
from newsfold.plugin.signing import sign_page
from newsfold.workers import LocalWorkers
from tests.nrt_proxy import NrtProxy, wait_until
from tests.pages import page, story


@pytest.fixture
def nrt():
    proxy = NrtProxy(refresh_interval=0.3)
    yield proxy
    proxy.close()


@pytest.fixture
def near(nrt, settings):
    """Settings, a client and an index on the near-real-time harness."""
    live = settings.replace(elasticsearch_url=nrt.url)
    client = build_client(live)
    ensure_index(client, live)
    yield live, client
    client.close()


def _copy(settings, page_id: str, paras: list[str], site: str):
    html = page("Wire story", paras, site=site)
    return sign_page(Page(html=html, url=f"https://{site}/{page_id}", id=page_id), settings)


def _clusters(client, settings, ids):
    docs = client.mget(index=settings.index, ids=ids, source=["newsfold.cluster_id"])["docs"]
    return {d["_id"]: d["_source"]["newsfold"]["cluster_id"] for d in docs}


def test_the_harness_shows_writes_to_searches_only_after_a_refresh(nrt, near):
    live, client = near
    nrt.auto = False
    client.index(index=live.index, id="d1", document={"title": "harbour strike"})
    assert client.get(index=live.index, id="d1")["found"]  # GET is realtime
    assert client.count(index=live.index)["count"] == 0  # searches wait for a refresh
    assert client.search(index=live.index, query={"match": {"title": "harbour"}})["hits"]["hits"] == []
    nrt.refresh()
    assert client.count(index=live.index)["count"] == 1
    nrt.auto = True
    client.index(index=live.index, id="d2", document={"title": "harbour"}, refresh="wait_for")
    assert client.count(index=live.index)["count"] == 2  # wait_for returns once a refresh made it visible


def _race(nrt, live, client, first, second, *, index: str | None = None) -> None:
    """``second`` looks up while ``first`` waits for the refresh that makes it searchable: the race."""
    nrt.refresh()
    nrt.auto = False
    errors: list[BaseException] = []

    def run(p):
        try:
            batch.ingest([p], client=client, settings=live, index=index)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    a = threading.Thread(target=run, args=(first,))
    a.start()
    assert wait_until(lambda: nrt.pending() >= 1)  # a's write is in, not yet searchable
    b = threading.Thread(target=run, args=(second,))
    b.start()
    assert wait_until(lambda: nrt.pending() >= 2)  # b looked up and wrote without seeing a
    nrt.auto = True
    nrt.refresh()
    a.join(60)
    b.join(60)
    assert not errors, errors
    assert not a.is_alive() and not b.is_alive()


def test_without_reconcile_racing_copies_split(nrt, near, monkeypatch):
    live, client = near
    monkeypatch.setattr(batch, "reconcile", lambda state, *, client, settings: None)
    paras = story(60)
    _race(nrt, live, client, _copy(live, "r-a", paras, "a.example"), _copy(live, "r-b", paras, "b.example"))
    labels = _clusters(client, live, ["r-a", "r-b"])
    assert labels["r-a"] != labels["r-b"], "the harness did not produce the race"


def test_with_reconcile_racing_copies_fold(nrt, near):
    live, client = near
    paras = story(61)
    _race(nrt, live, client, _copy(live, "f-a", paras, "a.example"), _copy(live, "f-b", paras, "b.example"))
    labels = _clusters(client, live, ["f-a", "f-b"])
    assert labels["f-a"] == labels["f-b"] == "f-a"


def test_host_index_copies_racing_fold(nrt, near):
    from newsfold.plugin import component_template, sign_text

    live, client = near
    client.cluster.put_component_template(name="nrt-newsfold", **component_template(live))
    client.indices.put_index_template(
        name="nrt-host", index_patterns=["nrt-host*"], composed_of=["nrt-newsfold"],
        template={"mappings": {"properties": {"headline": {"type": "text"}, "section": {"type": "keyword"}}}},
    )
    client.indices.create(index="nrt-host")
    text = "\n\n".join(story(62))
    for i in ("h-a", "h-b"):
        client.index(index="nrt-host", id=i, document={"headline": "Wire", "section": i})
    first, second = (sign_text(text, page_id=i, settings=live) for i in ("h-a", "h-b"))
    _race(nrt, live, client, first, second, index="nrt-host")
    docs = {d["_id"]: d["_source"] for d in client.mget(index="nrt-host", ids=["h-a", "h-b"])["docs"]}
    assert docs["h-a"]["newsfold"]["cluster_id"] == docs["h-b"]["newsfold"]["cluster_id"]
    assert (docs["h-a"]["section"], docs["h-b"]["section"]) == ("h-a", "h-b")


@pytest.mark.slow
def test_real_workers_fold_racing_copies_under_near_real_time_search(nrt, near, redis_url):
    live, client = near
    live = live.replace(redis_url=redis_url)
    rng = random.Random(5)
    payloads = []
    for s in range(3):
        paras = story(170 + s)
        for c in range(5):
            payloads.append({"id": f"n{s}-c{c}", "html": page(f"Headline {s} v{c}", paras, site=f"site{c}.test")})
    rng.shuffle(payloads)
    app = make_celery(live)
    with LocalWorkers(live, 2) as workers:
        workers.wait_ready(app)
        outcomes = run_batches(app, [[p] for p in payloads], index=live.index)  # one page per task: they race
    assert len(outcomes) == 15 and {o["status"] for o in outcomes} <= {"new", "duplicate"}
    labels = _clusters(client, live, [p["id"] for p in payloads])
    for s in range(3):
        assert len({labels[f"n{s}-c{c}"] for c in range(5)}) == 1, labels
    assert len(set(labels.values())) == 3
    assert nrt.refreshes > 3  # searches really waited for refreshes
