"""The type checker's settings say what the docs say (the check itself runs in `./run test`, before pytest)."""

import re
import sys
import tomllib

from mypy.config_parser import parse_config_file
from mypy.main import process_options
from mypy.options import PER_MODULE_OPTIONS, Options

from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


def _settings(options: Options) -> dict[str, object]:
    return {name: getattr(options, name) for name in dir(options) if not name.startswith("_")}


def _strict_flags() -> dict[str, object]:
    """What ``--strict`` changes, by this pinned mypy's own parser (no config file read)."""
    _, default = process_options(["--config-file=", "-c", "pass"])
    _, strict = process_options(["--config-file=", "--strict", "-c", "pass"])
    before, after = _settings(default), _settings(strict)
    return {name: value for name, value in after.items() if value != before[name] and not callable(value)}


def _project_options() -> Options:
    options = Options()
    parse_config_file(options, lambda: None, str(ROOT / "pyproject.toml"), sys.stdout, sys.stderr)
    return options


def _effective(options: Options, module: str, flags: dict[str, object]) -> dict[str, object]:
    per_module = options.clone_for_module(module)
    return {name: getattr(per_module if name in PER_MODULE_OPTIONS else options, name) for name in flags}


def test_the_core_gets_every_flag_of_strict_in_any_subpackage():
    strict = _strict_flags()
    assert "disallow_untyped_defs" in strict  # the comparison below compares something
    options = _project_options()
    for module in ("newsfold.plugin", "newsfold.plugin.sign.signing", "newsfold.plugin.extract.blocks"):
        assert _effective(options, module, strict) == strict, module


def test_the_other_folders_check_untyped_bodies_and_no_product_import_is_skipped():
    options = _project_options()
    for module in ("newsfold.indexer.tasks", "newsfold.web.search", "newsfold.cli", "newsfold.state.jobs"):
        checked = options.clone_for_module(module)
        assert checked.check_untyped_defs, module
        assert not checked.disallow_untyped_defs, module  # the default checks, not the core's
    for module in ("newsfold", "newsfold.plugin.text", "newsfold.web", "elasticsearch", "redis", "flask"):
        assert not options.clone_for_module(module).ignore_missing_imports, module


def test_the_checked_view_maps_every_folder_the_package_maps():
    """`./run typecheck` links each folder of setuptools' package-dir into .typecheck/newsfold/."""
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-dir"
    ]
    mapped = {folder for package, folder in package_dir.items() if package != "newsfold"}
    linked = re.search(r'\bmapped="([\w ]+)"', (ROOT / "run").read_text(encoding="utf-8"))
    assert linked is not None, "run no longer links the mapped folders"
    assert set(linked.group(1).split()) == mapped
    assert all(package == f"newsfold.{folder}" for package, folder in package_dir.items() if package != "newsfold")
