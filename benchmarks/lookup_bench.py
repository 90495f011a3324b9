"""Duplicate-lookup latency as the index grows, bytes per indexed page and band-key cardinality.

    python benchmarks/lookup_bench.py [--sizes 10000,100000] [--batches 200]

Bulk-loads synthetic signed documents (the documents ``plugin.batch`` writes,
built from random MinHash signatures with ``plugin.signature.band_keys``) into
a fresh index on the embedded stand-in, or on ``ELASTICSEARCH_URL`` when set.
The corpus is a sequence of stories whose sizes follow a truncated power law
(P(k) ~ k^-2.5, 1 <= k <= 50: three stories in four are single pages, and the
cluster sizes do not grow with the corpus, as syndication does not); every
copy keeps each MinHash value of its story's first page with probability J,
J uniform in [0.4, 0.95], and carries that page's body (a copy's body is the
same text). Bodies are ``--body-words`` words drawn from a Zipf vocabulary;
the default is none, because the stand-in keeps everything in RAM (about
80 KB per page without a body, 210 KB with 500 words: 100,000 pages with
bodies would need ~21 GB); the body's share of a real page is measured by
``ingest_bench.py`` on real pages.

After each size is loaded (and refreshed) it times ``plugin.batch.lookup``
(one ``msearch`` of ``bool.should`` band-key term queries) on ``--batches``
batches of ``--batch`` pages, ``--dup-share`` of them near-copies of an
indexed story and the rest new, and prints p50/p95/p99, the ratio of the p95
at the largest size to the p95 at the smallest, the store bytes per document
and the number of distinct band keys. ``band_keys`` is indexed without doc
values (lookups only need the inverted index), so a ``cardinality``
aggregation cannot run on it; the distinct keys are counted exactly from the
generated signatures instead.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np
from benchlib import (
    child_processes,
    cpu_seconds,
    env_settings,
    fmt_ms,
    headline,
    machine,
    percentiles,
    rss_mb,
    write_json,
)
from tqdm import tqdm

from newsfold.plugin import queries
from newsfold.plugin.batch import lookup
from newsfold.plugin.document import SignedPage
from newsfold.plugin.document import path as field_path
from newsfold.plugin.extract import Article
from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import Signature, band_keys, content_hash

BAND_KEYS = field_path("band_keys")

TARGET_RATIO = 1.5
MAX_STORY = 50
STORY_EXPONENT = 2.5


class Corpus:
    """Synthetic stories: signatures, shingle counts and bodies, grown page by page."""

    def __init__(self, settings: Settings, capacity: int, *, seed: int, body_words: int) -> None:
        self.settings = settings
        self.rng = np.random.default_rng(seed)
        self.num_perm = settings.num_perm
        self.signatures = np.empty((capacity, self.num_perm), dtype=np.uint32)
        self.shingles = np.empty(capacity, dtype=np.int32)
        self.root = np.empty(capacity, dtype=np.int64)  # index of the story's first page
        self.size = 0
        self.body_words = body_words
        sizes = np.arange(1, MAX_STORY + 1)
        weights = sizes.astype(float) ** -STORY_EXPONENT
        self.story_sizes, self.story_p = sizes, weights / weights.sum()
        vocab_rng = np.random.default_rng(seed + 1)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        self.vocab = np.array(
            ["".join(vocab_rng.choice(letters, size=n)) for n in vocab_rng.integers(2, 11, size=20000)]
        )
        ranks = np.arange(1, len(self.vocab) + 1, dtype=float)
        self.vocab_p = (1 / ranks) / (1 / ranks).sum()

    def page_id(self, i: int) -> str:
        return f"p{i:09d}"

    def _body(self) -> str:
        if not self.body_words:
            return ""
        return " ".join(self.rng.choice(self.vocab, size=self.body_words, p=self.vocab_p))

    def _near_copy(self, hashvalues: np.ndarray) -> np.ndarray:
        keep = self.rng.random(self.num_perm) < self.rng.uniform(0.4, 0.95)
        fresh = self.rng.integers(0, 2**32, size=self.num_perm, dtype=np.uint32)
        return np.where(keep, hashvalues, fresh).astype(np.uint32)

    def grow(self, n: int):
        """Append ``n`` pages (whole stories, the last one cut at ``n``); yield ``(index, body)`` for each."""
        end = self.size + n
        while self.size < end:
            story = int(self.rng.choice(self.story_sizes, p=self.story_p))
            root = self.size
            body = self._body()
            first = self.rng.integers(0, 2**32, size=self.num_perm, dtype=np.uint32)
            shingles = int(np.exp(self.rng.uniform(np.log(80), np.log(1500))))
            for k in range(min(story, end - self.size)):
                i = self.size
                self.signatures[i] = first if k == 0 else self._near_copy(first)
                self.shingles[i] = shingles if k == 0 else max(10, int(shingles * self.rng.uniform(0.5, 1.1)))
                self.root[i] = root
                self.size += 1
                yield i, body

    def signed_page(self, page_id: str, hashvalues: np.ndarray, shingles: int, body: str = ""):
        """A ``SignedPage`` for a synthetic signature (title and body are filler)."""
        article = Article(title=f"story {page_id}", text=body, lang="en")
        return SignedPage(
            page_id=page_id,
            url=f"https://site{int(self.rng.integers(0, 5000))}.example/{page_id}",
            url_key=None,
            site=None,
            article=article,
            signature=Signature(hashvalues, int(shingles), int(shingles) + 1),
            band_keys=band_keys(hashvalues, bands=self.settings.bands, rows=self.settings.rows),
            content_hash=content_hash(page_id + body),
        )

    def queries(self, n: int, dup_share: float, tag: str) -> list:
        """``n`` pages to look up: near-copies of a random indexed page's story, or new pages."""
        pages = []
        for j in range(n):
            if self.rng.random() < dup_share:
                root = int(self.root[int(self.rng.integers(0, self.size))])
                values = self._near_copy(self.signatures[root])
                shingles = self.shingles[root]
            else:
                values = self.rng.integers(0, 2**32, size=self.num_perm, dtype=np.uint32)
                shingles = int(self.rng.integers(80, 1500))
            pages.append(self.signed_page(f"q-{tag}-{j:06d}", values, shingles))
        return pages

    def distinct_band_keys(self) -> int:
        """Exact number of distinct band keys over the loaded pages (the same keys ``band_keys`` makes)."""
        r = self.settings.rows
        sig = self.signatures[: self.size]
        return sum(len(np.unique(sig[:, b * r : (b + 1) * r], axis=0)) for b in range(self.settings.bands))

    def cluster_count(self) -> int:
        return len(np.unique(self.root[: self.size]))


def load(client, settings: Settings, corpus: Corpus, n: int, *, bulk_docs: int = 500) -> dict:
    """Bulk-load ``n`` more pages (``bulk_docs`` per request), then refresh; docs/s and JSON bytes per document."""
    from elasticsearch import helpers

    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    json_bytes = 0

    def actions():
        nonlocal json_bytes
        for i, body in corpus.grow(n):
            page = corpus.signed_page(corpus.page_id(i), corpus.signatures[i], corpus.shingles[i], body)
            doc = page.own_document(cluster_id=corpus.page_id(int(corpus.root[i])), match=None, ingested=now)
            json_bytes += len(json.dumps(doc).encode("utf-8"))
            yield {"_op_type": "index", "_index": settings.index, "_id": page.page_id, "_source": doc}

    started = time.perf_counter()
    server = _server_pid()
    server_before = cpu_seconds(server) if server else None
    bar = tqdm(total=n, desc=f"load to {corpus.size + n} pages", unit="doc")
    ok = 0
    for success, _item in helpers.streaming_bulk(client, actions(), chunk_size=bulk_docs, raise_on_error=True):
        ok += success
        bar.update(1)
    bar.close()
    client.indices.refresh(index=settings.index)
    elapsed = time.perf_counter() - started
    server_cpu = (cpu_seconds(server) or 0.0) - server_before if server else None
    return {
        "docs": ok,
        "seconds": elapsed,
        "docs_per_s": ok / elapsed,
        "server_cpu_ms_per_doc": 1000 * server_cpu / n if server_cpu is not None else None,
        "json_bytes_per_doc": json_bytes / n,
    }


def measure(client, settings: Settings, corpus: Corpus, *, batches: int, batch: int, dup_share: float) -> dict:
    """Time ``plugin.batch.lookup`` per batch; candidates found per page."""
    for w in range(5):  # warm-up, not timed
        lookup(corpus.queries(batch, dup_share, f"w{corpus.size}-{w}"), client=client, settings=settings)
    times: list[float] = []
    candidates: list[int] = []
    client_cpu = 0.0
    server = _server_pid()
    server_before = cpu_seconds(server) if server else None
    for b in tqdm(range(batches), desc=f"lookups at {corpus.size} pages", unit="batch"):
        pages = corpus.queries(batch, dup_share, f"{corpus.size}-{b}")
        t0, c0 = time.perf_counter(), time.process_time()
        found = lookup(pages, client=client, settings=settings)
        times.append((time.perf_counter() - t0) * 1000)
        client_cpu += time.process_time() - c0
        candidates += [len(found.get(p.page_id, [])) for p in pages]
    server_cpu = (cpu_seconds(server) or 0.0) - server_before if server else None
    cand = np.asarray(candidates)
    return {
        "batch_ms": percentiles(times),
        "per_page_ms_mean": float(np.mean(times)) / batch,
        "client_cpu_ms_per_batch": 1000 * client_cpu / batches,
        # CPU time is what the machine's other users cannot inflate much; wall time they can
        "server_cpu_ms_per_batch": 1000 * server_cpu / batches if server_cpu is not None else None,
        "candidates_per_page_mean": float(cand.mean()),
        "pages_with_candidates": float((cand > 0).mean()),
    }


def query_shapes(client, settings: Settings, corpus: Corpus, *, batches: int, batch: int) -> dict:
    """Stand-in CPU per ``msearch`` of ``batch`` queries for simpler query shapes than the band lookup.

    Tells whether a growth of the lookup cost with the corpus comes from the
    query (``bool.should`` with ``minimum_should_match``, the ``ids``
    exclusion, fetching ``_source``) or from how the server evaluates any
    query with many terms (a plain ``terms`` query).
    """
    server = _server_pid()  # None on an external cluster: the queries still run, unmeasured
    ids_rng = np.random.default_rng(corpus.size)  # not the corpus' own generator: the corpus stays the same
    shapes = {
        "band lookup as plugin.batch sends it": lambda p: queries.band_lookup(
            p.band_keys, size=50, exclude_ids=[p.page_id], min_bands=settings.min_bands
        ),
        "terms query, same keys, no _source": lambda p: {
            "query": {"terms": {BAND_KEYS: p.band_keys}},
            "size": 50,
            "_source": False,
        },
        "terms query, first 32 keys, no _source": lambda p: {
            "query": {"terms": {BAND_KEYS: p.band_keys[:32]}},
            "size": 50,
            "_source": False,
        },
        "one term query": lambda p: {"query": {"term": {BAND_KEYS: p.band_keys[0]}}, "size": 50, "_source": False},
        "ids query, 128 random ids (no band keys)": lambda p: {
            "query": {"ids": {"values": [corpus.page_id(int(i)) for i in ids_rng.integers(0, corpus.size, 128)]}},
            "size": 50,
            "_source": False,
        },
    }
    pages = [corpus.queries(batch, 0.5, f"shape-{corpus.size}-{b}") for b in range(batches)]
    out = {}
    for name, build in shapes.items():
        before = cpu_seconds(server) if server else None
        for group in pages:
            searches: list[dict] = []
            for p in group:
                searches += [{"index": settings.index}, build(p)]
            responses = client.msearch(searches=searches)["responses"]
            failed = [r["error"] for r in responses if "error" in r]
            if failed:
                raise RuntimeError(f"query shape {name!r} failed: {failed[0]}")
        out[name] = 1000 * ((cpu_seconds(server) or 0.0) - before) / batches if before is not None else None
    return out


def _server_pid() -> int | None:
    """The embedded stand-in's process id (None on an external cluster)."""
    servers = [p for p in child_processes() if p.name == "osmem-server"]
    return servers[0].pid if servers else None


def index_stats(client, settings: Settings, corpus: Corpus) -> dict:
    """Store bytes per document as the server reports them, band-key cardinality, server memory."""
    stats = client.indices.stats(index=settings.index)["_all"]["primaries"]
    docs = stats["docs"]["count"]
    store = stats["store"]["size_in_bytes"]
    try:
        agg = client.search(
            index=settings.index,
            size=0,
            aggs={"keys": {"cardinality": {"field": BAND_KEYS, "precision_threshold": 40000}}},
        )
        aggregated = agg["aggregations"]["keys"]["value"]
    except Exception as exc:  # expected: band_keys has no doc values
        aggregated = f"not available ({type(exc).__name__}: {str(exc)[:120]})"
    server = _server_pid()
    server_rss = rss_mb(server) if server else None
    distinct = corpus.distinct_band_keys()
    return {
        "docs": docs,
        "clusters": corpus.cluster_count(),
        "store_bytes": store,
        "store_bytes_per_doc": store / docs if docs else None,
        "distinct_band_keys": distinct,
        "distinct_band_keys_per_doc": distinct / docs if docs else None,
        "cardinality_aggregation": aggregated,
        "standin_rss_mb": server_rss,
        "standin_rss_kb_per_doc": 1024 * server_rss / docs if server_rss and docs else None,
    }


def report(result: dict) -> str:
    m = result["machine"]
    lines = [
        f"{headline('lookup', m)}; server {result['server']}",
        f"batches of {result['batch']} pages, {result['batches']} timed batches per size, "
        f"{result['dup_share']:.0%} near-copies among the looked-up pages, body {result['body_words']} words, "
        f"loaded {result.get('bulk_docs', 500)} documents per bulk request",
        "",
        "pages     clusters  lookup per batch, wall (msearch)        CPU ms/batch client+server  candidates/page"
        "  load docs/s (server CPU ms/doc)  store B/doc  JSON B/doc  distinct band keys (per doc)",
    ]
    for row in result["sizes"]:
        st, lk, ld = row["index"], row["lookup"], row["load"]
        server_cpu = lk["server_cpu_ms_per_batch"]
        cpu = f"{lk['client_cpu_ms_per_batch']:.1f} + " + (f"{server_cpu:.1f}" if server_cpu is not None else "?")
        load_cpu = f"{ld['server_cpu_ms_per_doc']:.1f}" if ld["server_cpu_ms_per_doc"] is not None else "?"
        lines.append(
            f"{st['docs']:<9d} {st['clusters']:<9d} {fmt_ms(lk['batch_ms']):38s}  {cpu:27s}  "
            f"{lk['candidates_per_page_mean']:15.1f}  {ld['docs_per_s']:11.0f} ({load_cpu:>5s})"
            f"{'':16s}  {st['store_bytes_per_doc']:11.0f}  {ld['json_bytes_per_doc']:10.0f}  "
            f"{st['distinct_band_keys']} ({st['distinct_band_keys_per_doc']:.1f})"
        )
    for row in result["sizes"]:
        st = row["index"]
        if st["standin_rss_mb"]:
            lines.append(
                f"stand-in RSS at {st['docs']} pages: {st['standin_rss_mb']:.0f} MB "
                f"({st['standin_rss_kb_per_doc']:.1f} KB per page)"
            )
    if any(v is not None for row in result["sizes"] for v in (row.get("shapes") or {}).values()):
        lines.append("stand-in CPU ms per msearch of the same pages, by query shape:")
        for name in result["sizes"][0].get("shapes", {}):
            cells = ", ".join(f"{row['index']['docs']} pages {row['shapes'][name]:.1f}" for row in result["sizes"])
            lines.append(f"  {name:40s} {cells}")
    lines.append(f"cardinality aggregation on band_keys: {result['sizes'][-1]['index']['cardinality_aggregation']}")
    first, last = result["sizes"][0], result["sizes"][-1]
    ratio = result["p95_ratio"]
    verdict = "meets" if ratio <= TARGET_RATIO else "MISSES"
    lines.append(
        f"p95 ratio {last['index']['docs']} / {first['index']['docs']} pages: {ratio:.2f} "
        f"({verdict} the <= {TARGET_RATIO} target)"
    )
    if result.get("server_cpu_ratio") is not None:
        lines.append(
            f"server CPU per lookup batch, ratio {last['index']['docs']} / {first['index']['docs']} pages: "
            f"{result['server_cpu_ratio']:.2f} (less sensitive to other load on the machine than wall time)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated index sizes, ascending")
    parser.add_argument("--batches", type=int, default=200, help="timed lookup batches per size (default 200)")
    parser.add_argument("--batch", type=int, default=25, help="pages per lookup batch (default 25)")
    parser.add_argument("--dup-share", type=float, default=0.5, help="share of looked-up pages that are copies")
    parser.add_argument(
        "--body-words",
        type=int,
        default=0,
        help="words of filler body per story (default 0: the stand-in holds ~130 KB more RAM per page with 500)",
    )
    parser.add_argument(
        "--compare-shapes",
        action="store_true",
        help="also time simpler query shapes on the stand-in (does the server's cost grow with the corpus?)",
    )
    parser.add_argument(
        "--bulk-docs",
        type=int,
        default=500,
        help="documents per bulk request while loading (default 500; the stand-in never merges the segment "
        "each request makes, so its lookup cost depends on this)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--keep-index", action="store_true", help="do not delete the index on an external cluster")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        print(f"lookup_bench: --sizes must be comma-separated integers, got {args.sizes!r}", file=sys.stderr)
        return 2
    if not sizes or sizes != sorted(sizes) or sizes[0] < 1 or len(set(sizes)) != len(sizes):
        print(f"lookup_bench: --sizes must be distinct, positive and ascending, got {args.sizes!r}", file=sys.stderr)
        return 2
    if args.bulk_docs < 1:
        print(f"lookup_bench: --bulk-docs must be >= 1, got {args.bulk_docs}", file=sys.stderr)
        return 2
    if not 0.0 <= args.dup_share <= 1.0:
        print(f"lookup_bench: --dup-share must be in [0, 1], got {args.dup_share}", file=sys.stderr)
        return 2
    settings = env_settings("lookup_bench")
    if settings is None:
        return 2

    from newsfold.embedded import EmbeddedElasticsearch
    from newsfold.errors import exit_code
    from newsfold.plugin.client import build_client
    from newsfold.plugin.index import drop_index, ensure_index

    result: dict = {
        "machine": machine(),
        "batch": args.batch,
        "batches": args.batches,
        "dup_share": args.dup_share,
        "body_words": args.body_words,
        "bulk_docs": args.bulk_docs,
        "sizes": [],
    }
    embedded = None
    try:
        if not settings.elasticsearch_url:
            embedded = EmbeddedElasticsearch()
            settings = settings.replace(elasticsearch_url=embedded.url)
            print(f"embedded Elasticsearch stand-in (osmem-server, in memory) at {embedded.url}", file=sys.stderr)
        result["server"] = "osmem-server stand-in (embedded)" if embedded else settings.elasticsearch_url
        settings = settings.replace(index=f"newsfold-lookupbench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        client = build_client(settings)
        ensure_index(client, settings)
        corpus = Corpus(settings, sizes[-1], seed=args.seed, body_words=args.body_words)
        try:
            for size in sizes:
                loaded = load(client, settings, corpus, size - corpus.size, bulk_docs=args.bulk_docs)
                looked = measure(
                    client, settings, corpus, batches=args.batches, batch=args.batch, dup_share=args.dup_share
                )
                stats = index_stats(client, settings, corpus)
                row = {"load": loaded, "lookup": looked, "index": stats}
                if args.compare_shapes:
                    row["shapes"] = query_shapes(client, settings, corpus, batches=args.batches, batch=args.batch)
                result["sizes"].append(row)
        finally:
            if not embedded and not args.keep_index:
                drop_index(client, settings)
    except (KeyboardInterrupt, Exception) as exc:
        return exit_code(exc, "lookup_bench")
    finally:
        if embedded:
            embedded.close()
    first, last = result["sizes"][0]["lookup"]["batch_ms"], result["sizes"][-1]["lookup"]["batch_ms"]
    result["p95_ratio"] = last["p95"] / first["p95"]
    cpu_first = result["sizes"][0]["lookup"]["server_cpu_ms_per_batch"]
    cpu_last = result["sizes"][-1]["lookup"]["server_cpu_ms_per_batch"]
    result["server_cpu_ratio"] = cpu_last / cpu_first if cpu_first and cpu_last is not None else None
    print(report(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
