"""The stories benchmark scripts run against the current code (tiny inputs, real servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from newsfold.samples import generate
from tests.pages import story
from tests.paths import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"


def _dev_dir(root: Path) -> Path:
    """A dev-set-shaped folder: one source, a truncated copy (wrongly full on purpose for one), a full copy."""
    source = story(611, sentences=16)
    gold = {"src": source, "trunc": source[:3], "full": source, "bad": source}
    plants = {"trunc": "truncated", "full": "full", "bad": "truncated"}
    (root / "truth").mkdir(parents=True)
    with (root / "truth" / "extraction.jsonl").open("w") as fh:
        for pid, paras in gold.items():
            fh.write(json.dumps({"id": pid, "text": "\n\n".join(paras)}) + "\n")
    with (root / "truth" / "provenance.jsonl").open("w") as fh:
        fh.write(json.dumps({"id": "src", "source": "x"}) + "\n")
        for pid, variant in plants.items():
            plant = {"source": "src", "variant": variant}
            fh.write(json.dumps({"id": pid, "source": "transplant", "transplant": plant}) + "\n")
    return root


def test_novelty_check_scores_the_transplant_kinds(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import novelty_check

    out = tmp_path / "report.json"
    assert novelty_check.main([str(_dev_dir(tmp_path / "dev")), "--gold", "--json", str(out)]) == 0
    report = json.loads(out.read_text())["variants"]
    assert report["full"]["accuracy"] == 1.0
    assert report["truncated"]["accuracy"] == 0.5  # the "bad" copy holds everything: not shorter
    assert [m["copy"] for m in report["truncated"]["misses"]] == ["bad"]
    assert "truncated" in capsys.readouterr().out


@pytest.mark.slow
def test_stories_cost_measures_every_target(monkeypatch, tmp_path, es_url, redis_url, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    monkeypatch.setenv("ELASTICSEARCH_URL", es_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    import stories_cost

    generate(tmp_path, seed=5, stories=8)
    out = tmp_path / "cost.json"
    assert stories_cost.main([str(tmp_path), "--requests", "3", "--workers", "1", "--word", "the",
                              "--json", str(out)]) == 0  # fmt: skip
    figures = json.loads(out.read_text())["figures"]
    assert {"collapsed (unit)", "GET /api/stories?window=all", "GET /stories/<id> (page)"} <= set(figures)
    assert all(f["n"] == 3 for f in figures.values())
    assert "search with relations / without" in capsys.readouterr().out
