"""Which Elasticsearch the suite runs on (``./run test --backend standin|elasticsearch``).

- ``standin`` (the default): the in-memory osmem stand-in, started once per
  session; fast, for the edit-test loop;
- ``elasticsearch``: a real Elasticsearch node (newsfold.esnode, the pinned
  version) that the session starts and stops itself, or the cluster at
  ``ELASTICSEARCH_URL`` when that is set.
"""

from __future__ import annotations

import os

BACKEND = os.environ.get("NEWSFOLD_TEST_BACKEND") or (
    "elasticsearch" if os.environ.get("ELASTICSEARCH_URL") else "standin"
)
if BACKEND not in ("standin", "elasticsearch"):
    raise RuntimeError(f"NEWSFOLD_TEST_BACKEND must be standin or elasticsearch, not {BACKEND!r}")
REAL_ES = BACKEND == "elasticsearch"

#: ``index.refresh_interval`` of the suite's own indices on a real node. Every ingest batch waits for one
#: refresh (``refresh=wait_for``); at Elasticsearch's default 1 s the suite spends most of its time waiting.
#: The race tests (tests/system/test_nrt.py) create their indices at the default 1 s.
TEST_REFRESH = "100ms" if REAL_ES else "1s"
