"""Local Celery worker processes for the CLI and the tests, restarted when one dies."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time

from celery import Celery

from newsfold.embedded import die_with_parent
from newsfold.plugin.settings import Settings, settings_env

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
