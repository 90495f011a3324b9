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
