"""Local Celery worker processes and a driver that feeds them batches."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable

from celery import Celery

from newsfold.embedded import die_with_parent
from plugin.settings import Settings, settings_env

INGEST_TASK = "indexer.tasks.ingest_batch"


class LocalWorkers:
    """``n`` real Celery worker processes (solo pool each) on this machine."""

    def __init__(self, settings: Settings, n: int = 2, *, loglevel: str = "WARNING") -> None:
        env = {**os.environ, **settings_env(settings)}
        self.processes = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "indexer.celery_app",
                    "worker",
                    "--pool=solo",
                    f"--hostname=newsfold{i + 1}-{os.getpid()}@%h",
                    f"--loglevel={loglevel}",
                    "--without-gossip",
                    "--without-mingle",
                ],
                env=env,
                preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
            )
            for i in range(n)
        ]

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


def run_batches(
    app: Celery,
    batches: Iterable[list[dict]],
    *,
    index: str | None = None,
    on_done: Callable[[list[dict]], None] = lambda outcomes: None,
    max_in_flight: int = 64,
    poll: float = 0.05,
    collect: bool = True,
) -> list[dict]:
    """Queue batches for the workers and collect one outcome per page.

    ``batches`` may be a lazy iterator: at most ``max_in_flight`` batches are
    queued at a time, so an archive of millions of pages streams through in
    constant memory (pass ``collect=False`` and consume outcomes in
    ``on_done``). A batch whose task fails for good (for example Elasticsearch
    stayed down through all retries) yields a ``rejected`` outcome with reason
    ``failed`` for each of its pages, so nothing is silently dropped.
    """
    source = iter(batches)
    pending: list = []
    outcomes: list[dict] = []
    exhausted = False
    while pending or not exhausted:
        while not exhausted and len(pending) < max_in_flight:
            batch = next(source, None)
            if batch is None:
                exhausted = True
                break
            pending.append((app.send_task(INGEST_TASK, args=[batch, index]), batch))
        still = []
        for result, batch in pending:
            if not result.ready():
                still.append((result, batch))
                continue
            if result.successful():
                got = result.get(disable_sync_subtasks=False)
            else:
                detail = f"{type(result.result).__name__}: {result.result}"
                got = [
                    {"page_id": str(p.get("id")), "status": "rejected", "reason": "failed", "detail": detail}
                    for p in batch
                ]
            result.forget()
            if collect:
                outcomes.extend(got)
            on_done(got)
        if len(still) == len(pending) and still:
            time.sleep(poll)
        pending = still
    return outcomes
