"""The embedded servers of the demo and the tests."""

from __future__ import annotations

import gc
import warnings

from newsfold.embedded import EmbeddedRedis


def test_an_embedded_redis_restart_leaks_no_pipe():
    """Each restart used to leave the stopped server's stderr pipe open (a ResourceWarning, an error here)."""
    server = EmbeddedRedis()
    try:
        first = server.process
        server.restart()
        assert first.stderr.closed
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            del first
            gc.collect()
        assert server.process.poll() is None
    finally:
        server.close()
    assert server.process.stderr.closed
