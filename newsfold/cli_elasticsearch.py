"""``newsfold elasticsearch``: a real local node, or with ``--nodes N`` a local cluster, in the foreground."""

from __future__ import annotations

import sys


def cmd_elasticsearch(args) -> int:
    from newsfold.esinstall import ES_VERSION
    from newsfold.esnode import DEFAULT_HEAP, ElasticsearchNode

    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    if args.nodes != 1 and args.secure:
        raise SystemExit(
            "newsfold elasticsearch: --secure is for a single node (a cluster with security on needs TLS "
            "between its nodes: docker-compose.yml's way)"
        )
    if args.nodes != 1:
        return _run_cluster(args, say)
    node = ElasticsearchNode(
        port=args.port, data=args.data, heap=args.heap or DEFAULT_HEAP, foreground=True, announce=say,
        security=args.secure,
    )  # fmt: skip
    try:
        node.start()
        kept = f"data kept in {node.data}" if node.keep_data else "data in a temporary folder, removed on exit"
        say(f"Elasticsearch {node.version} (pinned {ES_VERSION}) is up at {node.url}  ({kept}; Ctrl-C stops it)")
        if node.password:
            say("security is on: user elastic, with a password made for this start and printed only here")
            say(f"use it with: ELASTICSEARCH_URL={node.url} ELASTICSEARCH_USER=elastic "
                f"ELASTICSEARCH_PASSWORD={node.password}")  # fmt: skip
        else:
            say(f"use it with: ELASTICSEARCH_URL={node.url}  (security off: any local user can read and write it; "
                "--secure turns it on)")  # fmt: skip
        return node.wait()
    finally:
        node.close()


def _run_cluster(args, say) -> int:
    """``newsfold elasticsearch --nodes N``: a local cluster in the foreground; Ctrl-C stops every node."""
    from newsfold.escluster import CLUSTER_HEAP, LocalCluster
    from newsfold.esinstall import ES_VERSION

    try:
        cluster = LocalCluster(nodes=args.nodes, port=args.port, data=args.data, heap=args.heap or CLUSTER_HEAP,
                               foreground=False, announce=say)  # fmt: skip
    except ValueError as exc:
        raise SystemExit(f"newsfold elasticsearch: {exc}") from None
    try:
        cluster.start()
        for name, node in cluster.nodes.items():
            say(f"{name}: {node.url}  (log {node.log})")
        kept = f"data kept under {args.data}" if args.data else "data in temporary folders, removed on exit"
        say(f"Elasticsearch {ES_VERSION}: a cluster of {args.nodes} nodes is up ({kept}; Ctrl-C stops every node)")
        say(f"use it with: ELASTICSEARCH_URL={cluster.url}")
        return cluster.wait()
    finally:
        cluster.close()
