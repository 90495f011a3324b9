"""Duplicate lookup as an archive grows for years: monthly indices behind the alias, a lookup window, old ones merged.

    python benchmarks/archive_lookup_bench.py --elasticsearch [--months 36] [--sizes 10000,100000,1000000,3000000]
        [--window 90d] [--batches 100] [--json out/archive-lookup.json]

The synthetic corpus of ``lookup_bench.py`` (random MinHash signatures, the
real document shape without a body, stories of 1-50 pages) arrives at a
steady rate: ``--months`` monthly indices hold the largest size, so each
month takes ``largest / months`` pages (83,333 for 3 M pages over 36 months).
The months are made as the workers make them: ``plugin.fold.rollover.roll_over``
starts each new write index behind the alias, and ``merge_old_indices`` (what
``newsfold maintain`` runs) force-merges every index that has left the write
role. Each month is bulk-loaded into the write index with refresh off, then
refreshed.

At each size of ``--sizes`` the clock is set to the end of the last month
loaded: every index's period (``_meta.newsfold.period_start``, as a reindex
records it) is written so that the newest month ends now and each older one a
month (30 days) before. Then ``--batches`` timed batches of ``--batch`` pages
(after ``--warmup`` untimed ones) go through what ``plugin.fold.batch.prepare``
runs: ``lookup_scope`` (one metadata request, the ``--window`` of
``NEWSFOLD_LOOKUP_WINDOW``) and ``candidates.lookup`` on those indices.
``--dup-share`` of the looked-up pages are near-copies of a story that began
inside the window; the rest are new. At the largest size the same lookups are
also timed on every index behind the alias (a window of ``0``), which shows
what the window saves.

Goal (issue 29): the p50 at the largest size at most 1.3x the p50 at the smallest.
The current figure and the command are in docs/scaling.md; the run and the machine in docs/measurements.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import math
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
from benchlib import (
    add_elasticsearch_flag,
    cpu_seconds,
    elasticsearch_node,
    env_settings,
    fmt_ms,
    headline,
    machine,
    parse_sizes,
    percentiles,
    server_description,
    server_pid,
    write_json,
)
from lookup_bench import Corpus
from tqdm import tqdm

from newsfold.plugin.fold.by_id import forget_index_facts
from newsfold.plugin.fold.candidates import lookup
from newsfold.plugin.fold.document import own_document
from newsfold.plugin.fold.presence import prune
from newsfold.plugin.fold.rollover import index_facts, lookup_scope, merge_old_indices, roll_over
from newsfold.plugin.settings import Settings, seconds

TARGET_P50_RATIO = 1.3
MONTH_MS = 30 * 86_400_000


class RecentCorpus(Corpus):
    """``Corpus`` whose near-copies are of stories that began at or after ``self.recent_from`` (inside the window)."""

    recent_from = 0

    def queries(self, n: int, dup_share: float, tag: str) -> list:
        pages = []
        for j in range(n):
            if self.rng.random() < dup_share:
                root = int(self.root[int(self.rng.integers(self.recent_from, self.size))])
                values = self._near_copy(self.signatures[root])
                shingles = self.shingles[root]
            else:
                values = self.rng.integers(0, 2**32, size=self.num_perm, dtype=np.uint32)
                shingles = int(self.rng.integers(80, 1500))
            pages.append(self.signed_page(f"q-{tag}-{j:06d}", values, shingles))
        return pages


def _presence(size: str, window: str):
    """A presence filter in a Redis of this run's own (``newsfold.embedded``), started once."""
    import redis

    from newsfold.embedded import EmbeddedRedis
    from newsfold.indexer.presence import RedisPresence

    server = EmbeddedRedis()
    _KEEP.append(server)
    return RedisPresence(redis.Redis.from_url(server.url), size=size, window=window)


_KEEP: list = []


def load_month(client, settings: Settings, corpus: Corpus, n: int, *, bulk_docs: int, presence=None) -> dict:
    """Bulk-load ``n`` more pages into the write index with refresh off, then refresh it.

    With ``presence``, each page's band keys are added to the write index's filter first, as a worker's
    batch adds them (``plugin.fold.presence.record``).
    """
    from elasticsearch import helpers

    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    write = client.indices.get_alias(name=settings.index)
    target = next(i for i, v in write.items() if v["aliases"][settings.index].get("is_write_index"))

    def actions():
        pending, keys = [], []
        for i, body in corpus.grow(n):
            page = corpus.signed_page(corpus.page_id(i), corpus.signatures[i], corpus.shingles[i], body)
            doc = own_document(page, cluster_id=corpus.page_id(int(corpus.root[i])), match=None, ingested=now)
            pending.append({"_op_type": "index", "_index": target, "_id": page.page_id, "_source": doc})
            keys += page.band_keys
            if len(pending) >= bulk_docs or corpus.size == end:
                if presence is not None:
                    presence.add(target, keys)
                yield from pending
                pending, keys = [], []

    end = corpus.size + n
    started = time.perf_counter()
    client.indices.put_settings(index=target, settings={"index": {"refresh_interval": "-1"}})
    ok = 0
    for success, _item in helpers.streaming_bulk(client, actions(), chunk_size=bulk_docs, raise_on_error=True):
        ok += success
    client.indices.put_settings(index=target, settings={"index": {"refresh_interval": settings.refresh_interval}})
    client.indices.refresh(index=target)
    return {"index": target, "docs": ok, "seconds": time.perf_counter() - started}


def set_the_clock(client, settings: Settings) -> list[str]:
    """Give the indices periods that end now (the newest) and a month before each other; newest first."""
    names = [f.name for f in sorted(index_facts(client, settings.index), key=lambda f: f.name, reverse=True)]
    now = int(time.time() * 1000)
    for n, name in enumerate(names):
        meta = client.indices.get_mapping(index=name)[name]["mappings"].get("_meta") or {}
        fold = dict(meta.get("newsfold") or {})
        fold["period_start"] = now - (n + 1) * MONTH_MS + 60_000  # the newest began a month ago
        client.indices.put_mapping(index=name, meta={**meta, "newsfold": fold})
    forget_index_facts()  # the periods recorded at creation are kept per process; these were just rewritten
    return names


def measure(client, settings: Settings, corpus: Corpus, *, batches: int, batch: int, dup_share: float,
            warmup: int, tag: str, presence=None) -> dict:  # fmt: skip
    """Time what ``prepare`` runs per batch: ``lookup_scope`` and ``lookup`` on them.

    With ``presence``, every batch is looked up twice, without and with the pre-filter, in alternating
    order: the two modes are paired on the same pages.
    """
    modes = {"full": None} if presence is None else {"full": None, "presence": presence}
    for w in range(warmup):
        pages = corpus.queries(batch, dup_share, f"w{tag}-{w}")
        for filt in modes.values():
            lookup(pages, client=client, settings=settings, scope=lookup_scope(client, settings), presence=filt)
    times = {m: [] for m in modes}
    cpu = dict.fromkeys(modes, 0.0)
    candidates = {m: [] for m in modes}
    asked = dict.fromkeys(modes, 0)
    searched = set()
    server = server_pid()
    for b in tqdm(range(batches), desc=f"lookups ({tag})", unit="batch"):
        pages = corpus.queries(batch, dup_share, f"{tag}-{b}")
        order = list(modes) if b % 2 == 0 else list(reversed(modes))
        for mode in order:
            before = cpu_seconds(server) if server else None
            t0 = time.perf_counter()
            scope = lookup_scope(client, settings)
            found = lookup(pages, client=client, settings=settings, scope=scope, presence=modes[mode])
            times[mode].append((time.perf_counter() - t0) * 1000)
            if before is not None:
                cpu[mode] += (cpu_seconds(server) or 0.0) - before
            searched.add(scope.indices)
            candidates[mode] += [len(found.get(p.page_id, [])) for p in pages]
            if modes[mode] is not None:
                plans = prune(pages, scope.indices, presence=modes[mode], min_bands=settings.min_bands)
                asked[mode] += sum(len(plan.indices) for plan in plans.values() if plan)
            else:
                asked[mode] += len(pages) * len(scope.indices)
    return {
        mode: {
            "batch_ms": percentiles(times[mode]),
            "server_cpu_ms_per_batch": 1000 * cpu[mode] / batches if server else None,
            "candidates_per_page_mean": float(np.mean(candidates[mode])),
            "index_lookups_per_page": asked[mode] / (batches * batch),
            "indices_searched": sorted(len(s) for s in searched),
        }
        for mode in modes
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000,3000000", help="archive sizes to time, ascending")
    parser.add_argument("--months", type=int, default=36, help="monthly indices that hold the largest size")
    parser.add_argument("--window", default="90d", help="NEWSFOLD_LOOKUP_WINDOW for the lookups (default 90d)")
    parser.add_argument("--batches", type=int, default=100, help="timed lookup batches per size")
    parser.add_argument("--batch", type=int, default=25, help="pages per lookup batch")
    parser.add_argument("--dup-share", type=float, default=0.5, help="share of looked-up pages that are copies")
    parser.add_argument("--warmup", type=int, default=100, help="untimed batches before each size's timed ones")
    parser.add_argument("--bulk-docs", type=int, default=500, help="documents per bulk request while loading")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--presence",
        action="store_true",
        help="also time every batch with the presence pre-filter (a Redis of this run's own), paired",
    )
    parser.add_argument("--presence-size", default="128mb", help="NEWSFOLD_PRESENCE_SIZE with --presence")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    add_elasticsearch_flag(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sizes = parse_sizes(args.sizes, "archive_lookup_bench")
    if sizes is None:
        return 2
    if args.months < 1 or args.batches < 1 or args.batch < 1 or not 0.0 <= args.dup_share <= 1.0:
        print("archive_lookup_bench: --months, --batches and --batch must be >= 1, --dup-share in [0, 1]",
              file=sys.stderr)  # fmt: skip
        return 2
    if not re.fullmatch(r"0|[1-9][0-9]*[smhd]", args.window):
        print(f"archive_lookup_bench: --window must be 0 or a number with s, m, h or d, got {args.window!r}",
              file=sys.stderr)  # fmt: skip
        return 2
    with elasticsearch_node(args.elasticsearch, heap=args.es_heap):
        return _run(args, sizes)


def _run(args, sizes: list[int]) -> int:
    from newsfold.errors import exit_code
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import drop_index, ensure_index

    settings = env_settings("archive_lookup_bench")
    if settings is None:
        return 2
    if not settings.elasticsearch_url:
        print("archive_lookup_bench: needs a real Elasticsearch (--elasticsearch or ELASTICSEARCH_URL): the "
              "stand-in never merges segments", file=sys.stderr)  # fmt: skip
        return 2
    settings = settings.replace(
        index=f"newsfold-archivebench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}", lookup_window=args.window
    )
    per_month = math.ceil(sizes[-1] / args.months)
    result: dict = {
        "machine": machine(),
        "server": server_description(settings.elasticsearch_url),
        "months": args.months,
        "pages_per_month": per_month,
        "window": args.window,
        "batch": args.batch,
        "batches": args.batches,
        "dup_share": args.dup_share,
        "sizes": [],
    }
    window_months = max(1, math.ceil(seconds(args.window) * 1000 / MONTH_MS)) + 1
    # the months some size's window searches: only their filters are filled (and marked valid), to save time
    searched = {m for size in sizes for m in range(math.ceil(size / per_month) - window_months - 1,
                                                   math.ceil(size / per_month))}  # fmt: skip
    presence = _presence(args.presence_size, args.window) if args.presence else None
    result["presence_size"] = args.presence_size if presence else None
    client = build_client(settings)
    try:
        ensure_index(client, settings, presence=presence)
        corpus = RecentCorpus(settings, sizes[-1], seed=args.seed, body_words=0)
        month_starts = [0]  # corpus position where each month began
        loading = 0.0
        for size in sizes:
            while corpus.size < size:
                if corpus.size - month_starts[-1] >= per_month:
                    month = len(month_starts)
                    roll_over(client, settings, force=True, presence=presence if month in searched else None)
                    merge_old_indices(client, settings)
                    month_starts.append(corpus.size)
                room = min(per_month - (corpus.size - month_starts[-1]), size - corpus.size)
                filled = presence if len(month_starts) - 1 in searched else None
                loaded = load_month(client, settings, corpus, room, bulk_docs=args.bulk_docs, presence=filled)
                loading += loaded["seconds"]
                print(f"{loaded['index']}: +{loaded['docs']} pages, {corpus.size} in all", file=sys.stderr)
            names = set_the_clock(client, settings)
            corpus.recent_from = month_starts[max(0, len(month_starts) - window_months + 1)]
            facts = index_facts(client, settings.index)
            timed = measure(client, settings, corpus, batches=args.batches, batch=args.batch,
                            dup_share=args.dup_share, warmup=args.warmup, tag=f"{size}", presence=presence)  # fmt: skip
            row = {
                "pages": corpus.size,
                "indices": len(names),
                "segments": {f.name: f.segments for f in facts},
                "window": timed["full"],
                "window_presence": timed.get("presence"),
            }
            if size == sizes[-1] and len(names) > 1:
                every = settings.replace(lookup_window="0")
                every_timed = measure(client, every, corpus, batches=args.batches, batch=args.batch,
                                      dup_share=args.dup_share, warmup=20, tag=f"{size}-all")  # fmt: skip
                row["every_index"] = every_timed["full"]
            result["sizes"].append(row)
        result["load_seconds"] = loading
    except (KeyboardInterrupt, Exception) as exc:
        return exit_code(exc, "archive_lookup_bench")
    finally:
        try:
            drop_index(client, settings)
        except Exception as exc:  # noqa: BLE001 (the run's result matters more; say what is left)
            print(f"archive_lookup_bench: could not drop {settings.index}: {exc}", file=sys.stderr)
    for mode, suffix in (("window", ""), ("window_presence", "_presence")):
        if result["sizes"][0].get(mode):
            first, last = result["sizes"][0][mode]["batch_ms"], result["sizes"][-1][mode]["batch_ms"]
            result["p50_ratio" + suffix] = last["p50"] / first["p50"]
            result["p95_ratio" + suffix] = last["p95"] / first["p95"]
    print(report(result))
    write_json(args.json, result)
    return 0


def report(result: dict) -> str:
    lines = [
        f"{headline('archive lookup', result['machine'])}; server {result['server']}",
        f"{result['months']} monthly indices at the largest size ({result['pages_per_month']} pages a month), "
        f"window {result['window']}, {result['batches']} timed batches of {result['batch']} pages per size, "
        f"{result['dup_share']:.0%} near-copies of stories begun inside the window",
        "",
        "pages      indices  searched  filter  lookup per batch (lookup_scope + msearch)  node CPU ms/batch  "
        "candidates/page  index lookups/page  segments of the write index",
    ]
    for row in result["sizes"]:
        for mode, label in (("window", "no"), ("window_presence", "yes")):
            w = row.get(mode)
            if not w:
                continue
            cpu = f"{w['server_cpu_ms_per_batch']:.1f}" if w["server_cpu_ms_per_batch"] is not None else "?"
            newest = max(row["segments"])
            lines.append(
                f"{row['pages']:<10d} {row['indices']:<8d} {'/'.join(map(str, w['indices_searched'])):9s} "
                f"{label:7s} {fmt_ms(w['batch_ms']):44s} {cpu:>17s}  {w['candidates_per_page_mean']:15.2f}  "
                f"{w['index_lookups_per_page']:18.2f}  {row['segments'][newest]}"
            )
    every = result["sizes"][-1].get("every_index")
    if every:
        lines.append(
            f"the same lookups on every index at {result['sizes'][-1]['pages']} pages (window 0): "
            f"{fmt_ms(every['batch_ms'])}, node CPU {every['server_cpu_ms_per_batch'] or 0:.1f} ms/batch, "
            f"{every['candidates_per_page_mean']:.1f} candidates/page"
        )
    for suffix, label in (("", "without the filter"), ("_presence", "with the presence pre-filter")):
        ratio = result.get("p50_ratio" + suffix)
        if ratio is None:
            continue
        verdict = "meets" if ratio <= TARGET_P50_RATIO else "MISSES"
        lines.append(
            f"{label}: p50 ratio {result['sizes'][-1]['pages']} / {result['sizes'][0]['pages']} pages: {ratio:.2f} "
            f"({verdict} the <= {TARGET_P50_RATIO} target); p95 ratio {result['p95_ratio' + suffix]:.2f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
