"""Which Elasticsearch the suite runs on (``./run test --backend standin|elasticsearch|cluster``).

- ``standin`` (the default): the in-memory osmem stand-in, started once per
  session; fast, for the edit-test loop;
- ``elasticsearch``: a real Elasticsearch node (newsfold.esnode, the pinned
  version) that the session starts and stops itself, or the cluster at
  ``ELASTICSEARCH_URL`` when that is set;
- ``cluster``: a local cluster of three real nodes (newsfold.escluster) that
  the session starts and stops; the suite's indices get 3 shards and 1
  replica, so that copies of one story land on different shards and nodes.
"""

from __future__ import annotations

import os
from collections.abc import Container, Iterable

BACKEND = os.environ.get("NEWSFOLD_TEST_BACKEND") or (
    "elasticsearch" if os.environ.get("ELASTICSEARCH_URL") else "standin"
)
if BACKEND not in ("standin", "elasticsearch", "cluster"):
    raise RuntimeError(f"NEWSFOLD_TEST_BACKEND must be standin, elasticsearch or cluster, not {BACKEND!r}")
CLUSTER = BACKEND == "cluster"
REAL_ES = BACKEND in ("elasticsearch", "cluster")
#: primary shards and replicas of the suite's own indices (``NEWSFOLD_SHARDS``/``NEWSFOLD_REPLICAS`` on a cluster)
SHARDS, REPLICAS = (3, 1) if CLUSTER else (1, 0)
if CLUSTER:  # the workers and commands the tests start read them too
    os.environ.setdefault("NEWSFOLD_SHARDS", str(SHARDS))
    os.environ.setdefault("NEWSFOLD_REPLICAS", str(REPLICAS))

#: ``index.refresh_interval`` of the suite's own indices on a real node. Every ingest batch waits for one
#: refresh (``refresh=wait_for``); at Elasticsearch's default 1 s the suite spends most of its time waiting.
#: The race tests (tests/system/test_nrt.py) create their indices at the default 1 s.
TEST_REFRESH = "100ms" if REAL_ES else "1s"


#: The fixtures through which a test reaches an Elasticsearch (the session's server, or nodes it starts itself).
SERVER_FIXTURES = frozenset({"es_server", "es_url", "es_node_factory"})
#: Set by ``./run test --backend all`` for its real-node and cluster stages: a test that never reaches an
#: Elasticsearch runs the same code on every backend, so it ran once, in the stand-in stage, and is left out there.
SERVER_TESTS_ONLY = os.environ.get("NEWSFOLD_SERVER_TESTS_ONLY") == "1"


def reaches_a_server(fixturenames: Iterable[str], keywords: Container[str]) -> bool:
    """Whether a test talks to an Elasticsearch: a server fixture in its fixture closure, or the ``realnode`` mark."""
    return bool(SERVER_FIXTURES & set(fixturenames)) or "realnode" in keywords
