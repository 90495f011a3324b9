"""Local Celery worker processes and a driver that feeds them batches."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial

from celery import Celery

from newsfold.embedded import die_with_parent
from newsfold.indexer.queue import drive
from newsfold.plugin.settings import Settings, settings_env
from newsfold.state import patiently
from newsfold.state.jobs import JobStore, failed_batch

INGEST_TASK = "indexer.tasks.ingest_batch"

log = logging.getLogger(__name__)


class LocalWorkers:
    """``n`` real Celery worker processes (solo pool each) on this machine, restarted when one dies.

    A solo worker that dies (a page crashed the parser, the OOM killer) takes
    its process with it; a supervisor thread starts another in its place, at
    most ``max_restarts`` times in all, so a batch sent again (by a job's
    heartbeat check) finds a worker and ``indexer.guard`` can name the page.
    """

    def __init__(
        self,
        settings: Settings,
        n: int = 2,
        *,
        loglevel: str = "WARNING",
        app_module: str = "newsfold.indexer.celery_app",
        max_restarts: int = 20,
    ) -> None:
        self.env = {**os.environ, **settings_env(settings)}
        self.loglevel = loglevel
        self.app_module = app_module
        self.max_restarts = max_restarts
        self.restarts = 0
        self.processes = [self._spawn(i) for i in range(n)]
        self._stopping = threading.Event()
        self._supervisor = threading.Thread(target=self._supervise, name="worker-supervisor", daemon=True)
        self._supervisor.start()

    def _spawn(self, i: int) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                self.app_module,
                "worker",
                "--pool=solo",
                f"--hostname=newsfold{i + 1}-{os.getpid()}@%h",
                f"--loglevel={self.loglevel}",
                "--without-gossip",
                "--without-mingle",
            ],
            env=self.env,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )

    def _supervise(self, every: float = 0.5) -> None:
        given_up: set[int] = set()
        while not self._stopping.wait(every):
            for i, p in enumerate(self.processes):
                if p.poll() is None or self._stopping.is_set() or p.pid in given_up:
                    continue
                if self.restarts >= self.max_restarts:
                    given_up.add(p.pid)
                    log.error(
                        "a Celery worker exited (code %s); %d restarts already, no more", p.returncode, self.restarts
                    )
                    continue
                log.warning("a Celery worker exited (code %s); starting another in its place", p.returncode)
                self.restarts += 1
                self.processes[i] = self._spawn(i)

    def wait_ready(self, app: Celery, timeout: float = 60.0) -> None:
        """Block until every worker answers a ping."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for p in self.processes:
                if p.poll() is not None:
                    raise RuntimeError(f"a Celery worker exited at start (exit code {p.returncode})")
            replies = app.control.ping(timeout=0.5) or []
            mine = [r for r in replies if any(f"-{os.getpid()}@" in name for name in r)]
            if len(mine) >= len(self.processes):
                return
        raise RuntimeError(f"the Celery workers did not start within {timeout:.0f} s")

    def stop(self) -> None:
        self._stopping.set()
        self._supervisor.join(timeout=5)
        for p in self.processes:
            if p.poll() is None:
                p.terminate()
        for p in self.processes:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()

    def __enter__(self) -> LocalWorkers:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


MAX_PAGES_IN_FLIGHT = 1_600  # pages queued at once: 16 batches of 100 (the default size), 64 of 25


def in_flight_batches(batch_size: int) -> int:
    """How many batches of ``batch_size`` pages to keep queued (at least 4)."""
    return max(4, MAX_PAGES_IN_FLIGHT // max(1, batch_size))


def run_batches(
    app: Celery,
    batches: Iterable[list[dict] | tuple[str, list[dict]]],
    *,
    index: str | None = None,
    on_done: Callable[[list[dict]], None] = lambda outcomes: None,
    max_in_flight: int = 64,
    poll: float = 0.05,
    collect: bool = True,
    store: JobStore | None = None,
    job_id: str | None = None,
    on_idle: Callable[[], None] | None = None,
    max_outage: float = 300.0,
    on_wait: Callable[[str | None], None] | None = None,
) -> list[dict]:
    """Queue batches for the workers and collect one outcome per page.

    ``batches`` may be a lazy iterator: at most ``max_in_flight`` batches are
    queued at a time, so an archive of millions of pages streams through in
    constant memory (pass ``collect=False`` and consume outcomes in
    ``on_done``). A batch whose task fails for good (for example Elasticsearch
    stayed down through all retries) yields a ``rejected`` outcome with reason
    ``failed`` for each of its pages, so nothing is silently dropped.

    With a job (``store`` and ``job_id``), batches are ``(key, pages)`` pairs
    (plain lists are numbered from 0): the workers count each batch into the
    job once under its key, the checkpoint a resumed run skips; a batch that
    failed for good is counted here, with its pages kept for a retry; and a
    batch whose worker died is sent again at once (see ``indexer.queue.drive``).
    A Redis outage is waited out for up to ``max_outage`` seconds (``on_wait``
    hears "waiting for Redis" while it lasts).
    """
    outcomes: list[dict] = []
    tracked = store is not None and job_id is not None

    def units():
        for n, batch in enumerate(batches):
            yield batch if isinstance(batch, tuple) else (str(n), batch)

    def send(key: str, batch: list[dict]):
        kwargs = {"job_id": job_id, "key": key} if tracked else {}
        return app.send_task(INGEST_TASK, args=[batch, index], kwargs=kwargs)

    def on_result(key: str, batch: list[dict], got, error) -> None:
        if error is not None:
            got = failed_batch(batch, error)
            if tracked:
                patiently(
                    lambda: store.record(job_id, key, got, payloads={str(p.get("id")): p for p in batch}),
                    what=f"recording the failed batch {key}",
                )
        if collect:
            outcomes.extend(got)
        on_done(got)

    drive(
        units(),
        send,
        on_result,
        max_in_flight=max_in_flight,
        poll=poll,
        alive=partial(store.alive, job_id) if tracked else None,
        died=partial(store.died, job_id) if tracked else None,
        on_idle=on_idle,
        max_outage=max_outage,
        on_wait=on_wait,
    )
    return outcomes
