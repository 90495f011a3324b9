"""A real, local Elasticsearch cluster of several nodes on loopback (``./run elasticsearch --nodes 3``).

Every node is a master-eligible data node started from the same cached
distribution as :class:`newsfold.esnode.ElasticsearchNode`, with its own
config, data, logs and ports; the nodes find each other through
``discovery.seed_hosts`` and form the cluster on their first start
(``cluster.initial_master_nodes``, removed before any restart). Tests and
benchmarks start one, then kill, pause, resume or restart a node by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import urllib.error
import urllib.request

from newsfold.esinstall import NodeError
from newsfold.esnode import ClusterSeat, ElasticsearchNode
from newsfold.ports import free_port

DEFAULT_NODES = 3
CLUSTER_HEAP = "1g"


class LocalCluster:
    """``nodes`` real Elasticsearch nodes forming one cluster; :meth:`start` it, :meth:`close` it.

    Args:
        nodes: how many nodes (1-5).
        port: the first node's HTTP port (0: free ports); the others take the next ones.
        data: a folder that survives restarts; each node keeps its data in ``<data>/<node name>``.
        heap: each node's JVM heap.
    """

    def __init__(
        self, *, nodes: int = DEFAULT_NODES, port: int = 0, data: str | os.PathLike | None = None,
        heap: str = CLUSTER_HEAP, foreground: bool = False, die_with_parent: bool = True, announce=print,
    ) -> None:  # fmt: skip
        if not isinstance(nodes, int) or not 1 <= nodes <= 5:
            raise ValueError(f"nodes must be a whole number from 1 to 5, not {nodes!r}")
        names = [f"newsfold-{n + 1}" for n in range(nodes)]
        transports = [free_port() for _ in names]
        seeds = [f"127.0.0.1:{t}" for t in transports]
        self.nodes: dict[str, ElasticsearchNode] = {}
        for n, (name, transport) in enumerate(zip(names, transports, strict=True)):
            self.nodes[name] = ElasticsearchNode(
                port=port + n if port else 0,
                data=os.path.join(data, name) if data else None,
                heap=heap,
                foreground=foreground and n == 0,
                die_with_parent=die_with_parent,
                announce=announce,
                cluster=ClusterSeat(name, transport, seeds, names),
            )
        self.announce = announce

    @property
    def urls(self) -> list[str]:
        """Every node's HTTP URL (``ELASTICSEARCH_URL`` takes them comma-separated)."""
        return [node.url for node in self.nodes.values()]

    @property
    def url(self) -> str:
        return ",".join(self.urls)

    def node(self, name: str) -> ElasticsearchNode:
        try:
            return self.nodes[name]
        except KeyError:
            raise ValueError(f"no node {name!r}; the nodes are {', '.join(self.nodes)}") from None

    def start(self, timeout: float = 240.0) -> LocalCluster:
        """Start every node, then wait until the cluster has them all (raises :class:`NodeError`)."""
        try:
            for node in self.nodes.values():
                node.launch()
            for node in self.nodes.values():
                node.wait_ready(timeout)
            self.wait_for_nodes(len(self.nodes), timeout)
        except BaseException:
            self.close()
            raise
        for node in self.nodes.values():
            assert node.cluster is not None
            node.cluster.bootstrapped = True
        return self

    def health(self, via: str | None = None) -> dict | None:
        """``_cluster/health`` through one node (any that answers by default), or None when none answers."""
        for node in [self.node(via)] if via else self.nodes.values():
            with (
                contextlib.suppress(OSError, ValueError, urllib.error.URLError),
                urllib.request.urlopen(node.url + "/_cluster/health", timeout=5) as resp,
            ):
                return json.loads(resp.read())
        return None

    def wait_for_nodes(self, count: int, timeout: float = 120.0, *, status: str = "yellow") -> dict:
        """Wait until the cluster counts ``count`` nodes and is at least ``status``."""
        deadline = time.monotonic() + timeout
        health: dict | None = None
        while time.monotonic() < deadline:
            health = self.health()
            if health and health.get("number_of_nodes") == count and _at_least(health.get("status"), status):
                return health
            time.sleep(0.5)
        raise NodeError(f"the cluster did not reach {count} nodes and {status} within {timeout:.0f} s: {health}")

    def kill(self, name: str) -> None:
        """SIGKILL one node's JVM (a crash); :meth:`restart` brings it back on its data."""
        self.node(name).kill()

    def pause(self, name: str) -> None:
        self.node(name).pause()

    def resume(self, name: str) -> None:
        self.node(name).resume()

    def restart(self, name: str, timeout: float = 180.0) -> None:
        self.node(name).restart(timeout)

    def stop_all(self) -> None:
        """Stop every node in order, keeping their data (:meth:`start_again` brings the cluster back)."""
        for node in self.nodes.values():
            node.stop()

    def start_again(self, timeout: float = 240.0) -> None:
        """Start every stopped node again on its data and wait for the whole cluster."""
        for node in self.nodes.values():
            if node.process is None:
                node.relaunch()
        for node in self.nodes.values():
            node.wait_ready(timeout)
        self.wait_for_nodes(len(self.nodes), timeout)

    def close(self) -> None:
        for node in self.nodes.values():
            node.close()

    def wait(self) -> int:
        """Block until the first node exits (``./run elasticsearch --nodes``: Ctrl-C)."""
        return next(iter(self.nodes.values())).wait()

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


def _at_least(status: str | None, wanted: str) -> bool:
    order = {"red": 0, "yellow": 1, "green": 2}
    return order.get(status or "red", 0) >= order[wanted]
