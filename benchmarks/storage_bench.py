"""What folding costs on disk: index bytes per document with and without the fold fields, on a real node.

    python benchmarks/storage_bench.py DEV_DIR [--cache FILE] [--json OUT] [--elasticsearch]

Needs a real Elasticsearch (``_disk_usage`` and ``_forcemerge`` mean nothing
on the stand-in): the node at ``ELASTICSEARCH_URL`` when set, else a real
local node (``newsfold.esnode``) that the script starts and stops;
``--elasticsearch`` is accepted for symmetry with the other scripts.

The dev pages are extracted and signed once (``server_cost.signed_dev_pages``;
``--cache FILE`` keeps them between runs), every distinct page once (copies of
a page would share their terms and compress together). Their documents (the
``_source`` ``plugin.fold.batch`` writes into newsfold's own index) go into one
fresh index per variant, one shard, no replica; each index is force-merged to
one segment (``_forcemerge?max_num_segments=1``) and measured with
``_stats`` (store bytes) and ``POST /<index>/_disk_usage?run_expensive_tasks=true``
(bytes per field: inverted index, stored fields, doc values, points, norms).

Variants:

- ``with fold fields``: the mapping of ``plugin.fold.index.index_body`` as it is;
- ``without fold fields``: the same documents and mapping without the
  ``newsfold`` object (a host's index before newsfold): the difference is
  the cost of folding;
- ``_source without bands`` / ``passages``: the fold mapping with
  ``_source.excludes`` on one field, to tell how much of the stored
  ``_source`` each holds (a measurement only: newsfold reads both back, and
  the band terms of a page without ``bands`` in ``_source`` would be lost on
  a partial update). Elasticsearch then also keeps the original source in
  ``_recovery_source`` until the shard's retention lease moves on (12 hours
  on a one-copy index), so these variants' store size is given without it;
- ``fold fields, unread structures off``: a proposal: ``index``/``doc_values``
  off on the fold fields no query, sort or aggregation reads (see
  ``UNREAD`` below: each was checked with grep over plugin/, web/, indexer/, newsfold/);
- ``best_compression``: the fold mapping with ``index.codec: best_compression``,
  against the same codec without fold fields.

Each variant's fold cost is its store bytes per document (without
``_recovery_source``) minus those of the variant without fold fields and the
same codec. Target: the fold fields add at most 2 KB per document.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

from benchlib import add_elasticsearch_flag, elasticsearch_node, env_settings, headline, machine, write_json

from newsfold.plugin.fold.document import FOLD, FOLD_FIELDS, own_document
from newsfold.plugin.fold.index import index_body
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import SignedPage

TARGET_FOLD_BYTES = 2048  # the fold fields may add at most 2 KB per document

#: fold fields whose inverted index / points / doc values nothing reads (grep of every reader, 2026-11-25):
#: shingle_count, token_count, title_key, day, folded are only read back from ``_source``; content_hash is
#: queried by prefix (reindex chunks) but never sorted or aggregated; matched_id only by an ``exists`` query,
#: which works without doc values.
UNREAD = {
    "shingle_count": {"index": False, "doc_values": False},
    "token_count": {"index": False, "doc_values": False},
    "title_key": {"index": False, "doc_values": False},
    "day": {"index": False, "doc_values": False},
    "folded": {"index": False, "doc_values": False},
    "content_hash": {"doc_values": False},
    "matched_id": {"doc_values": False},
}


def documents(pages: list[SignedPage]) -> list[tuple[str, dict]]:
    stamp = "2026-11-25T12:00:00.000Z"
    return [(p.page_id, own_document(p, cluster_id=p.page_id, match=None, ingested=stamp)) for p in pages]


def variants(settings: Settings) -> dict[str, tuple[dict, bool]]:
    """name -> (index body, keep the fold fields in the documents)."""
    base = index_body(settings)
    base["settings"]["index"].update({"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "-1"})
    out: dict[str, tuple[dict, bool]] = {"with fold fields": (base, True)}
    bare = copy.deepcopy(base)
    bare["mappings"]["properties"].pop(FOLD)
    bare["mappings"]["_meta"].pop(FOLD, None)
    out["without fold fields"] = (bare, False)
    for field in ("bands", "passages"):
        body = copy.deepcopy(base)
        body["mappings"]["_source"] = {"excludes": [f"{FOLD}.{field}"]}
        out[f"_source without {field}"] = (body, True)
    lean = copy.deepcopy(base)
    for field, change in UNREAD.items():
        assert field in FOLD_FIELDS, field
        lean["mappings"]["properties"][FOLD]["properties"][field].update(change)
    out["fold fields, unread structures off"] = (lean, True)
    best = copy.deepcopy(base)
    best["settings"]["index"]["codec"] = "best_compression"
    out["fold fields, best_compression"] = (best, True)
    bare_best = copy.deepcopy(bare)
    bare_best["settings"]["index"]["codec"] = "best_compression"
    out["without fold fields, best_compression"] = (bare_best, False)
    return out


def baseline_of(name: str) -> str:
    """The variant without fold fields to compare a variant with (same codec)."""
    return "without fold fields, best_compression" if "best_compression" in name else "without fold fields"


def per_field(usage: dict) -> tuple[dict[str, dict], int, int]:
    """``_disk_usage``'s fields as ``{field: {total, inverted_index, stored_fields, doc_values, points, norms}}``."""
    index_usage = next(iter(v for k, v in usage.items() if k != "_shards"))
    out = {}
    for name, f in index_usage["fields"].items():
        out[name] = {
            "total": f["total_in_bytes"],
            "inverted_index": f["inverted_index"]["total_in_bytes"],
            "stored_fields": f["stored_fields_in_bytes"],
            "doc_values": f["doc_values_in_bytes"],
            "points": f["points_in_bytes"],
            "norms": f["norms_in_bytes"],
        }
    return out, index_usage["store_size_in_bytes"], index_usage["all_fields"]["total_in_bytes"]


def measure(client, name: str, body: dict, docs: list[tuple[str, dict]], keep_fold: bool) -> dict:
    from elasticsearch import helpers

    index = f"storage-bench-{int(time.time())}-{abs(hash(name)) % 10**6}"
    client.indices.create(index=index, settings=body["settings"], mappings=body["mappings"])
    try:
        actions = (
            {"_index": index, "_id": i, "_source": d if keep_fold else {k: v for k, v in d.items() if k != FOLD}}
            for i, d in docs
        )
        helpers.bulk(client, actions, chunk_size=500)
        client.indices.refresh(index=index)
        client.indices.forcemerge(index=index, max_num_segments=1, wait_for_completion=True)
        client.indices.refresh(index=index)
        stats = client.indices.stats(index=index)["_all"]["primaries"]
        usage = client.perform_request(
            "POST",
            f"/{index}/_disk_usage",
            params={"run_expensive_tasks": "true"},
            headers={"accept": "application/json"},
        ).body
        fields, store, all_fields = per_field(usage)
        n = stats["docs"]["count"]
        recovery = fields.get("_recovery_source", {}).get("total", 0)
        return {
            "store_bytes_per_doc_without_recovery_source": (stats["store"]["size_in_bytes"] - recovery) / n,
            "docs": n,
            "segments": stats["segments"]["count"],
            "store_bytes": stats["store"]["size_in_bytes"],
            "store_bytes_per_doc": stats["store"]["size_in_bytes"] / n,
            "disk_usage_store_bytes": store,
            "disk_usage_all_fields_bytes": all_fields,
            "fields_bytes_per_doc": {k: {kk: vv / n for kk, vv in v.items()} for k, v in fields.items()},
        }
    finally:
        client.indices.delete(index=index)


def json_bytes(docs: list[tuple[str, dict]]) -> dict[str, float]:
    """Mean JSON bytes per document: the whole ``_source``, the fold object, and its two largest fields."""
    n = len(docs)

    def size(v) -> int:
        return len(json.dumps(v, ensure_ascii=False).encode("utf-8"))

    return {
        "whole _source": sum(size(d) for _, d in docs) / n,
        "newsfold object": sum(size(d[FOLD]) for _, d in docs) / n,
        "newsfold.bands": sum(size(d[FOLD]["bands"]) for _, d in docs) / n,
        "newsfold.passages": sum(size(d[FOLD]["passages"]) for _, d in docs) / n,
        "body": sum(size(d.get("body")) for _, d in docs) / n,
    }


def report(result: dict) -> str:
    v = result["variants"]
    base, bare = v["with fold fields"], v["without fold fields"]
    lines = [
        f"{headline('storage', result['machine'])}; server {result['server']}",
        f"{base['docs']} distinct signed dev pages, one shard, force-merged to one segment",
        "",
        f"{'variant':46s} {'store B/doc':>11s} {'_source B/doc':>13s} {'fold fields add':>15s}",
    ]
    for name, r in v.items():
        src = r["fields_bytes_per_doc"].get("_source", {}).get("total", 0)
        store = r["store_bytes_per_doc_without_recovery_source"]
        bare_of = v.get(baseline_of(name))
        cost = f"{store - bare_of['store_bytes_per_doc']:+15.0f}" if bare_of and name != baseline_of(name) else ""
        lines.append(f"{name:46s} {store:11.0f} {src:13.0f} {cost:>15s}")
    lines.append("(store without _recovery_source, which _source excludes keep for up to 12 h)")
    fold_cost = base["store_bytes_per_doc"] - bare["store_bytes_per_doc"]
    verdict = "meets" if fold_cost <= TARGET_FOLD_BYTES else "MISSES"
    lines.append(
        f"the fold fields add {fold_cost:.0f} bytes per document ({verdict} the <= {TARGET_FOLD_BYTES} B target)"
    )
    src_with = base["fields_bytes_per_doc"]["_source"]["total"]
    for field in ("bands", "passages"):
        r = v.get(f"_source without {field}")
        if r is None:
            continue
        lines.append(
            f"  of _source, newsfold.{field} holds {src_with - r['fields_bytes_per_doc']['_source']['total']:.0f} "
            f"bytes per document (JSON {result['json_bytes'][f'newsfold.{field}']:.0f})"
        )
    lines.append("")
    lines.append("bytes per document by field, with fold fields (_disk_usage):")
    lines.append(
        f"  {'field':28s} {'total':>8s} {'inverted':>9s} {'stored':>8s} {'docvalues':>9s} {'points':>7s} {'norms':>6s}"
    )
    for name, f in sorted(base["fields_bytes_per_doc"].items(), key=lambda kv: -kv[1]["total"]):
        if f["total"] < 0.5:
            continue
        lines.append(
            f"  {name:28s} {f['total']:8.1f} {f['inverted_index']:9.1f} {f['stored_fields']:8.1f} "
            f"{f['doc_values']:9.1f} {f['points']:7.1f} {f['norms']:6.1f}"
        )
    lines.append(f"mean JSON bytes per document: {', '.join(f'{k} {b:.0f}' for k, b in result['json_bytes'].items())}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dev_dir", type=Path, help="folder holding pages.jsonl (the dev set)")
    parser.add_argument("--cache", type=Path, help="keep the signed dev pages in this file between runs")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    add_elasticsearch_flag(parser, default_heap="1g")
    args = parser.parse_args(argv)
    if not (args.dev_dir / "pages.jsonl").is_file():
        print(f"storage_bench: {args.dev_dir / 'pages.jsonl'} not found", file=sys.stderr)
        return 2
    with elasticsearch_node(True, heap=args.es_heap):  # always a real server: the stand-in has no disk
        return _run(args)


def _run(args) -> int:
    from benchlib import server_description
    from server_cost import signed_dev_pages

    from newsfold.plugin.client import build_client

    settings = env_settings("storage_bench")
    if settings is None:
        return 2
    pages = signed_dev_pages(args.dev_dir, settings.replace(elasticsearch_url=None, redis_url=None), args.cache)
    docs = documents(pages)
    client = build_client(settings)
    result: dict = {
        "machine": machine(),
        "server": server_description(settings.elasticsearch_url),
        "json_bytes": json_bytes(docs),
        "variants": {},
    }
    for name, (body, keep_fold) in variants(settings).items():
        print(f"variant: {name}", file=sys.stderr)
        try:
            result["variants"][name] = measure(client, name, body, docs, keep_fold)
        except Exception as exc:  # a variant the server refuses is reported, not fatal
            print(f"  failed: {exc}", file=sys.stderr)
            if name in ("with fold fields", "without fold fields"):
                raise
    result["fold_bytes_per_doc_by_variant"] = {
        name: r["store_bytes_per_doc_without_recovery_source"]
        - result["variants"][baseline_of(name)]["store_bytes_per_doc"]
        for name, r in result["variants"].items()
        if baseline_of(name) in result["variants"] and name != baseline_of(name)
    }
    result["fold_bytes_per_doc"] = (
        result["variants"]["with fold fields"]["store_bytes_per_doc"]
        - result["variants"]["without fold fields"]["store_bytes_per_doc"]
    )
    print(report(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
