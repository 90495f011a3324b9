"""Small helpers shared by the benchmark scripts: percentiles, process memory and CPU, the machine.

Linux only: process figures come from ``/proc`` (no psutil dependency).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def percentiles(values: list[float], points=(50, 95, 99)) -> dict[str, float]:
    """``{"p50": ..., "p95": ..., "p99": ..., "mean": ..., "n": ...}`` of ``values`` (nan when empty)."""
    if not values:
        return {**{f"p{p}": float("nan") for p in points}, "mean": float("nan"), "n": 0}
    arr = np.asarray(values, dtype=float)
    out = {f"p{p}": float(np.percentile(arr, p)) for p in points}
    out["mean"] = float(arr.mean())
    out["n"] = len(values)
    return out


def _status_kb(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss_mb(pid: int) -> float | None:
    """Peak resident memory (VmHWM) of a live process, MB; None when unreadable."""
    kb = _status_kb(pid, "VmHWM")
    return kb / 1024 if kb is not None else None


def rss_mb(pid: int) -> float | None:
    """Current resident memory (VmRSS) of a live process, MB."""
    kb = _status_kb(pid, "VmRSS")
    return kb / 1024 if kb is not None else None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a live process has used so far (its own, not its children's)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # the command name (field 2) may hold spaces: split after its closing parenthesis
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, summed over cores (``/proc/stat``)."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    total = sum(values[:8])  # guest time is already counted in user time
    idle = values[3] + values[4]  # idle + iowait
    return (total - idle) / _CLOCK_TICKS, total / _CLOCK_TICKS


@dataclass
class Proc:
    """A child process of this one, named by what it runs."""

    pid: int
    name: str


def child_processes(parent: int | None = None) -> list[Proc]:
    """Direct children of ``parent`` (default: this process), named osmem/redis/celery/python/..."""
    parent = os.getpid() if parent is None else parent
    found: list[Proc] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            if ppid != parent:
                continue
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        if "osmem-server" in cmd:
            name = "osmem-server"
        elif "redis-server" in cmd or "valkey" in cmd:
            name = "redis"
        elif "celery" in cmd:
            name = "celery worker"
        else:
            name = cmd.split(" ")[0].rsplit("/", 1)[-1] or "?"
        found.append(Proc(int(entry.name), name))
    return sorted(found, key=lambda p: p.pid)


def machine() -> dict:
    """Date, host CPU, core count, memory, load average, Python and the git commit of the tree."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    with contextlib.suppress(ValueError, OSError, AttributeError):
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    try:
        here = Path(__file__).resolve().parent

        def git(*args: str) -> str:
            return subprocess.run(["git", *args], capture_output=True, text=True, cwd=here, check=False).stdout.strip()

        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
        commit = commit + ("+uncommitted changes" if dirty else "")
    except OSError:
        commit = "?"
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": mem_gb,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "commit": commit or "?",
    }


def fmt_ms(stats: dict[str, float]) -> str:
    """``p50 1.2 / p95 3.4 / p99 5.6 ms`` from :func:`percentiles` output."""
    parts = [f"{k} {stats[k]:.1f}" for k in ("p50", "p95", "p99") if k in stats]
    return " / ".join(parts) + " ms"


def write_json(path: Path | None, result: dict) -> None:
    """Write a benchmark's result as indented JSON when a path was given (``--json``)."""
    if path is not None:
        path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def env_settings(program: str):
    """newsfold's settings from the environment, or None after saying on stderr which variable is wrong."""
    import sys

    from newsfold.plugin.settings import Settings

    try:
        return Settings.from_env()
    except ValueError as exc:
        print(f"{program}: configuration error: {exc}", file=sys.stderr)
        return None


def headline(name: str, m: dict) -> str:
    """The first line of a benchmark's report: what ran, when, on which machine, at which commit."""
    return (
        f"newsfold {name} benchmark, {m['date']}, {m['cores']} cores ({m['cpu']}), {m['memory_gb']} GB, "
        f"load average at start {m['load_average_at_start']}, commit {m['commit']}"
    )


# ---------------------------------------------------------------- a real Elasticsearch node (--elasticsearch)
_NODE = None  # the node started by elasticsearch_node(), if any


def add_elasticsearch_flag(parser, *, default_heap: str = "2g") -> None:
    """``--elasticsearch`` (start a real local node for this run) and ``--es-heap``."""
    parser.add_argument(
        "--elasticsearch",
        action="store_true",
        help="start a real local Elasticsearch node (newsfold.esnode) for this run and stop it at the end, "
        "instead of the embedded stand-in (ignored when ELASTICSEARCH_URL is set)",
    )
    parser.add_argument("--es-heap", default=default_heap, help=f"heap of that node (default {default_heap})")


@contextlib.contextmanager
def elasticsearch_node(enabled: bool, *, heap: str = "2g"):
    """Start a real node when ``enabled`` (and ELASTICSEARCH_URL is unset); yield it (or None); always close it.

    While the node runs, ``ELASTICSEARCH_URL`` points at it, so ``Settings.from_env()``
    and every child process (Celery workers, ``newsfold ingest``) use it.
    """
    import sys

    global _NODE
    if not enabled or os.environ.get("ELASTICSEARCH_URL"):
        if enabled:
            print("ELASTICSEARCH_URL is set: using it, no node started", file=sys.stderr)
        yield None
        return
    from newsfold.esnode import ElasticsearchNode

    node = ElasticsearchNode(heap=heap, announce=lambda msg: print(msg, file=sys.stderr))
    try:
        node.start()
        print(
            f"real Elasticsearch {node.version} at {node.url}, server JVM pid {node.pid}, heap {heap}", file=sys.stderr
        )
        os.environ["ELASTICSEARCH_URL"] = node.url
        _NODE = node
        yield node
    finally:
        _NODE = None
        if os.environ.get("ELASTICSEARCH_URL") == node.url:
            del os.environ["ELASTICSEARCH_URL"]
        node.close()


def server_processes() -> list[Proc]:
    """The search server processes whose CPU this run can read: the embedded stand-in, or the node it started."""
    found = [p for p in child_processes() if p.name == "osmem-server"]
    if _NODE is not None and _NODE.pid:
        found.append(Proc(_NODE.pid, "elasticsearch"))
    return found


def server_pid() -> int | None:
    """The pid of the one search server measured here (stand-in or started node); None on an external cluster."""
    servers = server_processes()
    return servers[0].pid if servers else None


def server_description(url: str | None) -> str:
    """What the benchmark ran against, for the report."""
    if _NODE is not None:
        return f"Elasticsearch {_NODE.version} (real local node started by the benchmark, heap {_NODE.heap})"
    return url or "?"


def parse_sizes(text: str, program: str) -> list[int] | None:
    """``--sizes`` (comma-separated, distinct, positive, ascending integers), or None after saying what is wrong."""
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        print(f"{program}: --sizes must be comma-separated integers, got {text!r}", file=sys.stderr)
        return None
    if not sizes or sizes != sorted(sizes) or sizes[0] < 1 or len(set(sizes)) != len(sizes):
        print(f"{program}: --sizes must be distinct, positive and ascending, got {text!r}", file=sys.stderr)
        return None
    return sizes
