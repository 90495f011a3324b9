"""The README's first command, end to end: `newsfold demo --port P` in a subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from newsfold.ports import free_port

pytestmark = pytest.mark.slow


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as res:
        return res.status, res.read().decode()


def test_demo_serves_folded_stories_and_stops_cleanly(redis_url, es_url):
    from newsfold.state import build_redis
    from newsfold.state.jobs import JobStore

    env = {**os.environ, "ELASTICSEARCH_URL": es_url, "REDIS_URL": redis_url}
    out = _run_demo(env)
    # the demo's ingest is a job, as an editor finds it on the Jobs page
    job_id = out.split("(job ", 1)[1].split(",", 1)[0]
    client = build_redis(redis_url)
    job = JobStore(client).require(job_id)
    client.close()
    assert (job.kind, job.status) == ("ingest", "done")
    assert job.done > 0 and job.message in out


@pytest.mark.realnode
def test_demo_on_a_real_node_of_its_own_serves_and_stops_it(redis_url):
    """``./run demo --elasticsearch``: the demo starts a real node of the pinned version and stops it on exit."""
    from newsfold.esinstall import ES_VERSION
    from newsfold.esnode import START_TIMEOUT

    env = {k: v for k, v in os.environ.items() if k != "ELASTICSEARCH_URL"} | {"REDIS_URL": redis_url}
    out = _run_demo(env, "--elasticsearch", serve_within=START_TIMEOUT + 120)  # the node's own bound, then the demo
    assert f"real Elasticsearch {ES_VERSION} at http://127.0.0.1:" in out
    url = out.split(f"real Elasticsearch {ES_VERSION} at ", 1)[1].split()[0]
    with pytest.raises(OSError):
        _get(f"{url}/_cluster/health")  # the node stopped with the demo


def _run_demo(env: dict, *extra: str, serve_within: float = 120) -> str:
    port = free_port()
    env = {**env, "NEWSFOLD_INDEX": f"demo-{port}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "newsfold.cli", "demo", "--port", str(port), "--quiet", "--stories", "12", *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + serve_within
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                status, body = _get(f"http://127.0.0.1:{port}/api/search?q=")
                break
            except OSError:
                assert time.monotonic() < deadline, f"the demo did not start serving within {serve_within:.0f} s"
                time.sleep(0.5)
        data = json.loads(body)
        assert status == 200
        assert 0 < data["stories"] < data["documents"]
        status, html = _get(f"http://127.0.0.1:{port}/")
        assert status == 200 and 'data-testid="top-story"' in html  # no query: top stories
        status, html = _get(f"http://127.0.0.1:{port}/?sort=date")
        assert status == 200 and "other version" in html
        word = data["results"][0]["title"].split()[0]
        status, html = _get(f"http://127.0.0.1:{port}/?q={urllib.request.quote(word)}")
        assert status == 200 and "stor" in html
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "ingested:" in out and "rejected" in out
    return out
