"""What folding a search costs: the same searches folded and unfolded, interleaved in one run.

    python benchmarks/fold_search_bench.py DEV_DIR [--pages 20000] [--rounds 20] [--cache FILE] [--elasticsearch]

The index is built as ``server_cost.py`` builds its replay: the dev pages are
extracted and signed once (``--cache FILE`` keeps them), the distinct pages go
through ``plugin.fold.batch.ingest`` (real lookups and clustering), and the index is
then filled to ``--pages`` documents with copies of them (new ids and urls,
the cluster of their original), bulk-loaded directly. Then, one client,
``--rounds`` rounds over ``--words`` query words picked from the dev texts
across the range of document frequencies (the commonest word, then ranks
growing by about 3x), each search once folded and once unfolded in an order
that alternates from search to search:

- **host search** (docs/embedding.md): a host's body (``text_query(word)``,
  10 hits, a few ``_source`` fields, a highlight) sent as is, against
  ``fold_search(client, body, versions=3)``: the product's folding of a host
  search (``fold_query``: collapse on ``newsfold.cluster_id`` with inner hits
  of 4 versions, the ``newsfold_stories`` cardinality and the
  ``newsfold_unfolded`` count);
- **own search**: ``collapsed_search(word)`` (newsfold's own story search:
  collapse, cardinality, no inner hits) against the same body with
  ``collapse`` and the two newsfold aggregations taken out; and **own +
  versions_of**: the two requests newsfold's search page sends (the stories,
  then ``versions_of`` their clusters) against the same unfolded body.

Two more pairs tell where the host search's cost goes: ``versions=0``
(collapse and the two aggregations, no versions) and both sides without
the highlight. **Versions on demand** (docs/embedding.md) is ``versions=0``
for the results page plus, when a reader opens a story, ``fold_versions``
on that one hit: the pair "one story's versions opened" times that second
request against the unfolded search.

p50 and p95 of the wall milliseconds per search (client side) and of the
server's ``took`` are printed with their ratios (target: folded at most 1.5x
unfolded). It runs on the stand-in by default, on ``ELASTICSEARCH_URL`` when
set, or on a real local node with ``--elasticsearch``.
"""

from __future__ import annotations

import argparse
import collections
import copy
import dataclasses
import re
import sys
import time
from pathlib import Path

from benchlib import (
    add_elasticsearch_flag,
    elasticsearch_node,
    env_settings,
    headline,
    machine,
    percentiles,
    server_description,
    write_json,
)

from newsfold.plugin.fold.document import own_document
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import SignedPage

TARGET_RATIO = 1.5
WARMUP_ROUNDS = 3
_WORD = re.compile(r"[a-z]{3,}")


def pick_words(pages: list[SignedPage], n: int) -> list[str]:
    """``n`` words across the range of document frequencies: ranks 0, 2, 8, 26, ... of the df order."""
    df: collections.Counter = collections.Counter()
    for p in pages:
        df.update(set(_WORD.findall(p.article.text.lower())))
    ranked = [w for w, _ in df.most_common()]
    out, rank = [], 0
    while len(out) < n and rank < len(ranked):
        out.append(ranked[rank])
        rank = rank * 3 + 2
    return out


def build_index(client, settings: Settings, signed: list[SignedPage], pages: int) -> dict:
    """Distinct pages through ``ingest``, then copies bulk-loaded with their original's cluster."""
    from elasticsearch import helpers

    from newsfold.plugin.fold.batch import ingest

    started = time.perf_counter()
    cluster: dict[str, str] = {}
    outcomes: collections.Counter = collections.Counter()
    for n in range(0, len(signed), settings.batch_size):
        for o in ingest(signed[n : n + settings.batch_size], client=client, settings=settings):
            outcomes[o.status] += 1
            if o.cluster_id:
                cluster[o.page_id] = o.cluster_id
    ingested = time.perf_counter() - started
    base = [p for p in signed if p.page_id in cluster]
    stamp = "2026-11-25T12:00:00.000Z"

    def copies():
        made, k = len(base), 1
        while made < pages:
            for p in base[: pages - made]:
                copy = dataclasses.replace(p, page_id=f"r{k}-{p.page_id}", url=f"{p.url or ''}#copy{k}")
                doc = own_document(copy, cluster_id=cluster[p.page_id], match=None, ingested=stamp)
                yield {"_index": settings.index, "_id": copy.page_id, "_source": doc}
                made += 1
            k += 1

    helpers.bulk(client, copies(), chunk_size=500)
    client.indices.refresh(index=settings.index)
    client.indices.forcemerge(index=settings.index, max_num_segments=1, wait_for_completion=True)
    client.indices.refresh(index=settings.index)
    docs = client.count(index=settings.index)["count"]
    stories = client.search(
        index=settings.index,
        size=0,
        aggs={"s": {"cardinality": {"field": "newsfold.cluster_id", "precision_threshold": 40000}}},
    )["aggregations"]["s"]["value"]
    return {
        "docs": docs,
        "stories": stories,
        "distinct_pages_ingested": len(signed),
        "outcomes": dict(outcomes),
        "ingest_seconds": ingested,
        "seconds": time.perf_counter() - started,
    }


def host_body(word: str, *, highlight: bool = True) -> dict:
    from newsfold.plugin.search.public_query import text_query

    body = {"query": text_query(word), "size": 10, "_source": ["title", "url", "site", "published"]}
    if highlight:
        body["highlight"] = {"fields": {"body": {"fragment_size": 180, "number_of_fragments": 2}}}
    return body


def unfold(body: dict) -> dict:
    """A folded body without what folding added: ``collapse`` and newsfold's two aggregations."""
    from newsfold.plugin.search.queries import STORIES_AGG, UNFOLDED_AGG

    out = {k: v for k, v in body.items() if k != "collapse"}
    aggs = {k: v for k, v in (out.pop("aggs", None) or {}).items() if k not in (STORIES_AGG, UNFOLDED_AGG)}
    if aggs:
        out["aggs"] = aggs
    return out


def run_pairs(client, index: str, words: list[str], rounds: int) -> dict:
    """Every (word, round) searched folded and unfolded, alternating which goes first."""
    from newsfold.plugin.fold.document import cluster_of
    from newsfold.plugin.search.folded_search import fold_search, fold_versions
    from newsfold.plugin.search.queries import collapsed_search, versions_of

    def host_unfolded(word):
        return client.search(index=index, body=host_body(word))

    def host_folded(word):
        return fold_search(client, host_body(word), index=index, versions=3)

    def own_folded(word):
        return client.search(index=index, body=collapsed_search(word))

    def own_unfolded(word):
        return client.search(index=index, body=unfold(collapsed_search(word)))

    def own_with_versions(word):  # what newsfold's search page sends: the stories, then their versions
        res = client.search(index=index, body=collapsed_search(word))
        clusters = list(dict.fromkeys(cluster_of(h["_source"]) for h in res["hits"]["hits"]))
        versions = client.search(index=index, body=versions_of(clusters))
        return {"took": res["took"] + versions["took"]}

    def host_plain_unfolded(word):
        return client.search(index=index, body=host_body(word, highlight=False))

    def host_plain_folded(word):
        return fold_search(client, host_body(word, highlight=False), index=index, versions=3)

    def host_no_versions(word):
        return fold_search(client, host_body(word), index=index, versions=0)

    pages = {w: host_no_versions(w)["hits"]["hits"] for w in words}  # the results pages a reader opens from

    def host_open_one(word):  # versions on demand: the reader opens the first story of the page
        first = pages[word][:1]
        return {"hits": {"hits": fold_versions(client, host_body(word), copy.deepcopy(first), index=index)}}

    pairs = {
        "host search": (host_unfolded, host_folded),
        "host, versions=0": (host_unfolded, host_no_versions),
        "host, one story's versions opened": (host_unfolded, host_open_one),
        "host, no highlight": (host_plain_unfolded, host_plain_folded),
        "own search": (own_unfolded, own_folded),
        "own + versions_of": (own_unfolded, own_with_versions),
    }
    wall: dict = {(name, kind): [] for name in pairs for kind in ("unfolded", "folded")}
    took: dict = {key: [] for key in wall}
    turn = 0
    for r in range(WARMUP_ROUNDS + rounds):
        for word in words:
            for name, (plain, folded) in pairs.items():
                order = [("unfolded", plain), ("folded", folded)]
                if turn % 2:
                    order.reverse()
                turn += 1
                for kind, call in order:
                    t0 = time.perf_counter()
                    res = call(word)
                    ms = (time.perf_counter() - t0) * 1000
                    if r >= WARMUP_ROUNDS:
                        wall[(name, kind)].append(ms)
                        if res.get("took") is not None:  # fold_versions gives hits, not the server's took
                            took[(name, kind)].append(float(res["took"]))
    out = {}
    for name in pairs:
        u, f = percentiles(wall[(name, "unfolded")], (50, 95)), percentiles(wall[(name, "folded")], (50, 95))
        tu, tf = percentiles(took[(name, "unfolded")], (50, 95)), percentiles(took[(name, "folded")], (50, 95))
        out[name] = {
            "unfolded_ms": u,
            "folded_ms": f,
            "unfolded_took_ms": tu,
            "folded_took_ms": tf,
            "ratio_p50": f["p50"] / u["p50"],
            "ratio_p95": f["p95"] / u["p95"],
            "took_ratio_p50": tf["p50"] / tu["p50"] if tu["p50"] else None,
            "took_ratio_p95": tf["p95"] / tu["p95"] if tu["p95"] else None,
        }
    return out


def report(result: dict) -> str:
    ix = result["index"]
    lines = [
        f"{headline('fold search', result['machine'])}; server {result['server']}",
        f"index: {ix['docs']} documents, {ix['stories']} stories (force-merged to one segment); "
        f"{result['rounds']} rounds x {len(result['words'])} words: {', '.join(result['words'])}",
        "",
        f"{'search':18s} {'unfolded p50/p95 ms':>20s} {'folded p50/p95 ms':>18s} {'ratio p50':>9s} {'ratio p95':>9s}"
        f"   server took p50/p95 ms (unfolded -> folded)",
    ]
    for name, r in result["pairs"].items():
        u, f, tu, tf = r["unfolded_ms"], r["folded_ms"], r["unfolded_took_ms"], r["folded_took_ms"]
        lines.append(
            f"{name:18s} {u['p50']:9.1f} / {u['p95']:7.1f} {f['p50']:8.1f} / {f['p95']:7.1f} "
            f"{r['ratio_p50']:9.2f} {r['ratio_p95']:9.2f}   {tu['p50']:.0f} / {tu['p95']:.0f} -> "
            f"{tf['p50']:.0f} / {tf['p95']:.0f}"
        )
    for name, r in result["pairs"].items():
        worst = max(r["ratio_p50"], r["ratio_p95"])
        verdict = "meets" if worst <= TARGET_RATIO else "MISSES"
        lines.append(f"{name}: folded / unfolded at most {worst:.2f}x ({verdict} the <= {TARGET_RATIO}x target)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dev_dir", type=Path, help="folder holding pages.jsonl (the dev set)")
    parser.add_argument("--pages", type=int, default=20000, help="documents in the index (default 20000)")
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds over the words (default 20)")
    parser.add_argument("--words", type=int, default=8, help="query words (default 8)")
    parser.add_argument("--cache", type=Path, help="keep the signed dev pages in this file between runs")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    add_elasticsearch_flag(parser)
    args = parser.parse_args(argv)
    if not (args.dev_dir / "pages.jsonl").is_file():
        print(f"fold_search_bench: {args.dev_dir / 'pages.jsonl'} not found", file=sys.stderr)
        return 2
    if args.pages < 1 or args.rounds < 1 or args.words < 1:
        print("fold_search_bench: --pages, --rounds and --words must be >= 1", file=sys.stderr)
        return 2
    with elasticsearch_node(args.elasticsearch, heap=args.es_heap):
        return _run(args)


def _run(args) -> int:
    from server_cost import signed_dev_pages

    from newsfold.embedded import EmbeddedElasticsearch
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import drop_index, ensure_index

    settings = env_settings("fold_search_bench")
    if settings is None:
        return 2
    signed = signed_dev_pages(args.dev_dir, settings.replace(elasticsearch_url=None, redis_url=None), args.cache)
    signed = signed[: args.pages]
    embedded = None
    try:
        if not settings.elasticsearch_url:
            embedded = EmbeddedElasticsearch()
            settings = settings.replace(elasticsearch_url=embedded.url)
        live = settings.replace(index=f"newsfold-foldsearch-{time.strftime('%Y%m%d-%H%M%S')}", redis_url=None)
        client = build_client(live)
        ensure_index(client, live)
        try:
            result: dict = {
                "machine": machine(),
                "server": "osmem-server stand-in (embedded)"
                if embedded
                else server_description(settings.elasticsearch_url),
                "rounds": args.rounds,
                "words": pick_words(signed, args.words),
            }
            result["index"] = build_index(client, live, signed, args.pages)
            result["pairs"] = run_pairs(client, live.index, result["words"], args.rounds)
        finally:
            drop_index(client, live)
    finally:
        if embedded:
            embedded.close()
    print(report(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
