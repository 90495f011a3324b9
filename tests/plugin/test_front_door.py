"""The front door, ``newsfold.plugin``: what it exports, to the interpreter and to a type checker, is what the docs
tell a host to call, and its functions refuse bad arguments with a ``NewsfoldError``."""

from __future__ import annotations

import ast
import re

import pytest

import newsfold.plugin as nf
from newsfold.plugin import InputError, InputTypeError, Settings, build_client, index_body, roll_over, with_period
from tests.paths import REPO_ROOT

#: the docs a host reads, and the example host
HOST_DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")), REPO_ROOT / "examples"]
#: ``from newsfold.plugin[.module] import a, b`` or ``import (a,\n b)``
_IMPORT = re.compile(r"from newsfold\.plugin(?:\.[\w.]+)? import (\([^)]*\)|[^\n]*)")


def _type_checking_imports() -> dict[str, str]:
    """The names plugin/__init__.py imports under ``if TYPE_CHECKING:`` -> their module (relative to the package)."""
    tree = ast.parse((REPO_ROOT / "plugin" / "__init__.py").read_text(encoding="utf-8"))
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    return {
        alias.asname or alias.name: node.module.removeprefix("newsfold.plugin.")
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def test_the_lazy_exports_the_type_checkers_imports_and_all_agree():
    assert nf.__all__ == sorted(nf._EXPORTS)
    assert _type_checking_imports() == nf._EXPORTS
    for name in nf.__all__:
        assert getattr(nf, name) is not None, name


def test_plugin_ships_py_typed():
    assert (REPO_ROOT / "plugin" / "py.typed").is_file()


def _doc_texts() -> list[tuple[str, str]]:
    out = []
    for path in HOST_DOCS:
        for f in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            out.append((str(f.relative_to(REPO_ROOT)), f.read_text(encoding="utf-8")))
    return out


def _told_to_import(text: str) -> set[str]:
    return {
        name.split(" as ")[0].strip()
        for names in _IMPORT.findall(text)
        for name in names.strip("()").split(",")
        if name.strip() and not name.strip().startswith("#")
    }


def _public_definitions() -> set[str]:
    """Every public top-level function and class of the core."""
    names = set()
    for path in (REPO_ROOT / "plugin").rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
                names.add(node.name)
    return names


def test_every_name_the_docs_tell_a_host_to_import_or_call_is_exported():
    """An import in a doc or the example host, and a call the host's guide names (`roll_over(...)` or
    `newsfold.plugin.fold.index.with_period`), reaches a name ``newsfold.plugin`` exports."""
    defined = _public_definitions()
    missing = []
    for doc, text in _doc_texts():
        wanted = _told_to_import(text)
        if doc == "docs/embedding.md":
            wanted |= {n for n in re.findall(r"`(\w+)\(", text) if n in defined}
            wanted |= {n for n in re.findall(r"`newsfold\.plugin\.[\w.]+\.(\w+)`", text) if n in defined}
        missing += [f"{doc}: {name}" for name in sorted(wanted - set(nf.__all__))]
    assert not missing, f"export these from newsfold.plugin (plugin/__init__.py): {missing}"


def test_the_docs_check_reads_imports_over_several_lines():
    text = "from newsfold.plugin import (Settings, ingest,\n    fold_search as fs)\nfrom newsfold.plugin.x import y\n"
    assert _told_to_import(text) == {"Settings", "ingest", "fold_search", "y"}


def test_roll_over_refuses_settings_of_the_wrong_type_naming_the_argument():
    with pytest.raises(InputTypeError, match="settings must be Settings, not str"):
        roll_over(None, settings="x")  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="index must be str or None, not int"):
        roll_over(None, Settings(), index=3)  # type: ignore[arg-type]


def test_with_period_refuses_a_body_without_newsfolds_record_naming_it():
    host_body = {"settings": {}, "mappings": {"properties": {"title": {"type": "text"}}}}
    with pytest.raises(InputError, match=r"body has no newsfold record at mappings._meta.newsfold"):
        with_period(host_body, 1_700_000_000_000)
    with pytest.raises(InputError, match=r"body has no newsfold record"):
        with_period({"mappings": []}, 1_700_000_000_000)
    with pytest.raises(InputTypeError, match="start_ms must be int, not str"):
        with_period(index_body(Settings()), "yesterday")  # type: ignore[arg-type]
    body = with_period(index_body(Settings()), 1_700_000_000_000, 1_700_000_100_000)
    assert body["mappings"]["_meta"]["newsfold"]["period_start"] == 1_700_000_000_000
    assert body["mappings"]["_meta"]["newsfold"]["period_end"] == 1_700_000_100_000


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:9200,notaurl", r"node 2 of 2 is not a URL .* got 'notaurl'"),
        ("http://127.0.0.1:9200, http://b:x", r"node 2 of 2 .* got 'http://b:x'"),
        ("http://u:secret@b:x", r"node 1 of 1 .* got 'http://\*\*\*@b:x'"),
        (" , ", "ELASTICSEARCH_URL names no node"),
    ],
)
def test_a_bad_node_url_is_an_input_error_naming_the_node(url, message):
    with pytest.raises(InputError, match=message) as caught:
        build_client(Settings(elasticsearch_url=url))
    assert "secret" not in str(caught.value)
