"""The distribution: one top-level package, installable as a wheel, usable from outside the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.pages import page, story
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # build from a copy: setuptools writes build/ and *.egg-info into the source folder
    source = tmp_path_factory.mktemp("source") / "newsfold"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--disable-pip-version-check", "-w", str(out),
         str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("newsfold-*.whl")
    return built


def test_wheel_has_one_top_level_package(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
        assert zf.read(top_level).decode().split() == ["newsfold"]
    roots = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert roots == {"newsfold"}
    for module in ("newsfold/plugin/text.py", "newsfold/indexer/tasks.py", "newsfold/web/__init__.py",
                   "newsfold/mappings/articles.json", "newsfold/web/templates/base.html", "newsfold/web/openapi.json",
                   "newsfold/samples/data/topics.json", "newsfold/samples/templates/harbour.html",
                   "newsfold/plugin/py.typed"):  # the core's annotations reach a host's type checker
        assert module in names, module


#: source folder -> where its package lands in the wheel (pyproject.toml's package-dir)
WHEEL_FOLDERS = {"plugin": "newsfold/plugin", "indexer": "newsfold/indexer", "web": "newsfold/web",
                 "newsfold": "newsfold"}  # fmt: skip


def test_wheel_holds_every_module_of_every_subpackage(wheel):
    """A subpackage missing from pyproject.toml's ``packages`` would be left out of the wheel without a word."""
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    expected = {
        f"{target}/{path.relative_to(ROOT / folder).as_posix()}"
        for folder, target in WHEEL_FOLDERS.items()
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert len(expected) > 50
    missing = sorted(expected - names)
    assert not missing, f"add their packages to pyproject.toml [tool.setuptools] packages: {missing}"


BLOCKER = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"elasticsearch", "redis", "celery", "flask"}:
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
"""


def test_pure_core_imports_without_elasticsearch_or_redis():
    code = BLOCKER + """
import newsfold.plugin as nf
from newsfold.plugin import text, shingles, signature, cluster, queries, urls, settings  # the 0.1 paths
from newsfold.plugin.sign import signature, shingles, signing
from newsfold.plugin.fold import cluster, document, index
from newsfold.plugin.search import queries, story_queries
from newsfold.plugin.admin import admin_queries
from newsfold.plugin.extract import headlines
from newsfold.plugin import sign_text, fold_query, component_template, Settings
s = Settings()
body = "Storm hits the coast. " * 40
signed = sign_text(body, title="Storm", url="https://a.example/x", settings=s)
assert len(signed.band_keys) == s.bands, signed.band_keys
folded = fold_query({"query": {"match": {"title": "storm"}}})
assert folded["collapse"]["field"].endswith("cluster_id"), folded
assert "cluster_id" in component_template(s)["template"]["mappings"]["properties"]["newsfold"]["properties"]
assert text.tokenize("Hello world") == ["hello", "world"]
assert urls.normalize_url("https://www.a.example/x/?utm_source=y") is not None
bad = sorted(m for m in sys.modules if m.split(".")[0] in {"elasticsearch", "redis", "celery", "flask"})
assert not bad, bad
try:
    nf.build_client
except ImportError as exc:
    assert "elasticsearch" in str(exc)
else:
    raise AssertionError("build_client resolved with elasticsearch blocked")
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.slow
def test_wheel_installed_in_a_fresh_virtualenv_extracts_and_clusters(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    done = subprocess.run(
        [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr
    work = tmp_path / "outside"
    work.mkdir()
    html = page("Harbour strike ends after talks", story(7), site="wire.example")
    (work / "a.html").write_text(html, encoding="utf-8")
    (work / "pages.jsonl").write_text(
        json.dumps({"id": "a", "url": "https://wire.example/a", "html": "a.html"}) + "\n"
        + json.dumps({"id": "b", "url": "https://other.example/b", "html": "a.html"}) + "\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEWSFOLD_", "ELASTICSEARCH_", "REDIS_"))}
    env["PYTHONPATH"] = ""
    cli = env_dir / "bin" / "newsfold"
    ex = subprocess.run([str(cli), "extract", "pages.jsonl", "--out", "x.jsonl"], cwd=work, env=env,
                        capture_output=True, text=True, timeout=300)
    assert ex.returncode == 0, ex.stderr
    rows = [json.loads(line) for line in (work / "x.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b"] and all("Harbour" in r["title"] for r in rows), rows
    cl = subprocess.run([str(cli), "cluster", "pages.jsonl", "--out", "c.jsonl"], cwd=work, env=env,
                        capture_output=True, text=True, timeout=600)
    assert cl.returncode == 0, cl.stderr
    clusters = {r["id"]: r["cluster"] for r in map(json.loads, (work / "c.jsonl").read_text().splitlines())}
    assert set(clusters) == {"a", "b"} and clusters["a"] == clusters["b"], clusters
    # the installed package, not the repository, was imported
    where = subprocess.run([str(py), "-c", "import newsfold.plugin, sys; print(newsfold.plugin.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert str(env_dir) in where.stdout, where.stdout + where.stderr


def test_the_elasticsearch_version_is_pinned_once_and_compose_follows_it():
    from newsfold.esinstall import ARTIFACT, ES_VERSION

    root = REPO_ROOT
    assert ES_VERSION.startswith("9.") and ARTIFACT.endswith(f":{ES_VERSION}:zip")
    assert f"${{ES_VERSION:-{ES_VERSION}}}" in (root / "docker-compose.yml").read_text()
    assert f"ES_VERSION={ES_VERSION}\n" in (root / ".env.example").read_text()
    assert f"Elasticsearch **{ES_VERSION}**" in (root / "docs" / "operations.md").read_text()


def _env_example() -> dict[str, str]:
    lines = (REPO_ROOT / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_the_env_example_holds_no_usable_secret_and_compose_requires_each():
    """Issue 39, item 4: ``cp .env.example .env && docker compose up`` starts nothing with a known password."""
    example = _env_example()
    secrets = [name for name in example if name.endswith(("PASSWORD", "SECRET_KEY"))]
    assert set(secrets) >= {"ELASTIC_PASSWORD", "NEWSFOLD_SECRET_KEY"}
    assert {name: example[name] for name in secrets} == dict.fromkeys(secrets, "")
    compose = (REPO_ROOT / "docker-compose.yml").read_text()
    for name in secrets:
        assert f"${{{name}:?" in compose, f"docker-compose.yml must refuse an empty {name}"


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose is not installed")
def test_compose_refuses_the_copied_example_and_validates_once_the_secrets_are_set(tmp_path):
    for name in ("docker-compose.yml", "docker-compose.cluster.yml"):
        shutil.copy(REPO_ROOT / name, tmp_path / name)
    shutil.copy(REPO_ROOT / ".env.example", tmp_path / ".env")
    env = {k: v for k, v in os.environ.items() if k not in _env_example()}

    def config(*files: str, **extra: str) -> subprocess.CompletedProcess:
        args = [arg for f in files for arg in ("-f", f)]
        return subprocess.run(["docker-compose", *args, "config", "-q"], cwd=tmp_path, env={**env, **extra},
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    refused = config("docker-compose.yml")
    assert refused.returncode != 0 and "set ELASTIC_PASSWORD in .env" in refused.stderr
    secrets = {"ELASTIC_PASSWORD": "a-long-random-password", "NEWSFOLD_SECRET_KEY": "k" * 40}
    ok = config("docker-compose.yml", **secrets)
    assert ok.returncode == 0, ok.stderr
    both = config("docker-compose.yml", "docker-compose.cluster.yml", **secrets)
    assert both.returncode == 0, both.stderr


def test_the_cluster_compose_file_lays_three_secure_nodes_that_the_apps_all_know():
    """docker-compose.cluster.yml (over docker-compose.yml): each node has its own TLS pair, names the others as
    seeds, and is a first master; the apps list every node, and indices get 3 shards and 1 replica."""
    import yaml

    from newsfold.esinstall import ES_VERSION

    text = (REPO_ROOT / "docker-compose.cluster.yml").read_text()
    services = yaml.safe_load(text)["services"]
    nodes = ["elasticsearch", "es02", "es03"]
    assert "for node in " + " ".join(nodes) + ";" in services["certs"]["command"][-1]  # one certificate each
    for name in nodes:
        node = services[name]
        env = node["environment"]
        assert node["image"].endswith(f":${{ES_VERSION:-{ES_VERSION}}}")
        assert env["node.name"] == name and env["discovery.type"] == "multi-node"
        assert sorted(env["discovery.seed_hosts"].split(",")) == sorted(set(nodes) - {name})
        assert env["cluster.initial_master_nodes"].split(",") == nodes
        assert env["xpack.security.enabled"] == "true" and env["xpack.security.transport.ssl.enabled"] == "true"
        assert env["xpack.security.transport.ssl.key"] == f"certs/{name}/{name}.key"
        assert node["depends_on"]["certs"]["condition"] == "service_completed_successfully"
    for app in ("init-index", "worker", "web"):
        env = services[app]["environment"]
        assert env["ELASTICSEARCH_URL"].split(",") == [f"http://{n}:9200" for n in nodes]
        assert (env["NEWSFOLD_SHARDS"], env["NEWSFOLD_REPLICAS"]) == ("3", "1")
