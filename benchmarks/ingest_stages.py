"""The worker's path stage by stage, in this process (the fourth phase of ``ingest_bench.py``).

Each call a Celery worker makes for a batch is timed on its own, with the
wall time, this process's CPU and the stand-in's CPU around it; ``--profile``
adds a cProfile of the whole phase.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import time
from collections import defaultdict
from pathlib import Path

from benchlib import cpu_seconds, fmt_ms, percentiles, server_processes
from tqdm import tqdm

from newsfold.plugin.extract.article import Rejection, extract_article
from newsfold.plugin.settings import Settings


def read_page(payload: dict) -> bytes:
    """The raw bytes of a payload's page file."""
    with open(payload["html_path"], "rb") as fh:
        return fh.read()


def extract_payload(payload: dict, data: bytes, settings: Settings):
    """``extract_article`` with the arguments a worker's ``sign_page`` gives it."""
    return extract_article(
        data,
        url=payload.get("url"),
        lang=payload.get("lang"),
        min_tokens=settings.min_tokens,
        max_bytes=settings.max_page_bytes,
        cleanup=settings.cleanup,
    )


def outcome_kind(result) -> str:
    """``article``, or ``rejected:<reason>``."""
    return f"rejected:{result.reason}" if isinstance(result, Rejection) else "article"


def stage_phase(live: Settings, payloads: list[dict], *, profile: bool) -> dict:
    """Per-stage timings of the worker's path, measured around public calls in this process.

    Each batch is signed with the worker's own ``indexer.pages.sign_batch``
    (read, extract, repeated-lines filter, sign), and every page is also
    extracted alone (``extract_article``), so the signing share is the
    difference. Even batches then go through the steps of
    ``plugin.fold.batch.ingest`` one by one (``prepare``, ``write``, ``reconcile``,
    ``enforce_constraints`` when present, ``finish``), with the read-only
    ``mget`` and ``lookup`` that ``prepare`` makes also timed on their own;
    odd batches go through ``ingest`` whole, which checks that the steps
    still add up to it.
    """
    from newsfold.indexer.pages import sign_batch
    from newsfold.indexer.resources import story_stats_for
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold import batch as protocol
    from newsfold.plugin.fold.candidates import lookup
    from newsfold.plugin.fold.regroup import enforce_constraints

    folders = {str(Path(p["html_path"]).resolve().parent) for p in payloads if p.get("html_path")}
    live = live.replace(read_roots=os.pathsep.join(sorted(folders)))  # the worker reads only where it may
    from newsfold.plugin.fold.document import UNCHANGED_SOURCE

    client = build_client(live)
    per_page: dict[str, list[float]] = defaultdict(list)
    per_batch: dict[str, list[float]] = defaultdict(list)
    signed_total = 0
    candidates_per_page: list[int] = []
    steps = [("prepare (mget + lookup + verify + decide)", protocol.prepare)]
    steps += [("index (bulk, refresh=wait_for)", protocol.write), ("reconcile", protocol.reconcile)]
    steps.append(
        (
            "enforce constraints",
            lambda state, **kw: enforce_constraints([p.page_id for p in state.pages], **kw),
        )
    )

    servers = [p.pid for p in server_processes()]  # the stand-in, or the node this run started
    cpu_ms: dict[str, list[float]] = defaultdict(list)  # this process's CPU per call
    server_cpu_ms: dict[str, list[float]] = defaultdict(list)  # the stand-in's CPU per call (10 ms ticks)

    def timed(bucket, name, func, *args, **kwargs):
        s0 = cpu_seconds(servers[0]) if servers else None
        c0, t0 = time.process_time(), time.perf_counter()
        result = func(*args, **kwargs)
        bucket[name].append((time.perf_counter() - t0) * 1000)
        cpu_ms[name].append((time.process_time() - c0) * 1000)
        if s0 is not None:
            server_cpu_ms[name].append(((cpu_seconds(servers[0]) or s0) - s0) * 1000)
        return result

    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    bar = tqdm(total=len(payloads), desc="stages (in process)", unit="page")
    for n, start in enumerate(range(0, len(payloads), live.batch_size)):
        batch = payloads[start : start + live.batch_size]
        extract_ms = 0.0
        for payload in batch:
            data = read_page(payload)
            t0 = time.perf_counter()
            extract_payload(payload, data, live)
            per_page["extract"].append((time.perf_counter() - t0) * 1000)
            extract_ms += per_page["extract"][-1]
        label = "sign_batch (read + extract + filter + sign)"
        signed, _, _ = timed(per_batch, label, sign_batch, batch, live, stats=story_stats_for(live))
        per_batch["sign_batch minus extract (filter + sign)"].append(
            per_batch["sign_batch (read + extract + filter + sign)"][-1] - extract_ms
        )
        bar.update(len(batch))
        if not signed:
            continue
        signed_total += len(signed)
        if n % 2:
            timed(per_batch, "ingest() whole (odd batches)", protocol.ingest, signed, client=client, settings=live)
            continue
        ids = [p.page_id for p in signed]
        fields = UNCHANGED_SOURCE
        timed(per_batch, "  of which mget (unchanged check)", client.mget, index=live.index, ids=ids, source=fields)
        found = timed(per_batch, "  of which lookup (msearch)", lookup, signed, client=client, settings=live)
        candidates_per_page += [len(found.get(p.page_id, [])) for p in signed]
        state = None
        staged = 0.0
        for name, func in steps:
            if state is None:
                state = timed(per_batch, name, func, signed, client=client, settings=live)
            else:
                timed(per_batch, name, func, state, client=client, settings=live)
            staged += per_batch[name][-1]
        timed(per_batch, "finish", protocol.finish, state, client=client, settings=live)
        per_batch["steps summed (even batches)"].append(staged + per_batch["finish"][-1])
    bar.close()
    profile_text = None
    if profiler:
        profiler.disable()
        buf = io.StringIO()
        stats = pstats.Stats(profiler, stream=buf)
        stats.sort_stats("tottime").print_stats(20)
        stats.sort_stats("cumulative").print_stats(r"plugin|indexer|trafilatura/core|elasticsearch/_sync", 30)
        profile_text = buf.getvalue()
    return {
        "pages": len(payloads),
        "pages_signed": signed_total,
        "per_page_ms": {k: percentiles(v) for k, v in per_page.items()},
        "per_batch_ms": {k: percentiles(v) for k, v in per_batch.items()},
        "cpu_ms_mean": {k: sum(v) / len(v) for k, v in cpu_ms.items()},
        "server_cpu_ms_mean": {k: sum(v) / len(v) for k, v in server_cpu_ms.items()},
        "candidates_per_page": percentiles(candidates_per_page),
        "profile": profile_text,
    }


def stage_lines(st: dict, batch_size: int) -> list[str]:
    """The report's lines for :func:`stage_phase`'s result."""
    lines = [
        "",
        f"stages in process, wall ms ({st['pages_signed']} signed pages of {st['pages']}, batches of "
        f"{batch_size}; band-lookup candidates per page {st['candidates_per_page']['mean']:.1f} mean):",
    ]
    for name, stats in st["per_page_ms"].items():
        lines.append(f"  per page   {name:46s} {fmt_ms(stats)}, mean {stats['mean']:.1f}")
    for name, stats in st["per_batch_ms"].items():
        cpu = st["cpu_ms_mean"].get(name)
        server = st["server_cpu_ms_mean"].get(name)
        cpu_text = f"; CPU ms this process {cpu:.1f}" if cpu is not None else ""
        cpu_text += f", stand-in {server:.0f}" if server is not None else ""
        lines.append(
            f"  per batch  {name:46s} {fmt_ms(stats)}, mean {stats['mean']:.1f} "
            f"({stats['mean'] / batch_size:.1f} per page){cpu_text}"
        )
    if st.get("profile"):
        lines += ["", st["profile"]]
    return lines
