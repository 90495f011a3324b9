"""What the search server spends per ingested page, by request and by document field.

    python benchmarks/server_cost.py DEV_DIR [--pages 4000] [--batch 25,100] [--bulk]
    python benchmarks/server_cost.py DEV_DIR --elasticsearch http://127.0.0.1:9250 --es-pid PID [--floor]

Signs the dev pages once (cached with ``--cache FILE``), replicates the signed
pages with new ids (as ``ingest_bench.py`` replicates raw pages) and then:

- **replay** (default): for each batch size, ``plugin.fold.batch.ingest`` in this
  process on a fresh stand-in, batch after batch, with the stand-in's CPU
  read around every request, so it is attributed by request type (``msearch``
  lookups, ``bulk`` writes, ``mget``, ``search``). No extraction and no Celery:
  only the server's share of an ingest and the client's own work on it.
- **presence** (``--presence``): each batch size is replayed twice, without and
  then with the band keys' presence pre-filter (``newsfold.indexer.presence``, a
  Redis of its own): node CPU per page by request, and the band lookups sent
  per page (a page none of whose keys may exist in the index sends none).
- **bulk** (``--bulk``): the documents of the first 2,000 pages indexed alone,
  in bulks of the first ``--batch`` size, into fresh indices: all fields, then
  without ``band_keys``, then without ``body``; the difference is what each
  costs the server to index.

With ``--elasticsearch URL --es-pid PID`` the replay runs against a real node
on this machine (PID: its JVM, whose CPU is read from /proc), in a fresh
index dropped afterwards; ``--floor`` adds, in the same run, the node's CPU to
index the same documents with plain bulk requests (``refresh=wait_for`` per
batch, no lookups): the plain-indexing floor that issue 29's goal is a ratio
of. CPU of requests not wrapped here (index metadata reads) is reported as
``other``. ``--warmup N`` first replays and floor-indexes N other pages,
uncounted: a fresh node's JIT compilation otherwise lands on the replay,
which runs first (measured: the same replay cost a fresh node 17-21 ms of
CPU per page, and 7-11 ms on the same node a few runs later).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import json
import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path

from benchlib import child_processes, cpu_seconds, machine
from elasticsearch import helpers

from newsfold.indexer.presence import RedisPresence
from newsfold.indexer.sources.jsonl import iter_jsonl
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.document import FOLD, own_document
from newsfold.plugin.fold.index import drop_index, ensure_index, index_body
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import Page, SignedPage
from newsfold.plugin.sign.signing import sign_page

BULK_DOCS = 2000
_REDIS: list = []


def _presence() -> RedisPresence:
    """A presence filter in a Redis of this run's own (started once)."""
    import redis

    from newsfold.embedded import EmbeddedRedis

    if not _REDIS:
        _REDIS.append(EmbeddedRedis())
    return RedisPresence(redis.Redis.from_url(_REDIS[0].url), size="128mb")


def signed_dev_pages(dev_dir: Path, settings: Settings, cache: Path | None) -> list[SignedPage]:
    """The dev pages extracted and signed once (the cache is a pickle written by this script)."""
    if cache and cache.exists():
        return pickle.loads(cache.read_bytes())
    signed = []
    for rec in iter_jsonl(dev_dir / "pages.jsonl"):
        if rec.html is None:
            continue
        page = Page(html=rec.html, url=rec.url, id=rec.id, site=rec.site, lang=rec.lang, published=rec.published)
        result = sign_page(page, settings)
        if isinstance(result, SignedPage):
            signed.append(result)
    if cache:
        cache.write_bytes(pickle.dumps(signed))
    return signed


def replicate(signed: list[SignedPage], n: int) -> list[SignedPage]:
    """``n`` pages: copy k of a page gets the id ``r<k>-<id>`` and its own url."""
    out: list[SignedPage] = []
    k = 0
    while len(out) < n:
        for p in signed[: n - len(out)]:
            out.append(dataclasses.replace(p, page_id=f"r{k}-{p.page_id}", url=f"{p.url or ''}#copy{k}"))
        k += 1
    return out


class ServerMeter:
    """Stand-in CPU seconds, attributed to the client calls made while they ran."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.by_call: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])

    def now(self) -> float:
        return cpu_seconds(self.pid) or 0.0

    def wrap(self, client, names=("msearch", "bulk", "mget", "search")) -> None:
        """Meter calls on ``client`` and on the clients ``client.options()`` derives (the bulk helpers use those)."""
        meter = self
        for name in names:
            original = getattr(client, name)

            def metered(*args, _original=original, _name=name, **kwargs):
                before = meter.now()
                try:
                    return _original(*args, **kwargs)
                finally:
                    entry = meter.by_call[_name]
                    entry[0] += 1
                    entry[1] += meter.now() - before

            setattr(client, name, metered)
        options = client.options

        def metered_options(*args, **kwargs):
            derived = options(*args, **kwargs)
            meter.wrap(derived, names)
            return derived

        client.options = metered_options


@contextlib.contextmanager
def _server(url: str | None, pid: int | None):
    """``(url, pid)`` of the real node given, or of a fresh stand-in."""
    if url:
        yield url, pid
        return
    from newsfold.embedded import EmbeddedElasticsearch

    with contextlib.closing(EmbeddedElasticsearch()) as server:
        yield server.url, next(p.pid for p in child_processes() if p.name == "osmem-server")


def replay(
    pages: list[SignedPage],
    settings: Settings,
    batch: int,
    url: str | None = None,
    pid: int | None = None,
    presence: RedisPresence | None = None,
) -> dict:
    with _server(url, pid) as (server_url, server_pid):
        live = settings.replace(elasticsearch_url=server_url, index=f"server-cost-{time.time_ns()}", batch_size=batch)
        client = build_client(live)
        ensure_index(client, live, presence=presence)
        meter = ServerMeter(server_pid)
        meter.wrap(client)
        lookups = _count_lookups(client)
        redis_pid = _REDIS[0].process.pid if presence is not None and _REDIS else None
        redis_before = cpu_seconds(redis_pid) if redis_pid else None
        before, own, started = meter.now(), time.process_time(), time.perf_counter()
        for n in range(0, len(pages), batch):
            ingest(pages[n : n + batch], client=client, settings=live, presence=presence)
        used, own = meter.now() - before, time.process_time() - own
        redis_used = (cpu_seconds(redis_pid) or 0.0) - redis_before if redis_before is not None else None
        if url:
            drop_index(client, live)
        attributed = sum(s for _, s in meter.by_call.values())
        meter.by_call["other"] = [0, used - attributed]
        return {
            "batch": batch,
            "presence": presence is not None,
            "lookups_per_page": lookups["sent"] / len(pages),
            "keys_per_lookup": lookups["keys"] / max(1, lookups["sent"]),
            "pages": len(pages),
            "seconds": time.perf_counter() - started,
            "server_cpu_ms_per_page": 1000 * used / len(pages),
            "client_cpu_ms_per_page": 1000 * own / len(pages),
            # the presence filter's Redis (its scripts run there), not in the node's figure
            "redis_cpu_ms_per_page": 1000 * redis_used / len(pages) if redis_used is not None else None,
            "server_cpu_ms_per_page_by_call": {
                name: {"calls": int(c), "ms_per_page": 1000 * s / len(pages)} for name, (c, s) in meter.by_call.items()
            },
        }


def _count_lookups(client) -> dict[str, int]:
    """Count the band lookups (and their keys) the ``msearch`` requests of ``client`` carry."""
    counts = {"sent": 0, "keys": 0}
    original = client.msearch

    def counted(*args, **kwargs):
        for search in kwargs.get("searches", [])[1::2]:
            counts["sent"] += 1
            query = search["query"]
            match = query["bool"]["must"][0] if "must" in query.get("bool", {}) else query
            shape = match.get("terms_set") or {}
            counts["keys"] += len(next(iter(shape.values()))["terms"]) if shape else len(match["bool"]["should"])
        return original(*args, **kwargs)

    client.msearch = counted
    return counts


def _without(doc: dict, drop: tuple[str, ...]) -> dict:
    """A document without some fields (top-level, or inside the fold object)."""
    out = {k: v for k, v in doc.items() if k not in drop}
    if FOLD in out:
        out[FOLD] = {k: v for k, v in out[FOLD].items() if k not in drop}
    return out


def floor(pages: list[SignedPage], settings: Settings, batch: int, url: str, pid: int) -> dict:
    """The node's CPU per document to index the same documents with plain bulk requests (no lookups)."""
    mapping = index_body(settings)
    client = build_client(settings.replace(elasticsearch_url=url))
    index = f"server-cost-floor-{time.time_ns()}"
    client.indices.create(index=index, mappings=mapping["mappings"], settings=mapping["settings"])
    actions = [
        {"_index": index, "_id": p.page_id,
         "_source": own_document(p, cluster_id=p.page_id, match=None, ingested="2026-01-01T00:00:00.000Z")}
        for p in pages
    ]  # fmt: skip
    before = cpu_seconds(pid) or 0.0
    for n in range(0, len(actions), batch):
        helpers.bulk(client, actions[n : n + batch], refresh="wait_for")
    used = (cpu_seconds(pid) or 0.0) - before
    client.indices.delete(index=index)
    return {"batch": batch, "pages": len(pages), "server_cpu_ms_per_page": 1000 * used / len(pages)}


def bulk_variants(pages: list[SignedPage], settings: Settings, batch: int) -> dict:
    from newsfold.embedded import EmbeddedElasticsearch

    mapping = index_body(settings)
    docs = [
        (p.page_id, own_document(p, cluster_id=p.page_id, match=None, ingested="2026-01-01T00:00:00.000Z"))
        for p in pages
    ]
    out = {}
    with contextlib.closing(EmbeddedElasticsearch()) as server:
        pid = next(p.pid for p in child_processes() if p.name == "osmem-server")
        client = build_client(settings.replace(elasticsearch_url=server.url))
        for label, drop in (("all fields", ()), ("without band_keys", ("band_keys",)), ("without body", ("body",))):
            index = "bulk-" + label.replace(" ", "-")
            m = copy.deepcopy(mapping)
            client.indices.create(index=index, mappings=m["mappings"], settings=m["settings"])
            actions = [{"_index": index, "_id": i, "_source": _without(d, drop)} for i, d in docs]
            before = cpu_seconds(pid) or 0.0
            for n in range(0, len(actions), batch):
                helpers.bulk(client, actions[n : n + batch], refresh="wait_for")
            out[label] = 1000 * ((cpu_seconds(pid) or 0.0) - before) / len(actions)
            client.indices.delete(index=index)
    return {"docs": len(docs), "batch": batch, "server_cpu_ms_per_doc": out}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dev_dir", type=Path, help="folder holding pages.jsonl (the dev set)")
    parser.add_argument("--pages", type=int, default=4000, help="pages after replication (default 4000)")
    parser.add_argument("--batch", default="25,100", help="comma-separated batch sizes (default 25,100)")
    parser.add_argument("--bulk", action="store_true", help="index-only cost by field instead of the replay")
    parser.add_argument("--cache", type=Path, help="keep the signed dev pages in this file between runs")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--elasticsearch", metavar="URL", help="replay against this real node (with --es-pid)")
    parser.add_argument("--es-pid", type=int, help="the real node's JVM process id (its CPU is read from /proc)")
    parser.add_argument("--floor", action="store_true", help="also the plain-indexing floor on the same node")
    parser.add_argument("--presence", action="store_true",
                        help="replay each batch size twice, without and with the presence pre-filter (a Redis of "
                        "its own)")  # fmt: skip
    parser.add_argument("--warmup", type=int, default=0, metavar="N",
                        help="with --elasticsearch: first replay (and floor-index) N pages, not counted")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        batches = [int(b) for b in args.batch.split(",") if b.strip()]
    except ValueError:
        print(f"server_cost: --batch must be comma-separated integers, got {args.batch!r}", file=sys.stderr)
        return 2
    if not batches or min(batches) < 1 or args.pages < 1:
        print("server_cost: --batch sizes and --pages must be >= 1", file=sys.stderr)
        return 2
    if args.warmup < 0:
        print("server_cost: --warmup must be >= 0", file=sys.stderr)
        return 2
    if not (args.dev_dir / "pages.jsonl").exists():
        print(f"server_cost: no pages.jsonl in {args.dev_dir}", file=sys.stderr)
        return 2
    settings = Settings.from_env().replace(elasticsearch_url=None, redis_url=None)
    signed = signed_dev_pages(args.dev_dir, settings, args.cache)
    result: dict = {"machine": machine(), "signed_dev_pages": len(signed)}
    if args.bulk:
        result["bulk"] = bulk_variants(replicate(signed, min(args.pages, BULK_DOCS)), settings, batches[0])
        for label, ms in result["bulk"]["server_cpu_ms_per_doc"].items():
            print(f"index only, {label:20s} {ms:6.2f} ms of server CPU per document (bulks of {batches[0]})")
    else:
        pages = replicate(signed, args.pages)
        if args.elasticsearch and not args.es_pid:
            print("server_cost: --elasticsearch needs --es-pid (the node's JVM)", file=sys.stderr)
            return 2
        if args.warmup and args.elasticsearch:  # the node's JIT warms up here, not on the first measured run
            warm = replicate(signed, args.warmup)
            replay(warm, settings, batches[0], args.elasticsearch, args.es_pid)
            if args.floor:
                floor(warm, settings, batches[0], args.elasticsearch, args.es_pid)
            result["warmup_pages"] = args.warmup
        result["replay"] = []
        for b in batches:
            result["replay"].append(replay(pages, settings, b, args.elasticsearch, args.es_pid))
            if args.presence:
                result["replay"].append(replay(pages, settings, b, args.elasticsearch, args.es_pid, _presence()))
        if args.floor and args.elasticsearch:
            result["floor"] = [floor(pages, settings, b, args.elasticsearch, args.es_pid) for b in batches]
            for f, r in zip(result["floor"], result["replay"][:: 2 if args.presence else 1], strict=True):
                f["ratio"] = r["server_cpu_ms_per_page"] / f["server_cpu_ms_per_page"]
                print(
                    f"batches of {f['batch']:4d}: plain indexing {f['server_cpu_ms_per_page']:6.2f} ms CPU per page; "
                    f"ingest is {f['ratio']:.2f}x that"
                )
        for r in result["replay"]:
            calls = ", ".join(f"{k} {v['ms_per_page']:.2f}" for k, v in r["server_cpu_ms_per_page_by_call"].items())
            print(
                f"batches of {r['batch']:4d}{' presence' if r['presence'] else ''}: server "
                f"{r['server_cpu_ms_per_page']:6.2f} ms CPU per page ({calls}); client "
                f"{r['client_cpu_ms_per_page']:.2f} ms; "
                + (f"Redis {r['redis_cpu_ms_per_page']:.2f} ms; " if r.get("redis_cpu_ms_per_page") is not None else "")
                + f"{r['pages'] / r['seconds']:.1f} pages/s; "
                f"{r['lookups_per_page']:.2f} lookups per page of {r['keys_per_lookup']:.0f} keys"
            )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
