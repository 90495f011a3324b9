"""Duplicate-lookup latency as the index grows, bytes per indexed page and band-key cardinality.

    python benchmarks/lookup_bench.py [--sizes 10000,100000] [--batches 200] [--elasticsearch]

Bulk-loads synthetic signed documents (the documents ``plugin.fold.batch`` writes,
built from random MinHash signatures with ``plugin.sign.signature.band_tokens``) into
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

After each size is loaded (and refreshed) it times ``plugin.fold.candidates.lookup``
(one ``msearch`` of ``bool.should`` band-key term queries) on ``--batches``
batches of ``--batch`` pages, ``--dup-share`` of them near-copies of an
indexed story and the rest new, and prints p50/p95/p99, the ratio of the p95
at the largest size to the p95 at the smallest, the store bytes per document
and the number of distinct band keys. ``bands.terms`` is indexed without doc
values (lookups only need the inverted index), so a ``cardinality``
aggregation cannot run on it; the distinct keys are counted exactly from the
generated signatures instead.

With ``--elasticsearch`` the script starts a real local Elasticsearch node
(``newsfold.esnode``) for the run and stops it at the end. On anything but
the stand-in, ``index.refresh_interval`` is -1 while a size is bulk-loaded
(nothing looks up in the index meanwhile) and back to the index's own value
afterwards.

At each size, ``--ingest-stories`` stories of the sample generator
(``newsfold.samples``, a new seed per size: 2-5 copies per wire story, with
their own templates, truncations and edits) also go end to end through this
process: ``sign_page`` (extraction and signing) and ``plugin.fold.batch.ingest``
(lookup, bulk with ``refresh=wait_for``, reconcile) in batches of
``NEWSFOLD_BATCH_SIZE``, against the index of that size. Pages/s end to end
is the pages over the wall time of both calls; the ingest calls alone are
also given per batch.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
import tempfile
import time
from collections import Counter
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
    rss_mb,
    server_description,
    server_pid,
    write_json,
)
from tqdm import tqdm

from newsfold.plugin.extract.article import Article
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.candidates import lookup
from newsfold.plugin.fold.document import own_document
from newsfold.plugin.fold.document import path as field_path
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import Signature, band_tokens, content_hash, truncate
from newsfold.plugin.sign.signed_page import SignedPage

BAND_KEYS = field_path("bands") + ".terms"  # the band lookup's field (plugin.fold.lookups.BAND_KEYS)

TARGET_RATIO = 1.5  # p95 at the largest size / p95 at the smallest
TARGET_P50_RATIO = 1.3  # p50 at the largest size / p50 at the smallest
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
            band_keys=band_tokens(hashvalues, bands=self.settings.bands, rows=self.settings.rows),
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
        """Exact number of distinct band tokens per band over the loaded pages (the keys ``band_tokens`` makes: the
        values at the stored precision)."""
        r = self.settings.rows
        sig = truncate(self.signatures[: self.size])
        return sum(len(np.unique(sig[:, b * r : (b + 1) * r], axis=0)) for b in range(self.settings.bands))

    def cluster_count(self) -> int:
        return len(np.unique(self.root[: self.size]))


def load(
    client, settings: Settings, corpus: Corpus, n: int, *, bulk_docs: int = 500, refresh_off: bool = False
) -> dict:
    """Bulk-load ``n`` more pages (``bulk_docs`` per request), then refresh; docs/s and JSON bytes per document."""
    from elasticsearch import helpers

    now = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    json_bytes = 0

    def actions():
        nonlocal json_bytes
        for i, body in corpus.grow(n):
            page = corpus.signed_page(corpus.page_id(i), corpus.signatures[i], corpus.shingles[i], body)
            doc = own_document(page, cluster_id=corpus.page_id(int(corpus.root[i])), match=None, ingested=now)
            json_bytes += len(json.dumps(doc).encode("utf-8"))
            yield {"_op_type": "index", "_index": settings.index, "_id": page.page_id, "_source": doc}

    started = time.perf_counter()
    server = _server_pid()
    server_before = cpu_seconds(server) if server else None
    if refresh_off:  # nothing looks up while a size loads: one refresh at the end instead of one a second
        client.indices.put_settings(index=settings.index, settings={"index": {"refresh_interval": "-1"}})
    bar = tqdm(total=n, desc=f"load to {corpus.size + n} pages", unit="doc")
    ok = 0
    for success, _item in helpers.streaming_bulk(client, actions(), chunk_size=bulk_docs, raise_on_error=True):
        ok += success
        bar.update(1)
    bar.close()
    if refresh_off:
        client.indices.put_settings(
            index=settings.index, settings={"index": {"refresh_interval": settings.refresh_interval}}
        )
    client.indices.refresh(index=settings.index)
    elapsed = time.perf_counter() - started
    server_cpu = (cpu_seconds(server) or 0.0) - server_before if server else None
    return {
        "docs": ok,
        "seconds": elapsed,
        "docs_per_s": ok / elapsed,
        "refresh_off_while_loading": refresh_off,
        "server_cpu_ms_per_doc": 1000 * server_cpu / n if server_cpu is not None else None,
        "json_bytes_per_doc": json_bytes / n,
    }


def measure(
    client, settings: Settings, corpus: Corpus, *, batches: int, batch: int, dup_share: float, warmup: int = 5
) -> dict:
    """Time ``plugin.fold.candidates.lookup`` per batch after ``warmup`` untimed batches; candidates found per page."""
    for w in range(warmup):  # warm-up, not timed
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
        "band lookup, terms_set (as plugin.fold.batch sends it)": lambda p: lookups.band_lookup(
            p.band_keys, size=50, exclude_ids=[p.page_id], min_bands=settings.min_bands
        ),
        "band lookup, one constant_score clause per key": lambda p: lookups.band_lookup(
            p.band_keys, size=50, exclude_ids=[p.page_id], min_bands=settings.min_bands, shape="bool"
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
    from elasticsearch import BadRequestError

    for name, build in shapes.items():
        before = cpu_seconds(server) if server else None
        try:
            for group in pages:
                searches: list[dict] = []
                for p in group:
                    searches += [{"index": settings.index}, build(p)]
                responses = client.msearch(searches=searches)["responses"]
                failed = [r["error"] for r in responses if "error" in r]
                if failed:
                    raise RuntimeError(f"query shape {name!r} failed: {failed[0]}")
        except BadRequestError:  # the stand-in refuses terms_set's constant minimum_should_match
            out[name] = None
            continue
        out[name] = 1000 * ((cpu_seconds(server) or 0.0) - before) / batches if before is not None else None
    return out


def _server_pid() -> int | None:
    """The embedded stand-in's or the started node's process id (None on an external cluster)."""
    return server_pid()


def sample_pages(stories: int, seed: int, tag: str) -> list:
    """The pages of ``stories`` stories of the sample generator (``newsfold.samples``), read into memory."""
    from newsfold.indexer.sources.jsonl import iter_jsonl
    from newsfold.plugin.sign.signed_page import Page
    from newsfold.samples import generate

    with tempfile.TemporaryDirectory(prefix="newsfold-lookup-samples-") as tmp:
        generate(Path(tmp), seed=seed, stories=stories)
        return [
            Page(
                html=rec.html, url=rec.url, id=f"{tag}-{rec.id}", site=rec.site, lang=rec.lang, published=rec.published
            )
            for rec in iter_jsonl(Path(tmp) / "pages.jsonl")
            if rec.html is not None
        ]


def ingest_samples(client, settings: Settings, pages: list) -> dict:
    """``sign_page`` + ``plugin.fold.batch.ingest`` per batch, in this process: pages/s end to end on this index."""
    from newsfold.plugin.fold.batch import ingest
    from newsfold.plugin.sign.signing import sign_page

    server = _server_pid()
    server_before = cpu_seconds(server) if server else None
    sign_s = ingest_s = 0.0
    ingest_ms: list[float] = []
    outcomes: Counter = Counter()
    own_before = time.process_time()
    for n in range(0, len(pages), settings.batch_size):
        t0 = time.perf_counter()
        signed = []
        for page in pages[n : n + settings.batch_size]:
            result = sign_page(page, settings)
            if isinstance(result, SignedPage):
                signed.append(result)
            else:
                outcomes["rejected"] += 1
        t1 = time.perf_counter()
        outcomes.update(o.status for o in ingest(signed, client=client, settings=settings))
        t2 = time.perf_counter()
        sign_s += t1 - t0
        ingest_s += t2 - t1
        ingest_ms.append((t2 - t1) * 1000)
    server_cpu = (cpu_seconds(server) or 0.0) - server_before if server else None
    n = len(pages)
    return {
        "pages": n,
        "outcomes": dict(outcomes),
        "sign_seconds": sign_s,
        "ingest_seconds": ingest_s,
        "pages_per_s_end_to_end": n / (sign_s + ingest_s),
        "pages_per_s_ingest_only": n / ingest_s,
        "ingest_ms_per_batch": percentiles(ingest_ms, points=(50, 95)),
        "client_cpu_ms_per_page": 1000 * (time.process_time() - own_before) / n,
        "server_cpu_ms_per_page": 1000 * server_cpu / n if server_cpu is not None else None,
    }


def index_stats(client, settings: Settings, corpus: Corpus) -> dict:
    """Store bytes per document as the server reports them, band-key cardinality, server memory."""
    stats = client.indices.stats(index=settings.index)["_all"]["primaries"]
    docs = stats["docs"]["count"]
    store = stats["store"]["size_in_bytes"]
    segments = stats.get("segments", {}).get("count")
    try:
        agg = client.search(
            index=settings.index,
            size=0,
            aggs={"keys": {"cardinality": {"field": BAND_KEYS, "precision_threshold": 40000}}},
        )
        aggregated = agg["aggregations"]["keys"]["value"]
    except Exception as exc:  # expected: the band terms have no doc values
        aggregated = f"not available ({type(exc).__name__}: {str(exc)[:120]})"
    server = _server_pid()
    server_rss = rss_mb(server) if server else None
    distinct = corpus.distinct_band_keys()
    return {
        "docs": docs,
        "clusters": corpus.cluster_count(),
        "store_bytes": store,
        "store_bytes_per_doc": store / docs if docs else None,
        "segments": segments,
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
        if st.get("segments") is not None:
            lines.append(f"segments at {st['docs']} pages: {st['segments']}")
        if st["standin_rss_mb"]:
            lines.append(
                f"server RSS at {st['docs']} pages: {st['standin_rss_mb']:.0f} MB "
                f"({st['standin_rss_kb_per_doc']:.1f} KB per page)"
            )
    if any(row.get("lookup_one_segment") for row in result["sizes"]):
        lines.append("the same lookups after _forcemerge to one segment:")
        for row in result["sizes"]:
            one = row.get("lookup_one_segment")
            if one:
                lines.append(
                    f"  at {row['index']['docs']:>7d} pages ({row['index']['segments']} segments before): "
                    f"{fmt_ms(one['batch_ms'])}, CPU ms/batch {one['client_cpu_ms_per_batch']:.1f} + "
                    f"{one['server_cpu_ms_per_batch'] or 0:.1f}"
                )
    if any(row.get("ingest") for row in result["sizes"]):
        lines.append(
            "end to end in this process (sign_page + plugin.fold.batch.ingest, sample-generator pages, "
            f"batches of {result.get('ingest_batch')}):"
        )
        for row in result["sizes"]:
            ig = row.get("ingest")
            if not ig:
                continue
            server_cpu = f"{ig['server_cpu_ms_per_page']:.1f}" if ig["server_cpu_ms_per_page"] is not None else "?"
            lines.append(
                f"  at {row['index']['docs']:>7d} pages: {ig['pages']} pages, "
                f"{ig['pages_per_s_end_to_end']:.1f} pages/s "
                f"end to end (sign {ig['sign_seconds']:.1f} s + ingest {ig['ingest_seconds']:.1f} s), "
                f"ingest alone {ig['pages_per_s_ingest_only']:.1f} pages/s, ingest() per batch "
                f"p50 {ig['ingest_ms_per_batch']['p50']:.0f} / p95 {ig['ingest_ms_per_batch']['p95']:.0f} ms, "
                f"server CPU {server_cpu} ms/page, outcomes {ig['outcomes']}"
            )
    if any(v is not None for row in result["sizes"] for v in (row.get("shapes") or {}).values()):
        lines.append("stand-in CPU ms per msearch of the same pages, by query shape:")
        for name in result["sizes"][0].get("shapes", {}):
            cells = ", ".join(
                f"{row['index']['docs']} pages "
                + ("refused" if row["shapes"][name] is None else f"{row['shapes'][name]:.1f}")
                for row in result["sizes"]
            )
            lines.append(f"  {name:40s} {cells}")
    lines.append(f"cardinality aggregation on band_keys: {result['sizes'][-1]['index']['cardinality_aggregation']}")
    first, last = result["sizes"][0], result["sizes"][-1]
    ratio = result["p50_ratio"]
    verdict = "meets" if ratio <= TARGET_P50_RATIO else "MISSES"
    lines.append(
        f"p50 ratio {last['index']['docs']} / {first['index']['docs']} pages: {ratio:.2f} "
        f"({verdict} the <= {TARGET_P50_RATIO} target)"
    )
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
    parser.add_argument(
        "--ingest-stories",
        type=int,
        default=0,
        help="at each size, also ingest this many sample-generator stories end to end in this process "
        "(sign_page + ingest; about 3.5 pages a story); default 0: none",
    )
    parser.add_argument(
        "--warmup",
        type=int,
        help="untimed lookup batches before each size's timed ones (default 5 on the stand-in, 100 elsewhere: "
        "a JVM compiles its hot code during the first ~50 batches, which would make the first size look slow)",
    )
    parser.add_argument(
        "--merged",
        action="store_true",
        help="on a real server, after each size's lookups force-merge the index to one segment and time them again "
        "(the index then stays merged for the next size's load)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--keep-index", action="store_true", help="do not delete the index on an external cluster")
    add_elasticsearch_flag(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    sizes = parse_sizes(args.sizes, "lookup_bench")
    if sizes is None:
        return 2
    if args.bulk_docs < 1:
        print(f"lookup_bench: --bulk-docs must be >= 1, got {args.bulk_docs}", file=sys.stderr)
        return 2
    if not 0.0 <= args.dup_share <= 1.0:
        print(f"lookup_bench: --dup-share must be in [0, 1], got {args.dup_share}", file=sys.stderr)
        return 2
    with elasticsearch_node(args.elasticsearch, heap=args.es_heap):
        return _run(args, sizes)


def _run(args, sizes: list[int]) -> int:
    settings = env_settings("lookup_bench")
    if settings is None:
        return 2

    from newsfold.embedded import EmbeddedElasticsearch
    from newsfold.errors import exit_code
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import drop_index, ensure_index

    result: dict = {
        "machine": machine(),
        "batch": args.batch,
        "batches": args.batches,
        "dup_share": args.dup_share,
        "body_words": args.body_words,
        "bulk_docs": args.bulk_docs,
        "warmup_batches": args.warmup,
        "ingest_batch": settings.batch_size,
        "sizes": [],
    }
    embedded = None
    try:
        if not settings.elasticsearch_url:
            embedded = EmbeddedElasticsearch()
            settings = settings.replace(elasticsearch_url=embedded.url)
            print(f"embedded Elasticsearch stand-in (osmem-server, in memory) at {embedded.url}", file=sys.stderr)
        result["server"] = (
            "osmem-server stand-in (embedded)" if embedded else server_description(settings.elasticsearch_url)
        )
        settings = settings.replace(index=f"newsfold-lookupbench-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
        client = build_client(settings)
        ensure_index(client, settings)
        corpus = Corpus(settings, sizes[-1], seed=args.seed, body_words=args.body_words)
        try:
            for size in sizes:
                loaded = load(
                    client, settings, corpus, size - corpus.size, bulk_docs=args.bulk_docs, refresh_off=not embedded
                )
                looked = measure(
                    client,
                    settings,
                    corpus,
                    batches=args.batches,
                    batch=args.batch,
                    dup_share=args.dup_share,
                    warmup=args.warmup if args.warmup is not None else (5 if embedded else 100),
                )
                stats = index_stats(client, settings, corpus)
                row = {"load": loaded, "lookup": looked, "index": stats}
                if args.merged and not embedded:
                    # the same lookups once more on one segment: how much of any growth is the segment count
                    client.indices.forcemerge(index=settings.index, max_num_segments=1, wait_for_completion=True)
                    client.indices.refresh(index=settings.index)
                    row["lookup_one_segment"] = measure(
                        client,
                        settings,
                        corpus,
                        batches=args.batches,
                        batch=args.batch,
                        dup_share=args.dup_share,
                        warmup=20,
                    )
                if args.ingest_stories:
                    pages = sample_pages(args.ingest_stories, seed=args.seed + size, tag=f"s{size}")
                    row["ingest"] = ingest_samples(client, settings, pages)
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
    result["p50_ratio"] = last["p50"] / first["p50"]
    cpu_first = result["sizes"][0]["lookup"]["server_cpu_ms_per_batch"]
    cpu_last = result["sizes"][-1]["lookup"]["server_cpu_ms_per_batch"]
    result["server_cpu_ratio"] = cpu_last / cpu_first if cpu_first and cpu_last is not None else None
    print(report(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
