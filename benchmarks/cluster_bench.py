"""Ingest through Celery workers into a three-node cluster against one node, in the same run.

    python benchmarks/cluster_bench.py ../shared/data/dev [--pages 3000] [--workers 4] [--rounds 1]
        [--json out/cluster.json]

Starts a real local Elasticsearch node (``newsfold.esnode``, 1 GB heap) and a
local cluster of three nodes (``newsfold.escluster``, 1 GB heap each) from the
same distribution, both for the whole run, and one embedded Redis. Then, for
each round, the same ``--pages`` dev pages (replicated as ``ingest_bench.py``
does, with new ids) go through ``--workers`` real Celery worker processes
into a fresh index on each target in turn: the single node with 1 shard and
no replica, the cluster with 3 shards and 1 replica (the suite's cluster
backend). Alternating the targets round by round spreads the machine's drift
over both.

For each target it reports pages/s, the workers' CPU per page, and
Elasticsearch's CPU per page summed over the target's nodes (read from
``/proc``), and the cluster's figures as ratios to the single node's.
Everything runs on one machine: three nodes share its cores, so the
cluster's pages/s shows its cost, not the speed of three machines.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from benchlib import Proc, env_settings, headline, machine, write_json
from ingest_bench import ingest_phase, replicate

from newsfold.plugin.settings import Settings


def _target_phase(live: Settings, name: str, pids: list[int], payloads: list[dict], workers: int) -> dict:
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import drop_index, ensure_index

    index = f"newsfold-cluster-bench-{name}-{time.strftime('%H%M%S')}"
    live = live.replace(index=index)
    client = build_client(live)
    ensure_index(client, live)
    try:
        servers = [Proc(pid, "elasticsearch") for pid in pids]
        result = ingest_phase(live, payloads, workers=workers, index=index, servers=servers)
    finally:
        drop_index(client, live)
        client.close()
    es_cpu = sum(v for k, v in result["cpu_seconds"].items() if k.startswith("elasticsearch"))
    result["cpu_ms_per_page_elasticsearch"] = 1000 * es_cpu / len(payloads)
    result["nodes"] = len(pids)
    return result


def _mean(rounds: list[dict], key: str) -> float:
    return sum(r[key] for r in rounds) / len(rounds)


def summary(result: dict) -> dict:
    single, cluster = result["single"], result["cluster"]
    keys = ("pages_per_s", "cpu_ms_per_page_workers", "cpu_ms_per_page_elasticsearch")
    means = {name: {k: _mean(rounds, k) for k in keys} for name, rounds in (("single", single), ("cluster", cluster))}
    ratios = {k: means["cluster"][k] / means["single"][k] for k in keys}
    return {"means": means, "cluster_over_single": ratios}


def report(result: dict) -> str:
    s = result["summary"]
    lines = [
        headline("cluster ingest", result["machine"]),
        f"{result['pages']} pages, {result['workers']} Celery workers, {result['rounds']} round(s); "
        f"single node: 1 shard, 0 replicas; cluster: 3 nodes, 3 shards, 1 replica",
        "",
        "| target | pages/s | workers' CPU ms/page | Elasticsearch CPU ms/page (all nodes) |",
        "|---|---|---|---|",
    ]
    for name in ("single", "cluster"):
        m = s["means"][name]
        lines.append(
            f"| {name} | {m['pages_per_s']:.1f} | {m['cpu_ms_per_page_workers']:.1f} | "
            f"{m['cpu_ms_per_page_elasticsearch']:.1f} |"
        )
    r = s["cluster_over_single"]
    lines.append(
        f"| cluster / single | {r['pages_per_s']:.2f}x | {r['cpu_ms_per_page_workers']:.2f}x | "
        f"{r['cpu_ms_per_page_elasticsearch']:.2f}x |"
    )
    for name in ("single", "cluster"):
        outcomes = [dict(sorted(run["outcomes"].items())) for run in result[name]]
        lines.append(f"{name}: outcomes per round {outcomes}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dev_dir", type=Path, help="folder holding pages.jsonl (the dev set)")
    parser.add_argument("--pages", type=int, default=3000, help="pages per target and round (default 3000)")
    parser.add_argument("--workers", type=int, default=4, help="Celery worker processes (default 4)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, each on both targets (default 1)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    for name in ("pages", "workers", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if os.environ.get("ELASTICSEARCH_URL"):
        parser.error("this benchmark starts its own node and cluster: unset ELASTICSEARCH_URL")
    settings = env_settings("cluster_bench")
    if settings is None:
        return 2
    settings = settings.replace(read_roots=str(args.dev_dir.resolve()))

    from newsfold.embedded import EmbeddedRedis
    from newsfold.escluster import LocalCluster
    from newsfold.esnode import ElasticsearchNode

    payloads = replicate(args.dev_dir, args.pages)
    result: dict = {"machine": machine(), "pages": len(payloads), "workers": args.workers, "rounds": args.rounds}
    say = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    redis = EmbeddedRedis()
    node = ElasticsearchNode(heap="1g", announce=say)
    cluster = LocalCluster(nodes=3, announce=say)
    try:
        node.start()
        cluster.start()
        cluster.wait_for_nodes(3, status="green")
        assert node.pid is not None
        targets = {
            "single": (settings.replace(elasticsearch_url=node.url, shards=1, replicas=0), [node.pid]),
            "cluster": (
                settings.replace(elasticsearch_url=cluster.url, shards=3, replicas=1),
                [n.pid for n in cluster.nodes.values() if n.pid],
            ),
        }
        result["single"], result["cluster"] = [], []
        for r in range(args.rounds):
            order = ["single", "cluster"] if r % 2 == 0 else ["cluster", "single"]
            for name in order:
                live, pids = targets[name]
                say(f"round {r + 1}: {name} ({len(pids)} node(s))")
                live = live.replace(redis_url=redis.url)
                result[name].append(_target_phase(live, name, pids, payloads, args.workers))
    finally:
        cluster.close()
        node.close()
        redis.close()
    result["summary"] = summary(result)
    print(report(result))
    write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
