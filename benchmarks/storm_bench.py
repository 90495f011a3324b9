"""Hostile-query storms on a real Elasticsearch node: are they answered within the 2 s budget, and what do they do
to everyone else's searches?

    python benchmarks/storm_bench.py [--url URL] [--docs 3000] [--searches 200] [--storm-threads 3] [--json OUT]

Without ``--url`` the script starts a real node of the pinned version
(``newsfold.esnode``) and stops it at the end. It fills a fresh index with
``--docs`` pages through ``plugin.fold.batch.ingest``: a tenth of them copies of
news stories, the rest dense text in which a handful of common words repeat
(what makes sloppy phrases, fuzzy terms and prefixes expensive). Every search
is the product's own public search body (``plugin.search.queries.collapsed_search``,
as ``/api/search`` builds it: only ``AND|OR|NOT|PHRASE|PRECEDENCE|WHITESPACE|
ESCAPE`` operators, at most 32 terms and 500 characters, a 2 s ``timeout``).

Phases, run twice in the order calm, storm, calm, storm (the machine's speed
drifts; the two rounds show by how much):

- **calm:** ``--searches`` ordinary searches, one after the other;
- **storm:** the same searches while ``--storm-threads`` threads send hostile
  queries (slop phrases of repeated words, fuzzy and prefix syntax, wildcards,
  32 OR-ed common words) as fast as they are answered.

It prints p50 and p95 of the ordinary searches in each phase and their ratio,
and the hostile queries' p50, p95, maximum and how many took over 2 s or came
back ``timed_out``. The machine has 2 cores: storm threads and the node share
them, so some slowdown under a storm is the machine, not the queries.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
import uuid

from benchlib import machine, percentiles

from newsfold.plugin import TextMeta, ingest, sign_text
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.search.queries import collapsed_search
from newsfold.plugin.settings import Settings

COMMON = "the of and a to in harbour ship port strike workers union council storm river".split()
ORDINARY = [
    "harbour strike", "council budget", '"port workers"', "storm -river", "union|council", "ship", "river flood",
    "workers union strike", "harbour council vote", "port", "strike ends", '"the council"',
]  # fmt: skip
HOSTILE = [
    '"the the the the the the the the the the the"~100',
    "the~2 the~2 the~2 the~2 the~2 the~2 the~2 the~2",
    "t* th* the* a* b* c* d* e* f* g* h* i* j* k*",
    "*a* *e* *i* *o* *u* *t* *h* *s*",
    " | ".join(["the", "of", "and", "a", "to", "in"] * 5),
    '"' + " ".join(["the"] * 30) + '"',
    "harbour~2 strike~2 workers~2 union~2 council~2 storm~2 river~2 port~2",
]
BUDGET_S = 2.0


def fill(client, settings, docs: int, rng: random.Random) -> None:
    words = [*COMMON, "news", "report", "city", "mayor"]
    stories = [" ".join(rng.choice(words) for _ in range(300)) for _ in range(30)]
    batch = []
    for n in range(docs):
        dense = " ".join(rng.choice(COMMON) for _ in range(400))
        text = stories[n % len(stories)] if n % 10 == 0 else dense
        batch.append(
            sign_text(text, TextMeta(title=" ".join(rng.sample(COMMON, 4)), page_id=f"d{n}"), settings=settings)
        )
        if len(batch) == 100:
            ingest(batch, client=client, settings=settings)
            batch = []
    if batch:
        ingest(batch, client=client, settings=settings)
    client.indices.refresh(index=settings.index)


def timed(client, index: str, q: str) -> tuple[float, bool]:
    started = time.perf_counter()
    res = client.search(index=index, body=collapsed_search(q))
    return time.perf_counter() - started, bool(res.get("timed_out"))


def phase(client, index: str, searches: int, storm_threads: int) -> dict:
    stop = threading.Event()
    hostile: list[tuple[float, bool]] = []
    errors: list[str] = []

    def storm(seed: int) -> None:
        rng = random.Random(seed)
        while not stop.is_set():
            try:
                hostile.append(timed(client, index, rng.choice(HOSTILE)))
            except Exception as exc:  # a refused query is an answer too; report it
                errors.append(f"{type(exc).__name__}: {str(exc)[:120]}")
                hostile.append((0.0, False))

    threads = [threading.Thread(target=storm, args=(s,), daemon=True) for s in range(storm_threads)]
    for t in threads:
        t.start()
    time.sleep(0.5 if threads else 0)
    ordinary = [timed(client, index, ORDINARY[n % len(ORDINARY)])[0] for n in range(searches)]
    stop.set()
    for t in threads:
        t.join(30)
    out = {"ordinary_ms": {k: v * 1000 if k != "n" else v for k, v in percentiles(ordinary).items()}}
    if threads:
        took = [h[0] for h in hostile]
        out["hostile_ms"] = {k: v * 1000 if k != "n" else v for k, v in percentiles(took).items()}
        out["hostile_max_ms"] = max(took) * 1000 if took else None
        out["hostile_over_budget"] = sum(t > BUDGET_S for t in took)
        out["hostile_timed_out"] = sum(h[1] for h in hostile)
        out["hostile_errors"] = sorted(set(errors))[:5]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="an Elasticsearch to use (default: start a real local node)")
    parser.add_argument("--docs", type=int, default=3000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--storm-threads", type=int, default=3)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    node = None
    if not args.url:
        from newsfold.esnode import ElasticsearchNode

        node = ElasticsearchNode(heap="1g", announce=lambda m: print(m, file=sys.stderr)).start()
    url = args.url or node.url
    settings = Settings(elasticsearch_url=url, index=f"storm-{uuid.uuid4().hex[:8]}", es_timeout=60)
    client = build_client(settings)
    try:
        ensure_index(client, settings)
        started = time.perf_counter()
        fill(client, settings, args.docs, random.Random(3))
        print(f"filled {args.docs} pages in {time.perf_counter() - started:.0f} s", file=sys.stderr)
        for q in ORDINARY:  # warm the caches once
            timed(client, settings.index, q)
        rounds = []
        for r in range(2):
            for name, threads in (("calm", 0), ("storm", args.storm_threads)):
                result = phase(client, settings.index, args.searches, threads)
                rounds.append({"round": r + 1, "phase": name, **result})
                line = f"round {r + 1} {name:5s}: ordinary p50 {result['ordinary_ms']['p50']:.1f} ms, "
                line += f"p95 {result['ordinary_ms']['p95']:.1f} ms"
                if threads:
                    h = result["hostile_ms"]
                    line += (
                        f"; hostile n={h['n']} p50 {h['p50']:.0f} ms p95 {h['p95']:.0f} ms "
                        f"max {result['hostile_max_ms']:.0f} ms, over {BUDGET_S:.0f} s: "
                        f"{result['hostile_over_budget']}, timed_out: {result['hostile_timed_out']}"
                    )
                print(line)
        ratios = []
        for r in (1, 2):
            calm, storm = (next(x for x in rounds if x["round"] == r and x["phase"] == p) for p in ("calm", "storm"))
            ratios.append({
                "round": r,
                "p50": storm["ordinary_ms"]["p50"] / calm["ordinary_ms"]["p50"],
                "p95": storm["ordinary_ms"]["p95"] / calm["ordinary_ms"]["p95"],
            })  # fmt: skip
            print(f"round {r}: ordinary searches under the storm / calm: p50 {ratios[-1]['p50']:.2f}x, "
                  f"p95 {ratios[-1]['p95']:.2f}x")  # fmt: skip
        report = {
            "machine": machine(),
            "elasticsearch": node.version if node else url,
            "docs": args.docs,
            "storm_threads": args.storm_threads,
            "rounds": rounds,
            "ratios": ratios,
        }
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(report, fh, indent=2)
    finally:
        drop_index(client, settings)
        client.close()
        if node:
            node.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
