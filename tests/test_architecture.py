"""The import rules of docs/architecture.md, and the module map there, checked against the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
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
    """The modules of a package folder and of its subpackages (those mapped as packages of their own excepted)."""
    others = [ROOT / f for f in PACKAGES if f != folder and f.startswith(folder + "/")]
    return sorted(
        p
        for p in (ROOT / folder).rglob("*.py")
        if not any(p.is_relative_to(o) for o in others) and (p.name != "__init__.py" or folder != "newsfold")
    )


#: plugin's features, lowest first, and the features each may import (besides itself and the modules at the top of
#: plugin/: settings, client, errors, text, urls, page_limits, which import no feature). docs/architecture.md draws it.
PLUGIN_FEATURES = {
    "": set(),
    "extract": set(),
    "sign": {"extract"},
    "fold": {"extract", "sign"},
    "edit": {"extract", "sign", "fold"},
    "search": {"extract", "sign", "fold"},
    "admin": {"extract", "sign", "fold", "search"},
}


def _feature(module: str) -> str | None:
    """The plugin feature of a dotted module name ("" for the top of plugin/), None outside plugin."""
    parts = module.split(".")
    if parts[:2] != ["newsfold", "plugin"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in PLUGIN_FEATURES else ""


def _plugin_imports(path: Path) -> set[str]:
    """Every plugin name a file imports, type-only imports included (a loop there is a loop for a reader too)."""
    return {name for name in _imports(path, with_names=True, type_only=True) if name.startswith("newsfold.plugin.")}


def _feature_breaches(root: Path) -> list[str]:
    broken = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[0] if len(rel.parts) > 1 else ""
        if own == "" and path.name == "__init__.py":
            continue  # the public API resolves names from every feature, lazily
        for name in _plugin_imports(path):
            other = _feature(name)
            if other and other != own and other not in PLUGIN_FEATURES[own]:
                broken.append(f"plugin/{rel} ({own or 'top'}) imports {name} ({other or 'top'})")
    return broken


def test_plugin_features_import_only_the_features_below_them():
    broken = _feature_breaches(ROOT / "plugin")
    assert not broken, "\n".join(broken)


def test_the_feature_rule_catches_an_upward_import(tmp_path):
    for folder in ("sign", "fold"):
        (tmp_path / folder).mkdir()
    (tmp_path / "settings.py").write_text("from newsfold.plugin.errors import InputError\n")
    (tmp_path / "sign" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from newsfold.plugin.fold.document import fold_of\n"
    )
    (tmp_path / "fold" / "ok.py").write_text("from newsfold.plugin.sign import signing\nimport newsfold.plugin.text\n")
    assert _feature_breaches(tmp_path) == [
        "plugin/sign/bad.py (sign) imports newsfold.plugin.fold.document.fold_of (fold)"
    ]


def _imports(path: Path, *, with_names: bool = False, type_only: bool = False) -> set[str]:
    """The modules a file imports when it runs (imports under ``if TYPE_CHECKING:`` only with ``type_only``).

    ``with_names`` gives ``module.name`` for each name of a ``from module import name`` instead (it may be a
    submodule).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if not type_only and isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for n in ast.walk(node))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update([f"{node.module}.{a.name}" for a in node.names] if with_names else [node.module])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module" and node.args:
            first = node.args[0]
            found.update([first.value] if isinstance(first, ast.Constant) and isinstance(first.value, str) else [])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_packages_import_only_what_the_rule_allows(package):
    folder = next(f for f, p in PACKAGES.items() if p == package)
    broken = []
    for path in _modules(folder):
        for name in _imports(path):
            if any(name == bad or name.startswith(bad + ".") for bad in FORBIDDEN[package]):
                broken.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not broken, "\n".join(broken)


def test_the_rules_reach_into_subpackages():
    assert any(p.parent != ROOT / "web" for p in _modules("web")), "web/'s feature subpackages are not checked"
    assert all(p.parent == ROOT / "newsfold" for p in _modules("newsfold"))


def test_the_rule_catches_a_forbidden_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import flask\nimport celery.app\n")
    assert _imports(bad) == {"typing", "celery.app"}


#: the web's features: each imports the shared modules (the top of web/, web/actions/) and never another feature
WEB_FEATURES = ("search", "stories", "admin", "api")


def _feature_imports(web: Path) -> list[str]:
    """Every import of one web feature's module from another feature's (type-only imports too)."""
    broken = []
    for feature in WEB_FEATURES:
        for path in sorted((web / feature).rglob("*.py")):
            for name in _imports(path, type_only=True):
                parts = name.split(".")
                other = parts[2] if parts[:2] == ["newsfold", "web"] and len(parts) > 2 else None
                if other in WEB_FEATURES and other != feature:
                    broken.append(f"{path.relative_to(web.parent)} imports {name}")
    return broken


def test_web_features_import_shared_modules_never_each_other():
    """Issue 37, item 3: search, stories, admin and api share what they all do through web/actions/."""
    assert _feature_imports(ROOT / "web") == []


def test_the_feature_check_catches_an_import_between_features(tmp_path):
    for feature in WEB_FEATURES:
        (tmp_path / "web" / feature).mkdir(parents=True)
    (tmp_path / "web" / "api" / "views.py").write_text("from newsfold.web.admin.views import bp\n")
    (tmp_path / "web" / "admin" / "views.py").write_text(
        "from newsfold.web.actions import stats\nimport newsfold.web.admin\n"
    )
    assert _feature_imports(tmp_path / "web") == ["web/api/views.py imports newsfold.web.admin.views"]


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


#: names that hold the outcome of a merge decision (who keeps its name, who yields)
_MERGE_NAMES = re.compile(r"^(survivor|survivors|loser|losers|winner|lo|hi)$")
#: names that hold cluster ids or labels
_CLUSTER_NAMES = re.compile(r"cluster|label|survivor|loser")
_PICKERS = {"sorted", "min", "max"}


def _picks(node: ast.AST) -> bool:
    """True when ``node`` holds a ``sorted``/``min``/``max`` call."""
    return any(isinstance(n, ast.Call) and getattr(n.func, "id", None) in _PICKERS for n in ast.walk(node))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _merge_decisions(source: str) -> list[int]:
    """Lines that pick a merge survivor by ordering names instead of asking ``merge_survivor``.

    Two shapes: an assignment to a survivor/loser name (or into a ``merges``
    map) from a ``sorted``/``min``/``max`` call, and a ``sorted``/``min``/``max``
    of exactly two cluster ids or labels (not of a number and a size).
    """
    found = []
    skip: set[int] = set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "merge_survivor":
            skip.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Assign) and _picks(node.value):
            for target in node.targets:
                named = {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                into_merges = isinstance(target, ast.Subscript) and "merge" in ast.unparse(target.value)
                if into_merges or any(_MERGE_NAMES.match(n) for n in named):
                    found.append(node.lineno)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) in _PICKERS:
            pair = node.args[0].elts if len(node.args) == 1 and isinstance(node.args[0], ast.Tuple) else node.args
            sizes = any(isinstance(e, ast.Constant) for e in pair)  # min(220, label_width): a size, not a name
            if len(pair) == 2 and not sizes and any(_CLUSTER_NAMES.search(n) for e in pair for n in _names(e)):
                found.append(node.lineno)
    return sorted(set(found))


def test_only_merge_survivor_decides_which_story_keeps_its_name():
    broken = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in PACKAGES
        for path in _modules(folder)
        for line in _merge_decisions(path.read_text(encoding="utf-8"))
    ]
    assert not broken, f"merges must ask newsfold.plugin.fold.cluster.merge_survivor, not decide here: {broken}"


@pytest.mark.parametrize(
    "line",
    [
        "survivor, loser = sorted((a, b))",
        "lo, hi = sorted((mine, c.cluster_id))",
        "merges[hi] = min(lo, merges.get(hi, lo))",
        "keep = min(labels[a], labels[b])",
        "survivor = min(clusters)",
    ],
)
def test_the_merge_rule_check_catches_a_second_home(line):
    assert _merge_decisions(line) == [1]


def test_the_merge_rule_check_leaves_other_orderings_alone():
    source = "small, large = sorted((a.shingle_count, b.shingle_count))\nroot = min(ra, rb)\nids = sorted(set(labels))"
    source += "\nlabel_w = min(220, 10 + max(len(label) for label in labels))\nsize = max(1, len(cluster_ids))"
    assert _merge_decisions(source) == []


def test_no_module_is_imported_under_another_modules_name():
    modules = {p.stem for folder in PACKAGES for p in _modules(folder)}
    misleading = []
    for folder in PACKAGES:
        for path in _modules(folder):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom | ast.Import):
                    for alias in node.names:
                        real = alias.name.rsplit(".", 1)[-1]
                        if alias.asname in modules and alias.asname != real:
                            misleading.append(f"{path.relative_to(ROOT)}: {alias.name} as {alias.asname}")
    assert not misleading, f"an alias that names another module misleads the reader: {misleading}"


#: a dotted reference to a module of ours in a doc or docstring: ``plugin.fold.cluster``, `newsfold.state.jobs`
_MODULE_REFERENCE = re.compile(r"(?:`~?|\bnewsfold\.)(plugin|indexer|web|state|samples)\.([a-z]\w*)")
_REFERENCE_FOLDERS = {"plugin": "plugin", "indexer": "indexer", "web": "web", "state": "newsfold/state"}
_REFERENCE_FOLDERS["samples"] = "newsfold/samples"


def _stale_references(text: str) -> list[str]:
    """Dotted references to modules that do not exist (nor are names the package hands on)."""
    stale = []
    for match in _MODULE_REFERENCE.finditer(text):
        package, name = match.groups()
        folder = ROOT / _REFERENCE_FOLDERS[package]
        init = folder / "__init__.py"
        exported = init.exists() and re.search(rf"\b{name}\b", init.read_text(encoding="utf-8"))
        if not ((folder / f"{name}.py").exists() or (folder / name).is_dir() or exported):
            stale.append(f"{package}.{name}")
    return stale


def test_docs_and_docstrings_name_only_modules_that_exist():
    texts = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for folder in ("plugin", "indexer", "web", "newsfold", "benchmarks", "examples"):
        texts += sorted((ROOT / folder).rglob("*.py"))
    stale = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in texts
        for name in _stale_references(path.read_text(encoding="utf-8"))
    ]
    assert not stale, stale


def test_the_reference_check_catches_a_module_that_is_gone():
    assert _stale_references("see ``plugin.collection`` and `newsfold.plugin.jobs.JobStore`") == [
        "plugin.collection",
        "plugin.jobs",
    ]
    assert _stale_references("see ``plugin.fold.cluster.merge_survivor`` and `newsfold.state.jobs`; state.get()") == []


def test_the_module_paths_of_0_1_import_the_modules_that_hold_their_code_now():
    import importlib

    import newsfold.plugin as plugin

    for old, new in plugin.MOVED.items():
        assert importlib.import_module(f"newsfold.plugin.{old}") is importlib.import_module(f"newsfold.plugin.{new}")
    from newsfold.plugin.search.queries import with_story_counts  # the path docs/embedding.md showed hosts in 0.1
    from newsfold.plugin.search.story_queries import (  # docs/stories.md
        add_relations,
        newest,
        read_newest,
        read_top_stories,
        top_stories,
    )

    assert with_story_counts.__module__ == "newsfold.plugin.search.queries"
    assert all(callable(f) for f in (add_relations, newest, read_newest, read_top_stories, top_stories))
    gone = [old for old in plugin.MOVED if (ROOT / "plugin" / f"{old}.py").exists()]
    assert not gone, f"a module file and an old path share a name: {gone}"


def _state_names(path: Path, package: str) -> list[str]:
    """Where a module names ``newsfold.state``: an import of it (under ``if TYPE_CHECKING:`` too), or a mention."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:  # relative: resolved against the module's package
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join(base + ([node.module] if node.module else []))
            names = [module] if node.module else [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found += [
            f"line {node.lineno}: imports {n}"
            for n in names
            if n == "newsfold.state" or n.startswith("newsfold.state.")
        ]
    lines = path.read_text(encoding="utf-8").splitlines()
    found += [f"line {n}: names newsfold.state" for n, line in enumerate(lines, 1) if "newsfold.state" in line]
    return found


def test_the_core_never_names_the_state_package():
    """plugin takes state objects (story statistics, repeated lines) through Protocols of its own: no import loop."""
    named = {}
    for path in sorted((ROOT / "plugin").rglob("*.py")):
        sub = path.parent.relative_to(ROOT / "plugin").parts
        found = _state_names(path, ".".join(("newsfold", "plugin", *sub)))
        if found:
            named[str(path.relative_to(ROOT))] = found
    assert named == {}


def test_the_state_name_check_catches_a_type_only_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..state import jobs\n")
    assert _state_names(bad, "newsfold.plugin") == ["line 3: imports newsfold.state"]
    bad.write_text("if False:\n    import newsfold.state.story_stats\n")
    assert _state_names(bad, "newsfold.plugin")[0] == "line 2: imports newsfold.state.story_stats"


def _import_graph() -> dict[str, set[str]]:
    """Product module -> the product modules it imports when it runs (function-level imports too)."""
    modules = {}
    for folder, package in PACKAGES.items():
        for path in _modules(folder):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            modules[".".join([package, *rel.parts]).removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for imported in _imports(path, with_names=True):
            found.add(imported if imported in modules else imported.rpartition(".")[0])
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or around a loop (Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_two_product_modules_import_each_other_even_through_others():
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_finds_a_loop_through_a_third_module():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


#: test folders that hold tests of the whole system rather than of one package (workers, faults, NRT, browser, ...)
SYSTEM_TEST_FOLDERS = ("system", "benchmarks")


def test_the_tests_mirror_the_tree():
    """tests/plugin/fold/ holds the tests of plugin/fold/, and so on; system tests have their own folders."""
    tests = ROOT / "tests"
    stray = []
    for path in sorted(tests.rglob("test_*.py")):
        rel = path.parent.relative_to(tests)
        if not rel.parts or rel.parts[0] in SYSTEM_TEST_FOLDERS:
            continue
        if not (ROOT / rel).is_dir():
            stray.append(str(path.relative_to(ROOT)))
    assert not stray, f"these tests sit in a folder the product does not have: {stray}"


#: the size rule: a module a newcomer reads in one sitting, a function that does one thing
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _oversized(path: Path) -> list[str]:
    """What in one file breaks the size rule (a function runs from its ``def`` to its end, docstring included)."""
    text = path.read_text(encoding="utf-8")
    found = []
    if text.count("\n") > MAX_MODULE_LINES:
        found.append(f"{text.count(chr(10))} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{node.name} (line {node.lineno}) is {length} lines")
    return found


def test_no_module_is_over_400_lines_and_no_function_over_60():
    broken = {str(p.relative_to(ROOT)): found for f in PACKAGES for p in _modules(f) if (found := _oversized(p))}
    assert not broken, f"split these by meaning: {broken}"


def test_the_size_rule_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n")
    assert _oversized(tmp_path / "long.py") == ["long (line 1) is 61 lines"]
    (tmp_path / "short.py").write_text("def short():\n    return 1\n" * 2)
    assert _oversized(tmp_path / "short.py") == []
