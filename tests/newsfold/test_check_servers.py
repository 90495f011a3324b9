"""``check_servers``: the fail-fast check every command runs before its work."""

from __future__ import annotations

import socket

import pytest

from newsfold.errors import check_servers


def _dead_url() -> str:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_dead_node_first_in_the_list_is_passed_over(settings, redis_url):
    """With several nodes, the check failed on the first dead one (no retries): `newsfold reindex --resume` said
    "cannot reach Elasticsearch" right after a node was killed, while the two others answered."""
    nodes = f"{_dead_url()},{settings.elasticsearch_url}"
    check_servers(settings.replace(elasticsearch_url=nodes, redis_url=redis_url))


def test_every_node_dead_is_still_a_readable_failure(settings, redis_url):
    with pytest.raises(RuntimeError, match="Elasticsearch"):
        check_servers(settings.replace(elasticsearch_url=f"{_dead_url()},{_dead_url()}", redis_url=redis_url))
