"""``./run elasticsearch``: a real node of the pinned version, in the foreground, stopped by Ctrl-C, data kept."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from newsfold.esinstall import ES_VERSION, NodeError, check_java, find_java

JDKS = Path("/usr/lib/jvm")


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as res:
        return json.loads(res.read())


def _start(data: Path, out: Path) -> tuple[subprocess.Popen, str]:
    """``newsfold elasticsearch --port 0 --data DATA`` with Ctrl-C's default behaviour; (process, url)."""
    with out.open("w") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "newsfold.cli",
                "elasticsearch",
                "--port",
                "0",
                "--heap",
                "512m",
                "--data",
                str(data),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # a shell's background job ignores it
        )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, out.read_text()[-3000:]
        for line in out.read_text().splitlines():
            if "is up at " in line:
                return proc, line.split("is up at ", 1)[1].split()[0]
        time.sleep(0.5)
    proc.kill()
    pytest.fail(f"the node did not come up: {out.read_text()[-3000:]}")


@pytest.mark.realnode
@pytest.mark.slow
def test_the_foreground_node_is_real_stops_on_ctrl_c_and_keeps_its_data(tmp_path):
    reachable = Path(tempfile.mkdtemp(prefix="newsfold-data-"))  # as root, the node's user must reach it
    reachable.chmod(0o755)
    try:
        _foreground_run(reachable / "data", tmp_path)
    finally:
        shutil.rmtree(reachable, ignore_errors=True)


def test_a_data_folder_the_node_cannot_reach_is_a_clear_error(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only a launcher running as root hands the node to another user")
    proc = subprocess.run(
        [sys.executable, "-m", "newsfold.cli", "elasticsearch", "--port", "0", "--data", str(tmp_path / "d")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "cannot write" in proc.stderr and "--data" in proc.stderr and "Traceback" not in proc.stderr


def _foreground_run(data: Path, tmp_path: Path) -> None:
    proc, url = _start(data, tmp_path / "first.log")
    try:
        nodes = _get(f"{url}/_nodes/stats/jvm")["nodes"]
        (node,) = nodes.values()
        assert node["jvm"]["mem"]["heap_max_in_bytes"] > 0  # a JVM answers
        (info,) = _get(f"{url}/_nodes/_local")["nodes"].values()
        assert info["version"] == ES_VERSION
        request = urllib.request.Request(f"{url}/kept", method="PUT")
        urllib.request.urlopen(request, timeout=30).close()
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        proc.wait(90)
    assert proc.returncode == 130, (tmp_path / "first.log").read_text()[-2000:]
    with pytest.raises(OSError):
        _get(f"{url}/_cluster/health")  # the node stopped with the command
    proc, url = _start(data, tmp_path / "second.log")
    try:
        assert "kept" in _get(f"{url}/_all/_settings")  # the index outlived the restart
    finally:
        # what this test checks is the security; stopping on Ctrl-C is the foreground test's. Under CI's load a
        # stop took over 90 s, and a process left behind fails a later test with a ResourceWarning: bound the
        # wait by the node's own start bound, then kill it
        from newsfold.esnode import START_TIMEOUT

        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(START_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)


def test_a_java_that_cannot_run_the_node_is_named_with_its_reason(tmp_path):
    assert check_java(tmp_path) == "no bin/java"
    old = sorted(JDKS.glob("java-17*")) if JDKS.is_dir() else []
    if old:
        assert check_java(old[0]).startswith("Java 17 (Elasticsearch 9 needs 21 or newer)")


def test_with_no_usable_java_the_error_lists_every_candidate(monkeypatch, tmp_path):
    import newsfold.esinstall as esinstall

    monkeypatch.setattr(esinstall, "java_candidates", lambda: [("ES_JAVA_HOME", tmp_path)])
    with pytest.raises(NodeError, match=r"(?s)no Java that can run Elasticsearch 9.*ES_JAVA_HOME .*no bin/java"):
        find_java()


def test_bad_node_arguments_are_refused_by_name():
    from newsfold.esnode import ElasticsearchNode

    with pytest.raises(ValueError, match="port"):
        ElasticsearchNode(port=70000)
    with pytest.raises(ValueError, match="heap"):
        ElasticsearchNode(heap="lots")


def test_a_damaged_download_is_a_clear_error(tmp_path, monkeypatch):
    import newsfold.esinstall as esinstall

    damaged = tmp_path / "m2" / "elasticsearch.zip"
    damaged.parent.mkdir()
    damaged.write_bytes(b"PK\x03\x04 not really a zip")
    monkeypatch.setenv("NEWSFOLD_ES_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(esinstall, "_maven_zip", lambda: damaged)
    with pytest.raises(NodeError, match="cannot unpack .*delete it and run the command again"):
        esinstall.fetch_distribution(announce=lambda m: None)
    assert not (tmp_path / "cache" / f"elasticsearch-{ES_VERSION}").exists()


# ---------------------------------------------------------------- issue 32, items 15 and 16: a node of its own
def _as_root():
    if os.geteuid() != 0:
        pytest.skip("only a launcher running as root hands the node to another user")


def test_a_data_folder_of_someone_elses_files_is_refused_never_taken_over(tmp_path):
    _as_root()
    from newsfold.esnode import ElasticsearchNode

    theirs = tmp_path / "theirs"
    (theirs / "inner").mkdir(parents=True)
    (theirs / "inner" / "secret.txt").write_text("root's own file")
    node = ElasticsearchNode(data=theirs, heap="256m", announce=lambda *a: None)
    try:
        with pytest.raises(NodeError, match=r"belongs to root, not to newsfold-es.*never handed over"):
            node.start()
    finally:
        node.close()
    owners = {p.stat().st_uid for p in [theirs, *theirs.rglob("*")]}
    assert owners == {0}  # nothing under it changed hands


@pytest.mark.slow
def test_the_node_keeps_its_files_private_and_inherits_no_secrets(tmp_path, monkeypatch):
    from newsfold.esinstall import service_user
    from newsfold.esnode import ElasticsearchNode

    monkeypatch.setenv("NEWSFOLD_SECRET_KEY", "launcher-secret-0123")
    monkeypatch.setenv("REDIS_URL", "redis://:hunter2@127.0.0.1:6379/0")
    monkeypatch.setenv("ELASTICSEARCH_PASSWORD", "es-secret-4567")
    reachable = Path(tempfile.mkdtemp(prefix="newsfold-data-"))  # as root, the node's user must reach it
    reachable.chmod(0o755)
    data = reachable / "fresh"
    node = ElasticsearchNode(data=data, heap="512m", announce=lambda *a: None)
    try:
        node.start()
        environ = Path(f"/proc/{node.pid}/environ").read_bytes().split(b"\0")
        names = {item.split(b"=", 1)[0].decode() for item in environ if item}
        assert not names & {"NEWSFOLD_SECRET_KEY", "REDIS_URL", "ELASTICSEARCH_PASSWORD"}, names
        assert b"hunter2" not in b"\0".join(environ) and "ES_PATH_CONF" in names and "PATH" in names
        owner = service_user()
        assert data.stat().st_mode & 0o777 == 0o700
        if owner is not None:
            assert data.stat().st_uid == owner[0]
        exposed = [p for p in data.rglob("*") if p.stat().st_mode & 0o077]
        assert not exposed, exposed[:5]
    finally:
        node.close()
        shutil.rmtree(reachable, ignore_errors=True)


def test_secure_is_for_one_node_and_the_cluster_size_is_checked(capsys):
    from newsfold.cli import main

    with pytest.raises(SystemExit, match="--secure is for a single node"):
        main(["elasticsearch", "--nodes", "3", "--secure"])
    with pytest.raises(SystemExit, match="nodes must be a whole number from 1 to 5"):
        main(["elasticsearch", "--nodes", "9"])


@pytest.mark.realnode
@pytest.mark.slow
def test_a_secure_node_refuses_anonymous_requests_and_takes_the_printed_password(tmp_path):
    import base64
    import urllib.error

    out = tmp_path / "out.log"
    with out.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "newsfold.cli", "elasticsearch", "--port", "0", "--heap", "512m", "--secure"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline, line = time.monotonic() + 180, ""
        while time.monotonic() < deadline and "ELASTICSEARCH_PASSWORD=" not in line:
            assert proc.poll() is None, out.read_text()[-3000:]
            line = next((x for x in out.read_text().splitlines() if "ELASTICSEARCH_PASSWORD=" in x), "")
            time.sleep(0.5)
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        url, password = fields["ELASTICSEARCH_URL"], fields["ELASTICSEARCH_PASSWORD"]
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get(url + "/_cluster/health")
        refused.value.close()  # its socket, or a ResourceWarning
        assert refused.value.code == 401
        request = urllib.request.Request(url + "/_cluster/health")
        token = base64.b64encode(f"elastic:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=10) as res:
            assert json.loads(res.read())["status"] in ("green", "yellow")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(90)
