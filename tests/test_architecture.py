"""The import rules of docs/architecture.md, and the module map there, checked against the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: folder -> the package it is, as docs/architecture.md maps them
PACKAGES = {
    "plugin": "newsfold.plugin",
    "indexer": "newsfold.indexer",
    "web": "newsfold.web",
    "newsfold/state": "newsfold.state",
    "newsfold/samples": "newsfold.samples",
    "newsfold": "newsfold",
}
#: package -> the imports it must never make (prefixes), the rule of docs/architecture.md
FORBIDDEN = {
    "newsfold.plugin": ("newsfold.web", "newsfold.indexer", "newsfold.state", "newsfold.cli", "flask", "celery"),
    "newsfold.state": ("newsfold.web", "newsfold.indexer", "flask", "celery"),
    "newsfold.indexer": ("newsfold.web", "flask"),
    "newsfold.web": ("newsfold.indexer",),
}


def _modules(folder: str) -> list[Path]:
    return sorted(p for p in (ROOT / folder).glob("*.py") if p.name != "__init__.py" or folder != "newsfold")


def _runtime_imports(path: Path) -> set[str]:
    """The modules a file imports when it runs (imports under ``if TYPE_CHECKING:`` are for type checkers only)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            first = node.args[0]
            found.update([first.value] if isinstance(first, ast.Constant) and isinstance(first.value, str) else [])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_packages_import_only_what_the_rule_allows(package):
    folder = next(f for f, p in PACKAGES.items() if p == package)
    broken = []
    for path in _modules(folder):
        for name in _runtime_imports(path):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[package]):
                broken.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not broken, "\n".join(broken)


def test_the_rule_catches_a_forbidden_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import flask\nimport celery.app\n")
    assert _runtime_imports(bad) == {"typing", "celery.app"}


def test_every_module_has_its_line_in_the_architecture_map():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([\w/]+\.py)`", text))
    missing = [
        str(p.relative_to(ROOT))
        for folder in PACKAGES
        for p in _modules(folder)
        if p.name != "__init__.py" and str(p.relative_to(ROOT)) not in listed
    ]
    assert not missing, f"docs/architecture.md does not say what these modules own: {missing}"
    gone = sorted(name for name in listed if "/" in name and not (ROOT / name).exists())
    assert not gone, f"docs/architecture.md lists modules that do not exist: {gone}"


def test_the_docs_name_only_modules_that_exist():
    pattern = re.compile(r"`((?:plugin|indexer|web|newsfold|benchmarks|tests|examples)/[\w/]+\.py)")
    gone = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]:
        for name in pattern.findall(doc.read_text(encoding="utf-8")):
            if not (ROOT / name).exists():
                gone.append(f"{doc.relative_to(ROOT)}: {name}")
    assert not gone, gone
