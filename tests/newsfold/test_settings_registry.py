"""The settings registry: every variable newsfold reads, derived once, warned about when unknown, and documented in
docs/configuration.md exactly as the registry has it."""

from __future__ import annotations

import ast
import dataclasses
import logging
import re
import signal
import subprocess
import sys

import pytest

from newsfold import settings_registry as registry
from newsfold.plugin.settings import Settings
from newsfold.web.config import WebSettings
from tests.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "configuration.md"
MUST_SET_SECTION = "Settings a deployment must set"
_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \| ([^|]+) \|", re.M)


def _page_sections() -> dict[str, list[tuple[str, str]]]:
    """The page's sections (``## ...``) -> the (variable, default) rows of their tables, in order."""
    sections: dict[str, list[tuple[str, str]]] = {}
    for part in re.split(r"^## ", PAGE.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title, _, body = part.partition("\n")
        rows = [(name, default.strip()) for name, default in _ROW.findall(body)]
        if rows:
            sections[title.strip()] = rows
    return sections


def test_the_configuration_page_is_the_registry():
    """Must-set settings first, then one section per concern in the registry's order, each row's default the
    registry's: a setting added, moved, renamed or given a new default fails here until the page says so."""
    expected = {MUST_SET_SECTION: [(v.name, v.default_cell) for v in registry.VARIABLES if v.must_set]}
    for concern in registry.CONCERN_ORDER:
        expected[concern] = [
            (v.name, v.default_cell) for v in registry.VARIABLES if v.concern == concern and not v.must_set
        ]
    assert _page_sections() == expected


def test_five_settings_must_be_set_and_the_registry_holds_both_classes_whole():
    assert [v.name for v in registry.VARIABLES if v.must_set] == [
        "ELASTICSEARCH_URL", "REDIS_URL", "NEWSFOLD_SECRET_KEY", "NEWSFOLD_ADMIN_PASSWORD_HASH", "NEWSFOLD_BASE_URL",
    ]  # fmt: skip
    fields = {f"{cls.__name__}.{f.name}" for cls in (Settings, WebSettings) for f in dataclasses.fields(cls)}
    assert fields <= {v.read_by for v in registry.VARIABLES}
    assert len(registry.NAMES) == len(registry.VARIABLES)  # no name read twice


def test_a_documented_variable_logs_no_warning_and_an_unknown_one_does(caplog, monkeypatch):
    monkeypatch.setattr(registry, "_warned", set())
    caplog.set_level(logging.WARNING, logger=registry.__name__)
    documented = set(_ROW.findall(PAGE.read_text(encoding="utf-8")))
    environ = {name: "1" for name, _ in documented}
    assert {"NEWSFOLD_BASE_URL", "NEWSFOLD_PUBLIC_SYNDICATION"} <= environ.keys()  # once warned about
    assert registry.unknown_env(environ) == {}
    registry.warn_unknown_env(environ)
    assert caplog.text == ""

    environ |= {"NEWSFOLD_NUM_PERMS": "128", "NEWSFOLD_NOTHING_LIKE_IT": "1", "UNRELATED": "1"}
    assert registry.unknown_env(environ) == {
        "NEWSFOLD_NUM_PERMS": "NEWSFOLD_NUM_PERM",
        "NEWSFOLD_NOTHING_LIKE_IT": None,
    }
    registry.warn_unknown_env(environ)
    registry.warn_unknown_env(environ)  # once per process and name
    assert caplog.text.count("is not a newsfold setting") == 2
    assert "NEWSFOLD_NUM_PERMS is not a newsfold setting and is ignored; did you mean NEWSFOLD_NUM_PERM?" in caplog.text
    assert (
        "NEWSFOLD_NOTHING_LIKE_IT is not a newsfold setting and is ignored (see docs/configuration.md)" in caplog.text
    )


def _start_web() -> None:
    from newsfold.web import create_app

    create_app(settings=Settings(), web=WebSettings())


def _start_celery() -> None:
    from newsfold.indexer.celery_app import make_celery

    make_celery()  # reads the environment; connects to nothing yet


def _start_command() -> None:
    from newsfold.cli import main

    before = signal.getsignal(signal.SIGTERM)  # main() sets its own
    try:
        assert main(["api-token", "bot"]) == 0
    finally:
        signal.signal(signal.SIGTERM, before)


@pytest.mark.parametrize("start", [_start_web, _start_celery, _start_command])
def test_each_process_warns_at_start_about_a_variable_nothing_reads(start, caplog, monkeypatch):
    monkeypatch.setattr(registry, "_warned", set())
    monkeypatch.setenv("NEWSFOLD_BASE_URLS", "https://news.example.org")
    monkeypatch.setenv("NEWSFOLD_BASE_URL", "https://news.example.org")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:9/0")
    caplog.set_level(logging.WARNING, logger=registry.__name__)
    start()
    assert "NEWSFOLD_BASE_URLS is not a newsfold setting and is ignored; did you mean NEWSFOLD_BASE_URL?" in caplog.text
    assert "NEWSFOLD_BASE_URL is" not in caplog.text


#: files outside the product folders that read or set variables
_OTHER_FILES = ["run", "Dockerfile", ".env.example", "docker-compose.yml", "docker-compose.cluster.yml", "README.md"]
_NAME = re.compile(r"\bNEWSFOLD_[A-Z0-9_]*[A-Z0-9]\b(?! is not a newsfold setting| \.\.\. did you mean)")


def _names_in_python(text: str) -> set[str]:
    """``NEWSFOLD_*`` names in a module's strings (a Python name such as ``NEWSFOLD_HEADERS`` is no variable)."""
    return {
        name
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for name in _NAME.findall(node.value)
    }


def test_every_newsfold_variable_the_code_or_the_docs_name_is_in_the_registry():
    found: dict[str, str] = {}
    for folder in ("plugin", "indexer", "web", "newsfold", "tests"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            if path.name in ("test_settings_registry.py",):
                continue  # it names unknown variables on purpose
            for name in _names_in_python(path.read_text(encoding="utf-8")):
                found.setdefault(name, str(path.relative_to(REPO_ROOT)))
    for path in [*(REPO_ROOT / f for f in _OTHER_FILES), *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for name in _NAME.findall(path.read_text(encoding="utf-8")):
            found.setdefault(name, str(path.relative_to(REPO_ROOT)))
    unknown = {name: where for name, where in found.items() if name not in registry.NAMES}
    assert not unknown, f"read or named but not in newsfold/settings_registry.py: {unknown}"
    assert "NEWSFOLD_BASE_URL" in found and "NEWSFOLD_TEST_BACKEND" in found  # the scan reads files


def test_the_check_reads_strings_not_python_names():
    source = 'NEWSFOLD_HEADERS = {"id": "x"}\nos.environ.get("NEWSFOLD_ES_HOME")\n'
    assert _names_in_python(source) == {"NEWSFOLD_ES_HOME"}
    assert _NAME.findall("`NEWSFOLD_NUM_PERMS is not a newsfold setting`, NEWSFOLD_MAX_*, NEWSFOLD_INDEX") == [
        "NEWSFOLD_INDEX"
    ]


def test_each_tool_variable_is_read_where_the_registry_says():
    for variable in registry.TOOLS:
        assert variable.name in (REPO_ROOT / variable.read_by).read_text(encoding="utf-8"), variable


def test_a_concern_or_must_set_that_names_no_field_is_refused():
    with pytest.raises(RuntimeError, match=r"name no field: \['nmu_perm'\]"):
        list(registry._of(Settings, {"num_perm": "NEWSFOLD_NUM_PERM"}, {"nmu_perm": "Signatures"}, ()))


def test_the_registry_loads_no_flask_so_a_worker_reads_it_without_the_web():
    code = (
        "import sys\nimport newsfold.settings_registry as r\n"
        "assert 'NEWSFOLD_BASE_URL' in r.NAMES\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in {'flask', 'werkzeug', 'jinja2'})\n"
        "assert not loaded, loaded\nprint('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
