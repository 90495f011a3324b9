"""An ingest job waits out a Redis outage that strikes as its last batch comes back (CI saw it fail there)."""

from __future__ import annotations

import time

import pytest

from newsfold.embedded import EmbeddedRedis
from newsfold.state import build_redis
from newsfold.state.jobs import JobStore

pytestmark = pytest.mark.slow

_sleep = time.sleep  # the real one: the fixture below patches ``time.sleep`` (one module for all)


@pytest.fixture
def server():
    redis_server = EmbeddedRedis()
    yield redis_server
    redis_server.close()


@pytest.fixture
def store(server):
    client = build_redis(server.url)
    yield JobStore(client)
    client.close()


@pytest.fixture
def outage(server, monkeypatch):
    """``begin()`` stops Redis; it is started again in the first wait for it (on this thread: a server
    started from another thread would die with it), so the test sees whether anything waited."""
    import newsfold.state

    waits: list[float] = []
    down = [False]

    def wait(seconds: float) -> None:
        if not down[0]:  # stopping the server waits too
            _sleep(seconds)
            return
        waits.append(seconds)
        if len(waits) == 1:
            server._start()  # its own short sleeps come back here, as later waits
        _sleep(min(seconds, 0.1))

    monkeypatch.setattr(newsfold.state.time, "sleep", wait)

    def begin() -> None:
        server._stop()
        down[0] = True

    yield begin
    monkeypatch.undo()
    if server.process.poll() is not None:
        server._start()


def test_a_job_is_marked_done_when_redis_is_away_as_its_batches_end(tmp_path, store, outage, settings, monkeypatch):
    from newsfold.indexer.jobs import ingest

    (tmp_path / "page.html").write_text("<html><body><p>One page.</p></body></html>")
    job = ingest.create_ingest(store, [str(tmp_path)], index=settings.index, batch_size=10)
    # the batches are done (none sent: this test is about what follows them) and Redis goes away
    monkeypatch.setattr(ingest, "run_batches", lambda *a, **k: outage())
    run = ingest.IngestRun(job, app=None, store=store, settings=settings, on_outcome=lambda o: None)
    final = run.run()
    assert final.status == "done"
    assert store.require(job.id).status == "done"


def test_a_rejected_page_seen_while_redis_is_away_does_not_end_the_job_early(tmp_path, store, outage, settings):
    """A page rejected at the source is recorded from inside the batch generator: a raise there ended it."""
    from newsfold.indexer.jobs import ingest

    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "a-big.html").write_bytes(b"<html><body>" + b"x" * 4096 + b"</body></html>")
    (folder / "b-good.html").write_text("<html><body><p>A page after the rejected one.</p></body></html>")
    job = ingest.create_ingest(store, [str(folder)], index=settings.index, batch_size=1)
    outcomes: list[dict] = []
    run = ingest.IngestRun(job, app=None, store=store, settings=settings.replace(max_page_bytes=1024),
                           on_outcome=outcomes.append)  # fmt: skip
    outage()
    batches = list(run._batches(1))
    assert [o["reason"] for o in outcomes] == ["too_large"]
    assert len(batches) == 1  # the good page still reaches its batch
