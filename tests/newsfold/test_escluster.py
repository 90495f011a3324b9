"""A local cluster of three real nodes (``./run elasticsearch --nodes 3``): it forms, loses a node, gets it back.

Starts three more JVMs (1 GB heap each): on the real-node backend only.
"""

from __future__ import annotations

import pytest

from newsfold.escluster import LocalCluster
from newsfold.plugin import ingest
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.index import ensure_index
from newsfold.plugin.fold.store import current_labels
from tests.pages import signed_page, story

pytestmark = [pytest.mark.realnode, pytest.mark.slow]


def _copies(settings, prefix, seed, n, *, first=0):
    return [
        signed_page(settings, f"{prefix}{i}", f"Story {seed} on site {i}", story(seed), site=f"site{i}.test")
        for i in range(first, first + n)
    ]


def test_a_three_node_cluster_goes_on_when_the_node_the_client_talked_to_first_is_killed(settings):
    with LocalCluster(nodes=3, announce=lambda m: None) as cluster:
        health = cluster.health()
        assert health["number_of_nodes"] == 3 and health["number_of_data_nodes"] == 3
        live = settings.replace(elasticsearch_url=cluster.url, shards=3, replicas=1, es_max_retries=3)
        client = build_client(live)
        ensure_index(client, live)
        cluster.wait_for_nodes(3, status="green")
        ingest(_copies(live, "k", 501, 3), client=client, settings=live)
        # The first commit made the founding index; a node lost before its replica starts takes its only copy (red).
        cluster.wait_for_nodes(3, status="green")
        cluster.kill("newsfold-1")  # the first URL of ELASTICSEARCH_URL
        cluster.wait_for_nodes(2)
        outs = ingest(_copies(live, "k", 501, 2, first=3), client=client, settings=live)
        assert {(o.status, o.cluster_id) for o in outs} == {("duplicate", "k0")}
        labels = current_labels([f"k{i}" for i in range(5)], client=client, settings=live)
        assert set(labels.values()) == {"k0"} and len(labels) == 5  # nothing lost, one story
        cluster.restart("newsfold-1")
        assert cluster.wait_for_nodes(3)["number_of_nodes"] == 3
        client.close()
