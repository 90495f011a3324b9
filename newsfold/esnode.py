"""A real, local, single-node Elasticsearch: fetched once from Maven Central, run on loopback.

This is what ``./run elasticsearch``, ``./run test --backend elasticsearch``,
``./run demo --elasticsearch`` and the benchmarks start. It is a development
and test node, never a production cluster (docker-compose.yml is that).
What it needs first (the pinned distribution, a Java that can run it, a
user other than root) is found or fetched by :mod:`newsfold.esinstall`.
The node runs on loopback only, with ``discovery.type: single-node``,
security off (it is local), the disk watermarks off (a nearly full
development disk must not turn the test indices read-only), a fixed heap
(``--heap``, default 2 GB of this 24 GB machine), and its data either in a
folder that survives restarts (``data=``) or in a temporary folder removed
on close. Its files are private (a 0700 data folder, umask 077), an existing
data folder of another user is refused (never chowned), and it starts with a
clean environment (:func:`node_environment`): no secret of the launcher's.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from newsfold.esinstall import SERVICE_USER, NodeError, fetch_distribution, find_java, service_user
from newsfold.ports import free_port

DEFAULT_HEAP = "2g"
#: how long :meth:`ElasticsearchNode.start` waits for the node to answer, by default (a loaded machine can take minutes)
START_TIMEOUT = 180.0


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


#: what the node inherits from the launcher's environment: nothing else (no NEWSFOLD_SECRET_KEY, no Redis or
#: Elasticsearch password, no cloud credentials); the ES_* and Java variables are set by the launcher itself
INHERITED = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ")


def node_environment(**values: str) -> dict[str, str]:
    """The node's whole environment: :data:`INHERITED` from ours (a plain ``PATH`` if unset), then ``values``."""
    env = {name: os.environ[name] for name in INHERITED if name in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(values)
    return env


def _user_name(uid: int) -> str:
    import pwd

    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


@dataclass
class ClusterSeat:
    """A node's place in a local cluster (``newsfold.escluster``): its name, transport port and its peers."""

    name: str
    transport_port: int
    seed_hosts: list[str]
    initial_masters: list[str]
    bootstrapped: bool = False  # once the cluster has formed, initial_master_nodes must go

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {"discovery.seed_hosts": self.seed_hosts}
        if not self.bootstrapped:
            out["cluster.initial_master_nodes"] = self.initial_masters
        return out


class ElasticsearchNode:
    """One real Elasticsearch node on loopback; :meth:`start` it, :meth:`close` it.

    Args:
        port: the HTTP port (0: a free one).
        data: a folder for the indices that survives restarts; None: a
            temporary one, removed on :meth:`close`.
        heap: the JVM heap (``-Xms`` = ``-Xmx``), for example ``"1g"``.
        foreground: let the node write its log to this process's output
            (``./run elasticsearch``) instead of a log file.
        die_with_parent: stop the node when this process dies, even by
            SIGKILL (tests, the demo).
        security: turn Elasticsearch's security on (users, roles and
            privileges enforced; HTTP without TLS on loopback). The built-in
            superuser is ``elastic`` with :attr:`password`, a random one.
        roles: with ``security``, roles of the file realm (``roles.yml``),
            name -> role body as the role API takes it.
        users: with ``security``, users of the file realm, name ->
            ``(password, [role, ...])``. The minimal distribution cannot
            create the security index (it lacks the analysis module), so
            users and roles live in files, not in the native realm.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        data: str | os.PathLike | None = None,
        heap: str = DEFAULT_HEAP,
        foreground: bool = False,
        die_with_parent: bool = True,
        security: bool = False,
        roles: dict | None = None,
        users: dict | None = None,
        announce=print,
        cluster: ClusterSeat | None = None,
    ) -> None:
        if not isinstance(port, int) or not 0 <= port <= 65535:
            raise ValueError(f"port must be a whole number from 0 to 65535, not {port!r}")
        if not re.fullmatch(r"\d+[mMgG]", str(heap)):
            raise ValueError(f"heap must look like 512m or 2g, not {heap!r}")
        self.port = port or free_port()
        self.heap = heap
        self.foreground = foreground
        self.die_with_parent = die_with_parent
        self.security = security
        self.password = secrets.token_urlsafe(18) if security else None
        self.roles, self.users = roles or {}, users or {}
        self.announce = announce
        self.run_dir = Path(tempfile.mkdtemp(prefix="newsfold-es-"))
        self.data = Path(data).resolve() if data else self.run_dir / "data"
        self.keep_data = data is not None
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self.pid: int | None = None  # the server JVM's (pause/resume), not the launcher's
        self.version: str | None = None
        self.log = self.run_dir / "logs" / "elasticsearch.out"
        self.cluster = cluster
        self.name = cluster.name if cluster else "newsfold-local"
        self.transport_port = cluster.transport_port if cluster else free_port()

    # -- set-up --------------------------------------------------------------------------------------------------
    def _configure(self, home: Path, owner: tuple[int, int] | None) -> None:
        config = self.run_dir / "config"
        shutil.copytree(home / "config", config)
        for sub in ("logs", "tmp"):
            (self.run_dir / sub).mkdir(mode=0o700)
        self._prepare_data(owner)
        settings: dict[str, Any] = {
            "cluster.name": "newsfold-local",
            "node.name": self.name,
            "network.host": "127.0.0.1",
            "http.port": self.port,
            "transport.port": self.transport_port,
            **(self.cluster.settings() if self.cluster else {"discovery.type": "single-node"}),
            "path.data": str(self.data),
            "path.logs": str(self.run_dir / "logs"),
            "xpack.security.enabled": self.security,
            "cluster.routing.allocation.disk.threshold_enabled": False,
        }
        if self.security:  # loopback only: no TLS, as docker-compose.yml runs it on its own network
            settings["xpack.security.http.ssl.enabled"] = False
            settings["xpack.security.transport.ssl.enabled"] = False
        (config / "elasticsearch.yml").write_text("".join(f"{k}: {json.dumps(v)}\n" for k, v in settings.items()))
        options = (config / "jvm.options").read_text()
        logs = self.run_dir / "logs"
        options = options.replace("file=gc.log", f"file={logs}/gc.log").replace(
            "-XX:ErrorFile=hs_err_pid%p.log", f"-XX:ErrorFile={logs}/hs_err_pid%p.log"
        )
        (config / "jvm.options").write_text(options + f"\n-XX:HeapDumpPath={logs}\n")
        (config / "jvm.options.d").mkdir(exist_ok=True)
        (config / "jvm.options.d" / "heap.options").write_text(f"-Xms{self.heap}\n-Xmx{self.heap}\n")
        if self.roles:
            (config / "roles.yml").write_text(json.dumps(self.roles) + "\n")  # JSON is YAML
        os.chmod(self.run_dir, 0o700)
        if owner is not None:
            for path in [self.run_dir, *self.run_dir.rglob("*")]:  # our own temporary folder, made just now
                os.chown(path, *owner, follow_symlinks=False)
            probe = subprocess.run(
                ["test", "-w", str(self.data)], user=owner[0], group=owner[1], extra_groups=[], check=False
            )
            if probe.returncode != 0:
                raise NodeError(
                    f"the node runs as the user {SERVICE_USER}, which cannot write {self.data}: "
                    "choose a --data folder it can reach (every parent folder must be enterable by others)"
                )

    def _prepare_data(self, owner: tuple[int, int] | None) -> None:
        """The data folder, private to the node's user (mode 0700); never a take-over of existing files.

        As root the node runs as :data:`SERVICE_USER`: a ``--data`` folder that does not exist is made for
        it; one that exists must be that user's already (a folder it made earlier). Nothing under it is
        ever chowned: a folder of someone else's files is refused, not handed over.
        """
        if not self.keep_data:
            self.data.mkdir(mode=0o700)  # inside the temporary run folder
            return
        if not self.data.exists():
            self.data.parent.mkdir(parents=True, exist_ok=True)
            self.data.mkdir(mode=0o700)
            if owner is not None:
                os.chown(self.data, *owner)
            return
        if not self.data.is_dir():
            raise NodeError(f"--data {self.data} is not a folder")
        uid = self.data.stat().st_uid
        if owner is not None and uid != owner[0]:
            raise NodeError(
                f"--data {self.data} belongs to {_user_name(uid)}, not to {SERVICE_USER}, the user the node runs "
                f"as; its files are never handed over: give a folder that does not exist yet (it is made for the "
                f"node) or one {SERVICE_USER} owns"
            )
        if uid == os.geteuid() or owner is not None:
            os.chmod(self.data, 0o700)

    def start(self, timeout: float = START_TIMEOUT) -> ElasticsearchNode:
        """Fetch what is missing, start the node and wait until it answers (raises :class:`NodeError`)."""
        self.launch()
        return self.wait_ready(timeout)

    def launch(self) -> None:
        """Configure the node and start its process without waiting for it (a cluster starts every node first)."""
        home = fetch_distribution(announce=self.announce)
        java = find_java()
        owner = service_user()
        if self.process is None and not (self.run_dir / "config").exists():
            self._configure(home, owner)
        env = node_environment(
            ES_JAVA_HOME=str(java),
            ES_PATH_CONF=str(self.run_dir / "config"),
            ES_TMPDIR=str(self.run_dir / "tmp"),
            HOME=str(self.run_dir),
        )
        if self.security and not (self.run_dir / "config" / "elasticsearch.keystore").exists():
            self._set_bootstrap_password(home, env, owner)
        pidfile = self.run_dir / "elasticsearch.pid"
        pidfile.unlink(missing_ok=True)
        out = None if self.foreground else open(self.log, "ab")  # noqa: SIM115 (closed after the launch)
        extra: dict[str, Any] = {"user": owner[0], "group": owner[1], "extra_groups": []} if owner else {}
        extra["umask"] = 0o077  # the node's files (indices, logs, keystore) are its user's alone
        try:
            self.process = subprocess.Popen(
                [str(home / "bin" / "elasticsearch"), "-p", str(pidfile)],
                cwd=self.run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT if out else None,
                start_new_session=True,  # Ctrl-C reaches us; we stop the node in order
                preexec_fn=_die_with_parent if self.die_with_parent and sys.platform.startswith("linux") else None,
                **extra,
            )
        finally:
            if out is not None:
                out.close()
        atexit.register(self.close)

    def wait_ready(self, timeout: float = START_TIMEOUT) -> ElasticsearchNode:
        """Wait until the node answers with a yellow or green cluster (raises :class:`NodeError`)."""
        if self.process is None:
            raise NodeError("the node has not been launched")
        pidfile = self.run_dir / "elasticsearch.pid"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise NodeError(f"Elasticsearch exited at start (code {self.process.returncode}):\n{self._tail()}")
            health = self._get("/_cluster/health?wait_for_status=yellow&timeout=1s")
            if health is not None and health.get("status") in ("yellow", "green") and pidfile.is_file():
                with contextlib.suppress(ValueError, OSError):
                    self.pid = int(pidfile.read_text().strip())
                nodes = self._get("/_nodes/_local/jvm") or {}
                for node in nodes.get("nodes", {}).values():
                    self.version = node.get("version")
                if self.pid and self.version:
                    return self
            time.sleep(0.5)
        self.close()
        raise NodeError(f"Elasticsearch did not answer at {self.url} within {timeout:.0f} s:\n{self._tail()}")

    def _set_bootstrap_password(self, home: Path, env: dict, owner: tuple[int, int] | None) -> None:
        """The ``elastic`` user's first password, through the node's keystore (never on a command line)."""
        extra: dict[str, Any] = {"user": owner[0], "group": owner[1], "extra_groups": []} if owner else {}
        extra["umask"] = 0o077
        keystore, users = str(home / "bin" / "elasticsearch-keystore"), str(home / "bin" / "elasticsearch-users")
        steps = [([keystore, "create"], None), ([keystore, "add", "--stdin", "bootstrap.password"], self.password)]
        for name, (password, roles) in self.users.items():  # passwords on stdin, never on a command line
            steps.append(([users, "useradd", name, "-r", ",".join(roles)], f"{password}\n{password}\n"))
        for args, stdin in steps:
            done = subprocess.run(args, input=stdin, env=env, capture_output=True, text=True, cwd=self.run_dir, **extra)
            if done.returncode != 0:
                tool = " ".join(Path(args[0]).name.split() + args[1:2])
                raise NodeError(f"{tool} failed: {(done.stderr or done.stdout).strip()}")

    def _get(self, path: str) -> dict | None:
        request = urllib.request.Request(self.url + path)
        if self.security:
            token = base64.b64encode(f"elastic:{self.password}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=5) as resp:
                return json.loads(resp.read())
        except (OSError, ValueError, urllib.error.URLError):
            return None

    def _tail(self, lines: int = 25) -> str:
        if self.foreground or not self.log.is_file():
            return "(see the output above)"
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(line[:400] for line in text[-lines:] if not re.match(r"\s+\w+ \w+\s+=", line))

    # -- control ---------------------------------------------------------------------------------------------------
    def pause(self) -> None:
        """SIGSTOP the server JVM: sockets stay open and nothing is answered (fault tests)."""
        os.kill(self._running_pid(), signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self._running_pid(), signal.SIGCONT)

    def _running_pid(self) -> int:
        if self.pid is None:
            raise NodeError("the node has not started")
        return self.pid

    def wait(self) -> int:
        """Block until the node exits; its exit code."""
        return self.process.wait() if self.process else 0

    def kill(self) -> None:
        """SIGKILL the server JVM, as a crash would (fault tests); :meth:`restart` brings it back on its data."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self._running_pid(), signal.SIGKILL)
        self.stop(timeout=30)

    def restart(self, timeout: float = START_TIMEOUT) -> ElasticsearchNode:
        """Stop the node if it runs and start it again on the same data, config and ports."""
        self.relaunch()
        return self.wait_ready(timeout)

    def relaunch(self) -> None:
        """:meth:`restart` without waiting (a cluster starts every node again before waiting for any)."""
        self.stop()
        if self.cluster is not None:
            self.cluster.bootstrapped = True  # cluster.initial_master_nodes is for the first start only
            config = self.run_dir / "config" / "elasticsearch.yml"
            lines = config.read_text().splitlines()
            config.write_text("".join(f"{line}\n" for line in lines if not line.startswith("cluster.initial_master")))
        self.launch()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the node's process in order (SIGTERM, then SIGKILL after ``timeout``); its folders stay."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            if self.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGCONT)  # a paused server cannot stop
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        self.pid = None

    def close(self, timeout: float = 60.0) -> None:
        """Stop the node in order (SIGTERM, then SIGKILL after ``timeout``); remove its temporary folders."""
        self.stop(timeout)
        if self.run_dir.exists():
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def __enter__(self) -> ElasticsearchNode:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
