"""``newsfold.ports.free_port``: the ports of the servers newsfold starts stay out of the ephemeral range."""

from __future__ import annotations

import socket

from newsfold import ports
from newsfold.escluster import LocalCluster
from newsfold.esnode import ElasticsearchNode


def test_a_node_and_a_cluster_take_ports_no_outgoing_connection_can_take_first():
    """A cluster node died at start with "BindTransportException" while other suites ran alongside: the transport
    port, chosen from the ephemeral range, had been taken by an outgoing connection before the node bound it."""
    node = ElasticsearchNode(announce=lambda m: None)
    cluster = LocalCluster(nodes=3, announce=lambda m: None)
    try:
        chosen = [node.port, node.transport_port]
        for member in cluster.nodes.values():
            assert member.cluster is not None
            chosen += [member.port, member.cluster.transport_port]
        assert all(ports.LOWEST <= port < ports.ephemeral_start() for port in chosen), chosen
        assert len(set(chosen)) == len(chosen), chosen
    finally:
        node.close()
        cluster.close()


def test_a_port_something_listens_on_is_passed_over(monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))  # outside the range, so no other server of the machine can hold it
        busy.listen()
        taken = busy.getsockname()[1]
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            free = probe.getsockname()[1]
        picks = iter([taken, free])
        monkeypatch.setattr(ports.random, "randrange", lambda low, high: next(picks))
        assert ports.free_port() == free


def test_with_no_room_below_the_ephemeral_range_the_kernel_chooses(monkeypatch):
    monkeypatch.setattr(ports, "ephemeral_start", lambda: ports.LOWEST + 10)
    port = ports.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free
    assert port >= ports.LOWEST + 10
