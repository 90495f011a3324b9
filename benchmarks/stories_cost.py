"""What top stories, a story page and the novelty badges cost, against a plain collapsed search, in one run.

    python benchmarks/stories_cost.py DEV_DIR [--requests 100] [--workers 2] [--json OUT]

The dev pages are ingested through ``newsfold ingest`` (real Celery workers)
into a fresh index on the embedded stand-ins (or on ``ELASTICSEARCH_URL`` /
``REDIS_URL`` when set). Then, one client, ``--requests`` requests per
target after 10 unmeasured ones, in the same process and run:

- ``collapsed``: a plain collapsed search (``collapsed_search`` with no query,
  one page of stories) sent straight to Elasticsearch: the unit of the ratios;
- ``top stories``: ``GET /api/stories?window=all`` and ``?window=7d``, and the page ``GET /``;
- ``story``: ``GET /api/stories/<id>`` and the page ``/stories/<id>``, over the 10 largest stories;
- ``search``: ``GET /api/search?q=WORD`` as today's search page asks it, without
  and with the version relations (the references read in the versions request,
  ``plugin.search.version_relations.with_references``, and the relations computed), measured
  as the search's own two requests plus the Python work.

p50 and p95 wall milliseconds per target and their ratios to ``collapsed``
(and of search with relations to search without) are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from benchlib import machine, percentiles

from newsfold.embedded import services
from newsfold.plugin.admin import admin_queries
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.document import cluster_of
from newsfold.plugin.search import queries
from newsfold.plugin.search.version_relations import read_references, relation_of, with_references
from newsfold.plugin.settings import Settings
from newsfold.web import create_app
from newsfold.web.config import WebSettings

WARMUP = 10


def ingest_dev(settings: Settings, dev_dir: Path, workers: int) -> None:
    """``newsfold ingest DEV_DIR/pages.jsonl`` into ``settings.index`` through local workers."""
    env = {**os.environ, "ELASTICSEARCH_URL": settings.elasticsearch_url, "REDIS_URL": settings.redis_url,
           "NEWSFOLD_INDEX": settings.index}  # fmt: skip
    cmd = [sys.executable, "-m", "newsfold.cli", "ingest", str(dev_dir / "pages.jsonl"), "--workers", str(workers)]
    started = time.monotonic()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    print(f"ingested {dev_dir / 'pages.jsonl'} in {time.monotonic() - started:.0f} s", file=sys.stderr)


def timed(call, n: int) -> dict:
    for _ in range(WARMUP):
        call(0)
    times = []
    for i in range(n):
        start = time.perf_counter()
        call(i)
        times.append((time.perf_counter() - start) * 1000)
    return percentiles(times, points=(50, 95))


def measure(settings: Settings, n: int, word: str) -> dict:
    es = build_client(settings)
    es.indices.refresh(index=settings.index)
    page_size = 10
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(page_size=page_size))
    client = app.test_client()

    def get(url: str):
        res = client.get(url)
        if res.status_code != 200:
            raise RuntimeError(f"{url}: {res.status_code} {res.get_data(as_text=True)[:200]}")
        return res

    largest = es.search(index=settings.index, body=admin_queries.largest_clusters(size=10))
    ids = [b["key"] for b in largest["aggregations"]["clusters"]["buckets"]]
    plain = queries.collapsed_search("", size=page_size)
    search_body = queries.collapsed_search(word, size=page_size)

    def search_requests(with_relations: bool):
        res = es.search(index=settings.index, body=search_body)
        clusters = list(dict.fromkeys(cluster_of(h["_source"]) for h in res["hits"]["hits"]))
        body = queries.versions_of(clusters)
        if with_relations:
            body = with_references(body, agg="clusters")
        versions = es.search(index=settings.index, body=body)
        if with_relations:
            refs = read_references(versions, agg="clusters")
            for bucket in versions["aggregations"]["clusters"]["buckets"]:
                for hit in bucket["versions"]["hits"]["hits"]:
                    relation_of(hit, refs)

    targets = {
        "collapsed (unit)": lambda i: es.search(index=settings.index, body=plain),
        "GET /api/search (no query)": lambda i: get("/api/search"),
        f"search '{word}': 2 requests, no relations": lambda i: search_requests(False),
        f"search '{word}': 2 requests + relations": lambda i: search_requests(True),
        f"GET /?q={word} (page with badges)": lambda i: get(f"/?q={word}"),
        "GET /api/stories?window=all": lambda i: get("/api/stories?window=all"),
        "GET /api/stories?window=7d": lambda i: get("/api/stories?window=7d"),
        "GET / (top stories page)": lambda i: get("/"),
        "GET /api/stories/<id>": lambda i: get(f"/api/stories/{ids[i % len(ids)]}"),
        "GET /stories/<id> (page)": lambda i: get(f"/stories/{ids[i % len(ids)]}"),
    }
    return {name: timed(call, n) for name, call in targets.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dev_dir", type=Path)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--word", default="the", help="the search word (default: one most pages have)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    base = Settings.from_env().replace(index=f"stories-cost-{uuid.uuid4().hex[:8]}")
    with services(base, announce=lambda m: print(m, file=sys.stderr)) as live:
        ingest_dev(live, args.dev_dir, args.workers)
        figures = measure(live, args.requests, args.word)
    unit = figures["collapsed (unit)"]
    print(f"{machine()}\n{args.requests} requests per target, one client; ms and ratio to a plain collapsed search")
    print(f"{'target':<48}{'p50':>8}{'p95':>8}{'p50 x':>8}{'p95 x':>8}")
    for name, f in figures.items():
        print(f"{name:<48}{f['p50']:>8.1f}{f['p95']:>8.1f}{f['p50'] / unit['p50']:>8.2f}{f['p95'] / unit['p95']:>8.2f}")
    a = figures[f"search '{args.word}': 2 requests, no relations"]
    b = figures[f"search '{args.word}': 2 requests + relations"]
    print(f"search with relations / without: p50 {b['p50'] / a['p50']:.2f}x, p95 {b['p95'] / a['p95']:.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"requests": args.requests, "figures": figures}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
