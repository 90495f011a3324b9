"""Peak memory and wall time of every hostile input of the second security audit (issue 24), each in its own process.

    python benchmarks/hostile_bench.py [--scale 1] [--timeout 5] [--unguarded] [--no-ingest] [--workers 2] [--json PATH]

The corpus is built by ``tests/hostile.py`` (nothing binary is committed) at
the audit's sizes (``--scale`` shrinks or grows them): a WARC of 8 records
whose ``Content-Encoding: gzip`` bodies inflate to 60 MB each around 2 good
pages (and the same with chunked transfer), a folder with a ``.html.gz``
inflating to 60 MB, a page list with a 200 MB line, and pages whose markup
makes libxml2 work for minutes (200,000 attributes on one element, ...).

Each input runs in a fresh subprocess, which reports its own peak resident
memory and wall time. The peak is the process's ``VmHWM`` (Linux), which
starts afresh at ``exec``; ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is
reported beside it, but Linux carries the parent's peak at the fork into it,
so it is only an upper bound (it reads the size of this script, or of
pytest, for the small inputs). With ``--scale`` other than 1 the page limit
(``NEWSFOLD_MAX_PAGE_BYTES``) is scaled with the inputs.

- archives and lists are read as the ingest coordinator reads them
  (``iter_source`` with ``NEWSFOLD_MAX_PAGE_BYTES``), counting pages and
  rejections by reason;
- pages go through a worker's signing step (``indexer.pages.sign_batch``)
  under ``NEWSFOLD_PAGE_TIMEOUT=--timeout``; ``--unguarded`` raises the
  markup limits out of the way, to show what the timeout alone does;
- the bomb WARC, and a page list of 4 pages each with a 9 MB attribute
  around 2 good pages, also go through ``newsfold ingest`` end to end
  (embedded servers, ``--workers`` worker processes, default 2; skip with
  ``--no-ingest``): the coordinator's and every worker's peak RSS (VmHWM,
  polled from ``/proc``; ``worker`` is the largest, ``workers`` lists each)
  and how many pages were indexed. Target: every one under 300 MB, every
  good page indexed (the attribute pages are articles too: their long values
  are emptied before parsing, ``NEWSFOLD_MAX_ATTRIBUTE_CHARS``).

    python benchmarks/hostile_bench.py --json hostile.json     # the figures in docs are from this
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the corpus builders live in tests/hostile.py
    sys.path.insert(0, str(ROOT))

TARGET_RSS_MB = 300.0
MB = 1024 * 1024


def _peaks_self_mb() -> dict[str, float]:
    """This process's peak RSS: ``VmHWM`` (this program's own) and ``ru_maxrss`` (may hold the parent's)."""
    ru_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes
    peak = ru_maxrss
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return {"peak_rss_mb": peak, "ru_maxrss_mb": ru_maxrss}


# ---------------------------------------------------------------- children (one input each)


def child_read(path: str) -> dict:
    from newsfold.indexer.records import SourceStats
    from newsfold.indexer.sources.base import iter_source
    from newsfold.plugin.settings import Settings

    settings = Settings.from_env()
    stats = SourceStats()
    outcomes: Counter = Counter()
    started = time.perf_counter()
    for record in iter_source(path, stats=stats, max_bytes=settings.max_page_bytes):
        outcomes[record.reason if record.error else "page"] += 1
    return {"wall_s": time.perf_counter() - started, "outcomes": dict(outcomes)}


def child_page(path: str) -> dict:
    from newsfold.indexer.pages import sign_batch
    from newsfold.plugin.settings import Settings

    settings = Settings.from_env().replace(repeated_lines=False)
    html = Path(path).read_bytes()
    started = time.perf_counter()
    signed, rejected, _ = sign_batch([{"id": Path(path).stem, "html": html.decode()}], settings, stats=None)
    outcome = rejected[0].reason if rejected else "signed"
    return {"wall_s": time.perf_counter() - started, "outcomes": {outcome: 1}, "page_mb": len(html) / MB}


def run_child(kind: str, path: Path, env: dict) -> dict:
    done = subprocess.run([sys.executable, __file__, "--child", kind, str(path)], capture_output=True, text=True,
                          env=env, timeout=1800)  # fmt: skip
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"rc {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- end to end


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                children.setdefault(int(stat[stat.rindex(")") + 2 :].split()[1]), []).append(int(entry.name))
            except (OSError, ValueError):
                continue
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _hwm_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        return None
    return None


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def ingest(path: Path, env: dict, workdir: Path, *, workers: int = 1, command: str = "ingest") -> dict:
    """``newsfold ingest PATH`` (or ``cluster``: the workers read the page files) with embedded servers and ``workers``
    workers; peak RSS per role, polled from /proc (``worker`` the largest; ``workers_peak_rss_mb`` each, by pid)."""
    out = workdir / f"outcomes-{command}-{path.stem}.jsonl"
    env = {k: v for k, v in env.items() if k not in ("ELASTICSEARCH_URL", "REDIS_URL")}
    started = time.perf_counter()
    argv = [sys.executable, "-m", "newsfold.cli", command, str(path), "--out", str(out), "--quiet"]
    proc = subprocess.Popen([*argv, "--workers", str(workers)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)  # fmt: skip
    peaks: dict[str, float] = {}
    per_worker: dict[int, float] = {}
    while proc.poll() is None:
        for pid in [proc.pid, *_descendants(proc.pid)]:
            cmd = _cmd(pid)
            role = ("coordinator" if pid == proc.pid else "osmem-server" if "osmem" in cmd else
                    "redis" if "redis" in cmd or "valkey" in cmd else "worker")  # fmt: skip
            mb = _hwm_mb(pid)
            if mb is not None:
                peaks[role] = max(peaks.get(role, 0.0), mb)
                if role == "worker":
                    per_worker[pid] = max(per_worker.get(pid, 0.0), mb)
        time.sleep(0.1)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    wall = time.perf_counter() - started
    outcomes: Counter = Counter()
    if out.exists():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            outcomes[row.get("reason") or row.get("status")] += 1
    result = {"wall_s": wall, "rc": proc.returncode, "outcomes": dict(outcomes), "peak_rss_mb": peaks,
              "workers_peak_rss_mb": {str(pid): mb for pid, mb in sorted(per_worker.items())}}  # fmt: skip
    if proc.returncode != 0:
        result["error"] = stderr.strip().splitlines()[-1] if stderr.strip() else f"rc {proc.returncode}"
    return result


def end_to_end(name: str, path: Path, env: dict, folder: Path, *, workers: int, good: int) -> dict:
    """:func:`ingest` of one input, printed against the target: every process under 300 MB, ``good`` indexed."""
    got = ingest(path, env, folder, workers=workers)
    peaks = got["peak_rss_mb"]
    indexed = sum(n for k, n in got["outcomes"].items() if k in ("new", "duplicate", "unchanged"))
    print(f"\n`newsfold ingest` of {name}: rc {got['rc']}, {got['wall_s']:.1f} s, {got['outcomes']}")
    print("peak RSS (VmHWM, MB): " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(peaks.items()))
          + "; each worker: " + ", ".join(f"{v:.0f}" for v in got["workers_peak_rss_mb"].values()))  # fmt: skip
    worst = max(peaks.get("coordinator", 0.0), peaks.get("worker", 0.0))
    got["target_met"] = ok = worst < TARGET_RSS_MB and indexed == good
    print(f"target: coordinator and every worker under {TARGET_RSS_MB:.0f} MB and {good} pages indexed: "
          f"{'met' if ok else 'NOT met'} ({worst:.0f} MB, {indexed} indexed)")  # fmt: skip
    return got


# ---------------------------------------------------------------- main


def build_corpus(folder: Path, scale: float) -> tuple[dict[str, Path], dict[str, Path]]:
    from tests import hostile

    size = int(60 * MB * scale)
    archives = {
        "bomb WARC (8 x gzip)": hostile.bomb_warc(folder / "bombs.warc.gz", bombs=8, inflated=size),
        "bomb WARC, chunked": hostile.bomb_warc(folder / "chunked.warc.gz", bombs=8, inflated=size, chunked=True),
        ".html.gz bomb folder": hostile.bomb_folder(folder / "gz", inflated=size),
        "JSONL 200 MB line": hostile.long_line_jsonl(folder / "jsonl", line_bytes=int(200 * MB * scale)),
        "JSONL of 9 MB attributes": hostile.long_attribute_jsonl(folder / "attributes", chars=int(9 * MB * scale)),
    }
    pages = {}
    special = {
        "control_title": hostile.control_title_page(),
        "attribute_9mb": hostile.long_attribute_page(int(9 * MB * scale)),
    }
    for name, html in {**hostile.hostile_pages(scale), **special}.items():
        pages[name] = folder / f"{name}.html"
        pages[name].write_text(html, encoding="utf-8")
    return archives, pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="sizes relative to the audit's (default 1)")
    parser.add_argument("--timeout", type=float, default=5.0, help="NEWSFOLD_PAGE_TIMEOUT for the pages (s)")
    parser.add_argument("--unguarded", action="store_true", help="markup limits out of the way: the timeout alone")
    parser.add_argument("--no-ingest", action="store_true", help="skip the end-to-end `newsfold ingest` run")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the end-to-end runs (default 2)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, path = args.child
        result = child_read(path) if kind == "read" else child_page(path)
        result.update(_peaks_self_mb())
        print(json.dumps(result))
        return 0

    env = {**os.environ, "NEWSFOLD_PAGE_TIMEOUT": f"{args.timeout:g}", "PYTHONPATH": str(ROOT)}
    if args.scale != 1:
        from newsfold.plugin.settings import Settings

        env["NEWSFOLD_MAX_PAGE_BYTES"] = str(max(1024, int(Settings.from_env().max_page_bytes * args.scale)))
    if args.unguarded:
        env.update(NEWSFOLD_MAX_ATTRIBUTES="1000000000", NEWSFOLD_MAX_DEPTH="1000000000",
                   NEWSFOLD_MAX_ELEMENTS="1000000000")  # fmt: skip
    report: dict = {"scale": args.scale, "timeout_s": args.timeout, "unguarded": args.unguarded, "inputs": {}}
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as tmp:
        folder = Path(tmp)
        archives, pages = build_corpus(folder, args.scale)
        print(f"{'input':28} {'on disk':>9} {'peak RSS':>9} {'ru_maxrss':>9} {'wall':>8}  outcomes")
        rows = [(name, path, "read") for name, path in archives.items()]
        rows += [(f"page: {name}", path, "page") for name, path in pages.items()]
        for name, path, kind in rows:
            files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            if path.name == "pages.jsonl":  # a page list: its page files beside it too
                files = [p for p in path.parent.rglob("*") if p.is_file()]
            disk = sum(p.stat().st_size for p in files)
            got = run_child(kind, path, env)
            got["on_disk_mb"] = disk / MB
            report["inputs"][name] = got
            if "error" in got:
                print(f"{name:28} {disk / MB:8.2f}M  failed: {got['error']}")
                continue
            print(f"{name:28} {disk / MB:8.2f}M {got['peak_rss_mb']:8.0f}M {got['ru_maxrss_mb']:8.0f}M "
                  f"{got['wall_s']:7.2f}s  {got['outcomes']}")  # fmt: skip
        if not args.no_ingest:
            report["ingest"] = end_to_end("the bomb WARC", archives["bomb WARC (8 x gzip)"], env, folder,
                                          workers=args.workers, good=2)  # fmt: skip
            report["ingest_attributes"] = end_to_end("the 9 MB-attribute list", archives["JSONL of 9 MB attributes"],
                                                     env, folder, workers=args.workers, good=6)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
