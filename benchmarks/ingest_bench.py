"""End-to-end ingest cost through real Celery workers against trafilatura and extraction alone, same pages and cores.

    python benchmarks/ingest_bench.py ../shared/data/dev [--pages 20000] [--workers 2] [--sample 250] [--profile]
        [--elasticsearch]

The dev pages are replicated to ``--pages`` pages, every copy with a new id
and url (a copy of a page is an exact duplicate of it, so after the first
round every page is a ``duplicate``, never ``unchanged``: a new id is a new
document). Then, one phase after the other on the same machine:

1. trafilatura alone: ``trafilatura.extract(page bytes, include_comments=False)``
   (its default mode, as a "trafilatura + datasketch" script would run it),
   ``--workers`` processes: the yardstick of the worker's cost;
2. extraction only: ``extract_article`` on every page, ``--workers`` processes;
3. extraction + signing (no Elasticsearch, no Celery), ``--workers`` processes
   (skip with ``--no-sign-phase``): separates the signing cost from the rest;
4. end to end: every page through ``--workers`` real Celery worker processes
   (solo pool, as ``newsfold cluster`` runs them) into a fresh index on the
   embedded stand-in, or on ``ELASTICSEARCH_URL`` / ``REDIS_URL`` when set, or on a
   real local Elasticsearch node started for the run with ``--elasticsearch``; the
   CPU seconds each process used and the workers' peak RSS (VmHWM) are read
   from ``/proc``;
5. stages: ``--sample`` further pages go through the worker's own calls in
   this process (``ingest_stages.py``); ``--profile`` also prints a cProfile;
6. trafilatura alone again: the machine is shared and its speed drifts from
   phase to phase (the same code measured 0.82x to 0.99x extraction against
   trafilatura in runs an hour apart), so the yardstick is measured first and
   last and the mean of the two is used.

The report gives the Celery workers' CPU per page end to end against
trafilatura's (target at most 1.3x) and the workers' peak RSS (target at most
300 MB). CPU milliseconds per page, unlike pages/s, hardly change when other
users load the machine; the report gives both.

Everything printed is also written as JSON with ``--json PATH``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import resource
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path

from benchlib import (
    Proc,
    add_elasticsearch_flag,
    child_processes,
    cpu_seconds,
    elasticsearch_node,
    env_settings,
    headline,
    machine,
    machine_cpu_seconds,
    peak_rss_mb,
    rss_mb,
    server_description,
    server_processes,
    write_json,
)
from ingest_stages import extract_payload, outcome_kind, read_page, stage_lines, stage_phase
from tqdm import tqdm

from newsfold.plugin.settings import Settings

TARGET_RATIO = 0.8
TARGET_TRAFILATURA_RATIO = 1.3  # Celery workers' CPU per page end to end / trafilatura alone's
TARGET_RSS_MB = 300.0


# ---------------------------------------------------------------- pages
def dev_pages(dev_dir: Path) -> list[dict]:
    """Task payloads (``html_path`` resolved) of the lines of ``DEV_DIR/pages.jsonl`` that name an html file."""
    out = []
    with (dev_dir / "pages.jsonl").open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if not isinstance(row.get("html"), str):
                continue
            out.append(
                {
                    "id": str(row.get("id") or f"line-{n}"),
                    "html_path": str((dev_dir / row["html"]).resolve()),
                    "url": row.get("url"),
                    "site": row.get("site"),
                    "lang": row.get("lang"),
                }
            )
    return out


def replicate(dev_dir: Path, n: int) -> list[dict]:
    """``n`` task payloads cycling over the dev pages; copy ``k`` of page ``p`` has id ``r<k>-<p>``.

    Copy-major order (every page once, then every page again, ...), so the
    copies of one page arrive far apart, as syndicated copies do.
    """
    base = dev_pages(dev_dir)
    if not base:
        raise SystemExit(f"ingest_bench: no usable page in {dev_dir / 'pages.jsonl'}")
    out: list[dict] = []
    for i in range(n):
        copy, page = divmod(i, len(base))
        payload = dict(base[page])
        payload["id"] = f"r{copy:04d}-{payload['id']}"
        url = payload.get("url")
        if url:
            payload["url"] = f"{url}{'&' if '?' in url else '?'}newsfold_copy={copy}"
        out.append(payload)
    return out


# ---------------------------------------------------------------- process-pool phases
@lru_cache(maxsize=1)
def _settings() -> Settings:
    return Settings.from_env()


def _trafilatura_default(payload: dict) -> str:
    """trafilatura alone on the page bytes, default mode, comments left out; returns the outcome kind."""
    import trafilatura

    try:
        text = trafilatura.extract(read_page(payload), url=payload.get("url"), include_comments=False)
    except Exception as exc:  # a benchmark page that breaks extraction is counted, not fatal
        return f"error:{type(exc).__name__}"
    return "article" if text else "rejected:no_article"


def _extract_only(payload: dict) -> str:
    """Extraction as the workers run it (same arguments as ``sign_page``); returns the outcome kind."""
    try:
        return outcome_kind(extract_payload(payload, read_page(payload), _settings()))
    except Exception as exc:  # a benchmark page that breaks extraction is counted, not fatal
        return f"error:{type(exc).__name__}"


def _extract_and_sign(payload: dict) -> str:
    """``sign_page`` without Redis (no repeated-lines filter), Elasticsearch or Celery."""
    from newsfold.plugin.sign.signed_page import Page
    from newsfold.plugin.sign.signing import sign_page

    try:
        page = Page(html=read_page(payload), url=payload.get("url"), id=payload["id"], site=payload.get("site"))
        return outcome_kind(sign_page(page, _settings()))
    except Exception as exc:
        return f"error:{type(exc).__name__}"


def _quiet_children() -> None:
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)


def pool_phase(name: str, func, payloads: list[dict], workers: int) -> dict:
    """Run ``func`` over the payloads in ``workers`` processes; pages/s over the whole phase."""
    started = time.perf_counter()
    busy_before, total_before = machine_cpu_seconds()
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    kinds: Counter = Counter()
    with ProcessPoolExecutor(max_workers=workers, initializer=_quiet_children) as pool:
        for kind in tqdm(pool.map(func, payloads, chunksize=4), total=len(payloads), desc=name, unit="page"):
            kinds[kind.split(":")[0]] += 1
    # the pool's processes have been joined, so their CPU time is in RUSAGE_CHILDREN now
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = time.perf_counter() - started
    busy_after, total_after = machine_cpu_seconds()
    cpu = (children_after.ru_utime + children_after.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
    return {
        "pages": len(payloads),
        "seconds": elapsed,
        "pages_per_s": len(payloads) / elapsed,
        "kinds": dict(kinds),
        "cpu_seconds_ours": cpu,
        "cpu_ms_per_page": 1000 * cpu / len(payloads),
        "cpu_seconds_machine": busy_after - busy_before,
        "cpu_seconds_available": total_after - total_before,
    }


# ---------------------------------------------------------------- end to end
def ingest_phase(
    live: Settings, payloads: list[dict], *, workers: int, index: str, servers: list[Proc] | None = None
) -> dict:
    """Every page through real Celery workers; throughput, outcomes, CPU per process, worker memory.

    ``servers``: the server processes whose CPU is counted (default: the embedded servers
    started before the workers, and the node this run started, if any).
    """
    from newsfold.indexer.celery_app import make_celery
    from newsfold.indexer.jobs.dispatch import BatchRun, in_flight_batches, run_batches
    from newsfold.workers import LocalWorkers

    app = make_celery(live)
    if servers is None:
        servers = child_processes() + [p for p in server_processes() if p.name == "elasticsearch"]
    with LocalWorkers(live, workers) as pool:
        pool.wait_ready(app)
        worker_pids = [p.pid for p in pool.processes]
        procs = servers + [p for p in child_processes() if p.pid in worker_pids]
        cpu_before = {p.pid: cpu_seconds(p.pid) or 0.0 for p in procs}
        self_before = time.process_time()
        busy_before, total_before = machine_cpu_seconds()
        bar = tqdm(total=len(payloads), desc="ingest (Celery workers)", unit="page")
        started = time.perf_counter()
        chunks = (payloads[i : i + live.batch_size] for i in range(0, len(payloads), live.batch_size))
        try:
            run = BatchRun(index=index, on_done=lambda got: bar.update(len(got)),
                           max_in_flight=in_flight_batches(live.batch_size))  # fmt: skip
            outcomes = run_batches(app, chunks, run)
        finally:
            bar.close()
        elapsed = time.perf_counter() - started
        busy_after, total_after = machine_cpu_seconds()
        cpu = {f"{p.name} {p.pid}": (cpu_seconds(p.pid) or 0.0) - cpu_before[p.pid] for p in procs}
        cpu["benchmark driver (this process)"] = time.process_time() - self_before
        memory = {
            f"celery worker {pid}": {"peak_rss_mb": peak_rss_mb(pid), "rss_mb_at_end": rss_mb(pid)}
            for pid in worker_pids
        }
        for p in servers:
            memory[f"{p.name} {p.pid}"] = {"peak_rss_mb": peak_rss_mb(p.pid), "rss_mb_at_end": rss_mb(p.pid)}
    ours = sum(cpu.values())
    machine_busy = busy_after - busy_before
    workers_cpu = sum(v for k, v in cpu.items() if k.startswith("celery worker"))
    return {
        "pages": len(payloads),
        "seconds": elapsed,
        "pages_per_s": len(payloads) / elapsed,
        "outcomes": dict(Counter(o["status"] for o in outcomes)),
        "rejected_by_reason": dict(Counter(o.get("reason") for o in outcomes if o["status"] == "rejected")),
        "cpu_seconds": cpu,
        "cpu_seconds_ours": ours,
        "cpu_ms_per_page": 1000 * ours / len(payloads),
        "cpu_ms_per_page_workers": 1000 * workers_cpu / len(payloads),
        "cpu_seconds_machine": machine_busy,
        "cpu_seconds_available": total_after - total_before,
        "memory": memory,
    }


FLOOR_DOCS = 2000


def index_floor(client, live: Settings, *, docs: int = FLOOR_DOCS) -> dict | None:
    """Server CPU to index the stored documents alone (bulks of ``batch_size``, ``refresh=wait_for``, no lookups).

    The documents ingest wrote are read back and written into a scratch index
    with the same mapping, into which nothing else goes. What the server spends
    there per document is a floor under its share of every ingest: with the
    server on the workers' cores, the ratio to extraction cannot exceed
    extraction / (extraction + floor) whatever newsfold does around the bulk.
    None on an external cluster (its CPU is not measured here); measured on the
    stand-in and on a node this run started (``--elasticsearch``).
    """
    from elasticsearch import helpers

    from newsfold.plugin.fold.index import drop_index, ensure_index

    servers = server_processes()
    if not servers:
        return None
    scratch = live.replace(index=f"{live.index}-floor")
    ensure_index(client, scratch)
    hits = client.search(index=live.index, size=docs, query={"match_all": {}}, sort=["_doc"])["hits"]["hits"]
    actions = [{"_op_type": "index", "_index": scratch.index, "_id": h["_id"], "_source": h["_source"]} for h in hits]
    before = cpu_seconds(servers[0].pid) or 0.0
    started = time.perf_counter()
    for n in range(0, len(actions), live.batch_size):
        helpers.bulk(client, actions[n : n + live.batch_size], refresh="wait_for")
    elapsed = time.perf_counter() - started
    used = (cpu_seconds(servers[0].pid) or 0.0) - before
    drop_index(client, scratch)
    return {"docs": len(actions), "server_cpu_ms_per_doc": 1000 * used / max(1, len(actions)), "seconds": elapsed}


def index_figures(client, live: Settings, sample_ids: list[str]) -> dict:
    """Documents, store bytes per document, and the mean JSON size of a sample of stored documents by field."""
    client.indices.refresh(index=live.index)
    stats = client.indices.stats(index=live.index)["_all"]["primaries"]
    docs = stats["docs"]["count"]
    store = stats["store"]["size_in_bytes"]
    by_field: dict[str, list[int]] = defaultdict(list)
    found = client.mget(index=live.index, ids=sample_ids)["docs"]
    for doc in found:
        src = doc.get("_source")
        if not src:
            continue
        by_field["(whole _source)"].append(len(json.dumps(src, ensure_ascii=False).encode("utf-8")))
        for name, value in src.items():
            by_field[name].append(len(json.dumps(value, ensure_ascii=False).encode("utf-8")))
    return {
        "docs": docs,
        "store_bytes": store,
        "store_bytes_per_doc": store / docs if docs else None,
        "source_json_bytes_mean": {k: sum(v) / len(v) for k, v in sorted(by_field.items())},
        "source_sampled_docs": len(by_field["(whole _source)"]),
    }


def redis_memory(live: Settings) -> int:
    """Bytes Redis holds now (``used_memory``)."""
    from newsfold.state import build_redis

    return int(build_redis(live.redis_url).info("memory")["used_memory"])


def redis_figures(live: Settings, *, before: int, distinct_pages: int) -> dict:
    """What the ingest left in Redis: bytes, and keys by kind (repeated-lines counters, Celery results, other)."""
    from newsfold.state import build_redis

    client = build_redis(live.redis_url)
    kinds: Counter = Counter()
    for key in client.scan_iter(count=1000):
        name = key.decode(errors="replace")
        if name.startswith(f"newsfold:{live.index}:"):
            kinds["newsfold:<index>:" + name.split(":")[2]] += 1
        elif name.startswith("celery-task-meta-"):
            kinds["celery-task-meta-*"] += 1
        else:
            kinds[name.split(":")[0] + (":*" if ":" in name else "")] += 1
    used = redis_memory(live)
    return {
        "used_memory_before": before,
        "used_memory_after": used,
        # copies share their lines with the first round, so count only distinct dev pages
        "bytes_per_distinct_page": (used - before) / distinct_pages if distinct_pages else None,
        "keys": dict(kinds.most_common(12)),
    }


# ---------------------------------------------------------------- report
def report(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"{headline('ingest', m)}; server {result.get('server', '?')}",
        f"pages: {result['pages']} ({result['dev_pages']} dev pages replicated; copies are exact duplicates "
        f"with new ids), workers/processes: {result['workers']}, batch size {result['batch_size']}",
        "",
    ]
    lines.append("phase                  pages/s    wall   CPU ms/page (ours)   machine CPU busy (all users) / ours")
    for label, key in (
        ("trafilatura alone", "trafilatura"),
        ("extraction only", "extract_only"),
        ("extraction + signing", "extract_sign"),
        ("end to end (Celery)", "ingest"),
        ("trafilatura, again", "trafilatura_after"),
    ):
        ph = result.get(key)
        if not ph:
            continue
        busy = ph["cpu_seconds_machine"] / ph["cpu_seconds_available"]
        mine = ph["cpu_seconds_ours"] / ph["cpu_seconds_available"]
        lines.append(
            f"{label:22s} {ph['pages_per_s']:7.1f} {ph['seconds']:7.1f} s {ph['cpu_ms_per_page']:10.1f}"
            f"            {busy:6.0%} / {mine:4.0%}"
        )
    ext, ing = result["extract_only"], result["ingest"]
    lines.append(f"extraction outcomes {ext['kinds']}; end-to-end outcomes {ing['outcomes']}")
    traf = result["ratio_workers_to_trafilatura"]
    verdict = "meets" if traf <= TARGET_TRAFILATURA_RATIO else "MISSES"
    lines.append(
        f"Celery workers' CPU per page end to end / trafilatura alone's (the mean of its two runs, first and last): "
        f"{ing['cpu_ms_per_page_workers']:.1f} / {result['trafilatura_cpu_ms_per_page']:.1f} ms = {traf:.2f}x "
        f"({verdict} the {TARGET_TRAFILATURA_RATIO}x target); "
        f"extraction alone {result['ratio_extraction_to_trafilatura']:.2f}x"
    )
    ratio = result["ratio_ingest_to_extraction"]
    verdict = "meets" if ratio >= TARGET_RATIO else "MISSES"
    lines.append(f"ratio end to end / extraction only (pages/s): {ratio:.2f} ({verdict} the {TARGET_RATIO} target)")
    lines.append(
        f"ratio of CPU per page, extraction only / end to end: {result['ratio_cpu']:.2f} "
        f"(all our processes), {result['ratio_cpu_workers_only']:.2f} (Celery workers only, server CPU left out)"
    )
    floor = result.get("index_floor")
    if floor:
        best = ext["cpu_ms_per_page"] / (ext["cpu_ms_per_page"] + floor["server_cpu_ms_per_doc"])
        lines.append(
            f"server CPU to index {floor['docs']} of the stored documents alone (bulks of {result['batch_size']}, "
            f"no lookups): {floor['server_cpu_ms_per_doc']:.1f} ms/doc, so with the server on the same cores "
            f"the ratio cannot exceed {best:.2f} even if everything else cost nothing"
        )
    lines.append("")
    lines.append(
        f"CPU seconds during the end-to-end phase ({ing['seconds']:.1f} s wall, "
        f"{ing['cpu_seconds_available']:.0f} CPU-s available on the machine, "
        f"{ing['cpu_seconds_machine']:.0f} used by all processes, {ing['cpu_seconds_ours']:.0f} by ours):"
    )
    for name, secs in sorted(ing["cpu_seconds"].items(), key=lambda kv: -kv[1]):
        lines.append(f"  {name:40s} {secs:7.1f} s  ({1000 * secs / ing['pages']:.1f} ms/page)")
    other = ing["cpu_seconds_machine"] - ing["cpu_seconds_ours"]
    lines.append(f"  {'other processes on the machine':40s} {other:7.1f} s")
    lines.append("memory:")
    worst = 0.0
    for name, mem in ing["memory"].items():
        peak = mem["peak_rss_mb"] or 0.0
        if name.startswith("celery worker"):
            worst = max(worst, peak)
        lines.append(f"  {name:40s} peak RSS {peak:7.1f} MB, at end {mem['rss_mb_at_end'] or 0:7.1f} MB")
    verdict = "meets" if worst <= TARGET_RSS_MB else "MISSES"
    lines.append(f"worst worker peak RSS {worst:.0f} MB ({verdict} the {TARGET_RSS_MB:.0f} MB target)")
    idx = result["index"]
    lines.append("")
    lines.append(
        f"index: {idx['docs']} documents, store {idx['store_bytes']} bytes = "
        f"{(idx['store_bytes_per_doc'] or 0):.0f} bytes/document (as the server reports it)"
    )
    src = idx["source_json_bytes_mean"]
    parts = ", ".join(f"{k} {v:.0f}" for k, v in sorted(src.items(), key=lambda kv: -kv[1])[:8])
    lines.append(f"mean JSON bytes per stored document ({idx['source_sampled_docs']} sampled): {parts}")
    rd = result.get("redis")
    if rd:
        lines.append(
            f"Redis after the ingest: {rd['used_memory_after'] / 2**20:.1f} MB "
            f"({rd['used_memory_after'] - rd['used_memory_before']:+d} bytes, "
            f"{rd['bytes_per_distinct_page'] or 0:.0f} bytes per distinct page); keys {rd['keys']}"
        )
    if result.get("stages"):
        lines += stage_lines(result["stages"], result["batch_size"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dev_dir", type=Path, help="folder holding pages.jsonl (the dev set)")
    parser.add_argument("--pages", type=int, default=20000, help="pages after replication (default 20000)")
    parser.add_argument("--workers", type=int, default=2, help="Celery workers and extraction processes (default 2)")
    parser.add_argument("--sample", type=int, default=250, help="pages timed stage by stage in process (0: skip)")
    parser.add_argument("--no-sign-phase", action="store_true", help="skip the extraction + signing phase")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the in-process stage phase")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--keep-index", action="store_true", help="do not delete the index on an external cluster")
    add_elasticsearch_flag(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    if not (args.dev_dir / "pages.jsonl").is_file():
        print(f"ingest_bench: {args.dev_dir / 'pages.jsonl'} not found", file=sys.stderr)
        return 2
    with elasticsearch_node(args.elasticsearch, heap=args.es_heap):
        return _run(args)


def _run(args) -> int:
    settings = env_settings("ingest_bench")
    if settings is None:
        return 2
    settings = settings.replace(read_roots=str(args.dev_dir.resolve()))  # the workers read the dev pages

    from newsfold.embedded import services
    from newsfold.errors import check_servers, exit_code
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import drop_index, ensure_index

    result: dict = {
        "machine": machine(),
        "server": server_description(settings.elasticsearch_url) if settings.elasticsearch_url else "osmem-server",
        "workers": args.workers,
        "batch_size": settings.batch_size,
    }
    payloads = replicate(args.dev_dir, args.pages)
    result["pages"] = len(payloads)
    result["dev_pages"] = len(dev_pages(args.dev_dir))
    result["trafilatura"] = pool_phase("trafilatura alone", _trafilatura_default, payloads, args.workers)
    result["extract_only"] = pool_phase("extraction only", _extract_only, payloads, args.workers)
    if not args.no_sign_phase:
        result["extract_sign"] = pool_phase("extraction + signing", _extract_and_sign, payloads, args.workers)

    index = f"newsfold-bench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    external = bool(settings.elasticsearch_url)
    try:
        with services(settings, announce=lambda msg: print(msg, file=sys.stderr)) as live:
            check_servers(live)
            live = live.replace(index=index)
            client = build_client(live)
            drop_index(client, live)
            ensure_index(client, live)
            try:
                redis_before = redis_memory(live)
                result["ingest"] = ingest_phase(live, payloads, workers=args.workers, index=index)
                distinct = min(len(payloads), result["dev_pages"])
                result["redis"] = redis_figures(live, before=redis_before, distinct_pages=distinct)
                sample_ids = [p["id"] for p in payloads[:: max(1, len(payloads) // 200)]][:200]
                result["index"] = index_figures(client, live, sample_ids)
                result["index_floor"] = index_floor(client, live)
                if args.sample:
                    stage_pages = [
                        {**p, "id": f"stage-{i:05d}-{p['id']}"} for i, p in enumerate(payloads[: args.sample])
                    ]
                    result["stages"] = stage_phase(live, stage_pages, profile=args.profile)
            finally:
                if external and not args.keep_index:
                    drop_index(client, live)
    except (KeyboardInterrupt, Exception) as exc:
        return exit_code(exc, "ingest_bench")
    # the yardstick again, after the workers: the machine is shared, and its speed drifts between phases
    result["trafilatura_after"] = pool_phase("trafilatura alone, again", _trafilatura_default, payloads, args.workers)
    yardstick = (result["trafilatura"]["cpu_ms_per_page"] + result["trafilatura_after"]["cpu_ms_per_page"]) / 2
    result["trafilatura_cpu_ms_per_page"] = yardstick
    ext, ing = result["extract_only"], result["ingest"]
    result["ratio_ingest_to_extraction"] = ing["pages_per_s"] / ext["pages_per_s"]
    result["ratio_cpu"] = ext["cpu_ms_per_page"] / ing["cpu_ms_per_page"]
    result["ratio_cpu_workers_only"] = ext["cpu_ms_per_page"] / ing["cpu_ms_per_page_workers"]
    result["ratio_workers_to_trafilatura"] = ing["cpu_ms_per_page_workers"] / yardstick
    result["ratio_extraction_to_trafilatura"] = ext["cpu_ms_per_page"] / yardstick
    print(report(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
