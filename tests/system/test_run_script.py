"""``./run test`` installs the browser only for browser tests (issue 32, item 18).

``apt-get`` (and ``sudo``) are not ours to run here: a script in front of them on ``PATH`` records
what it was asked, and ``NEWSFOLD_BROWSER_DIR`` points ``run`` at a folder without chromium.
"""

from __future__ import annotations

import os
import subprocess

from tests.paths import REPO_ROOT


def _recorder(folder, log) -> None:
    folder.mkdir()
    (folder / "apt-get").write_text(f'#!/bin/sh\necho "apt-get $*" >> "{log}"\n')
    (folder / "sudo").write_text('#!/bin/sh\n[ "$1" = -n ] && shift\nexec "$@"\n')  # password-less, as CI
    for name in ("apt-get", "sudo"):
        (folder / name).chmod(0o755)


def test_run_test_installs_the_browser_only_when_browser_tests_are_selected(tmp_path):
    log = tmp_path / "apt.log"
    _recorder(tmp_path / "bin", log)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
           "NEWSFOLD_BROWSER_DIR": str(tmp_path / "no-browser-here")}  # fmt: skip
    env.pop("NEWSFOLD_TEST_BACKEND", None)

    def run(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([str(REPO_ROOT / "run"), "test", *args, "--collect-only", "-q"], cwd=REPO_ROOT,
                              env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        return done

    run("-m", "not browser", "tests/system/browser", "tests/test_typecheck.py")
    run("tests/web/test_app.py")  # no browser test among them
    assert not log.exists(), log.read_text()
    selected = run("tests/system/browser/test_browser_search.py")
    assert "installing chromium and chromium-driver" in selected.stderr
    assert "apt-get install -y -qq chromium chromium-driver" in log.read_text()


def test_the_later_stages_of_backend_all_leave_out_only_the_tests_that_never_reach_a_server():
    """``./run test --backend all`` sets NEWSFOLD_SERVER_TESTS_ONLY=1 for its server stages."""
    env = {**os.environ, "NEWSFOLD_SERVER_TESTS_ONLY": "1", "NEWSFOLD_TEST_BACKEND": "standin"}
    pure, served = "tests/plugin/sign/test_signature.py", "tests/plugin/fold/test_batch.py"
    done = subprocess.run([str(REPO_ROOT / ".venv/bin/python"), "-m", "pytest", "--collect-only", "-q", pure, served],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    listed = [line for line in done.stdout.splitlines() if "::" in line]
    assert listed and all(line.startswith(served) for line in listed), listed[:5]
    assert "deselected" in done.stdout
    run_script = (REPO_ROOT / "run").read_text()
    assert "NEWSFOLD_SERVER_TESTS_ONLY=$once" in run_script


def test_backend_all_prints_each_stage_whole_in_order_and_fails_when_one_stage_fails():
    """The three stages run at once; the stand-in's output comes first, then each server stage's, whole, with its
    time and pytest's exit status. Collected only: the real-node stage selects none of a pure test file (pytest's
    exit status 5), which fails the command; the cluster stage adds its own paths (CLUSTER_TESTS)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NEWSFOLD_TEST_BACKEND", "NEWSFOLD_SERVER_TESTS_ONLY")}
    pure = "tests/plugin/sign/test_signature.py"
    done = subprocess.run([str(REPO_ROOT / "run"), "test", "--backend", "all", "--collect-only", "-q", pure],
                          cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=900)  # fmt: skip
    out = done.stdout  # one stream, as CI shows it
    assert done.returncode == 1, out[-3000:]
    marks = [out.index(f"run: the suite on the {b} backend") for b in ("standin", "elasticsearch", "cluster")]
    assert marks == sorted(marks), out[-3000:]
    assert "run: the standin backend took" in out[: marks[1]] and "(pytest exit status 0)" in out[: marks[1]]
    assert "run: the elasticsearch backend took" in out and "(pytest exit status 5)" in out[marks[1] : marks[2]]
    cluster = out[marks[2] :]
    assert "tests/system/" in cluster and "tests/indexer/jobs/test_reindex.py" in cluster, cluster[-2000:]
    assert "run: the cluster backend took" in cluster and "(pytest exit status 0)" in cluster
    assert out.rstrip().splitlines()[-1].startswith("run: all three stages took"), out[-500:]
