"""benchmarks/extract_bench.py runs on a tiny dev-like folder and prints every row it must print."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from tests.pages import page, story
from tests.paths import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"
METHODS = ("lxml parse", "trafilatura default", "trafilatura fast", "newsfold")


def _dev_folder(root: Path) -> None:
    """pages.jsonl, gzipped pages and truth/ in the dev set's layout, built from tests.pages (no dev data)."""
    (root / "html").mkdir()
    (root / "truth").mkdir()
    files: dict[str, list[dict]] = {
        "pages.jsonl": [],
        "truth/extraction.jsonl": [],
        "truth/provenance.jsonl": [],
        "truth/clusters.jsonl": [],
    }
    for n in range(4):
        paras, page_id = story(100 + n), f"p{n}"
        (root / "html" / f"{page_id}.html.gz").write_bytes(gzip.compress(page(f"Story {n}", paras).encode()))
        files["pages.jsonl"].append(
            {"id": page_id, "url": f"https://example.test/{n}", "lang": "en", "html": f"html/{page_id}.html.gz"}
        )
        files["truth/extraction.jsonl"].append({"id": page_id, "text": "\n\n".join(paras)})
        files["truth/provenance.jsonl"].append({"id": page_id, "source": "left" if n < 3 else "right"})
        files["truth/clusters.jsonl"].append({"id": page_id, "cluster": page_id})
    for name, rows in files.items():
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_extract_bench_prints_every_method_overall_per_language_and_per_source(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import extract_bench

    _dev_folder(tmp_path)
    out_json = tmp_path / "rows.json"
    assert extract_bench.main([str(tmp_path), "--pages", "4", "--repeat", "2", "--json", str(out_json)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("4 pages, repeat 2")

    rows = {(r["scope"], r["group"], r["method"]): r for r in json.loads(out_json.read_text())}
    expected = [("overall", "all", 4), ("lang", "en", 4), ("source", "left", 3), ("source", "right", 1)]
    assert len(rows) == len(expected) * len(METHODS)
    for scope, group, pages in expected:
        for method in METHODS:
            row = rows[(scope, group, method)]
            assert row["pages"] == pages
            assert row["cpu_ms_p95"] >= row["cpu_ms_median"] > 0 and row["cpu_ms_mean"] > 0
            assert (row["f1"] is None) == (method == "lxml parse")
            # the printed table holds the same row: pages, three CPU figures, ratio, F1 ("-" for lxml)
            figures = r"\s+[\d.]+" * 4 + r"\s+(-|[01]\.\d{4})$"
            pattern = rf"^{scope}\s+{group}\s+{method}\s+{pages}" + figures
            assert sum(bool(re.match(pattern, line)) for line in printed) == 1, (scope, group, method)
    assert rows[("overall", "all", "trafilatura default")]["vs_default"] == 1.0
    paths = next(line for line in printed if line.startswith("newsfold paths (pages): "))
    assert sum(int(n) for n in re.findall(r"\d+", paths)) == 4  # each page once, whatever the repeat
    # the pages are easy: a scoring that does not see the article shows up here
    assert rows[("overall", "all", "newsfold")]["f1"] > 0.95
    assert rows[("overall", "all", "lxml parse")]["cpu_ms_mean"] < rows[("overall", "all", "newsfold")]["cpu_ms_mean"]


def test_extract_bench_rejects_an_unknown_method(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import extract_bench

    _dev_folder(tmp_path)
    try:
        extract_bench.main([str(tmp_path), "--methods", "newsfold,readability"])
    except SystemExit as exc:
        assert exc.code == 2
    else:
        raise AssertionError("an unknown method must stop the script")


def test_extract_bench_compares_each_page_with_an_earlier_run(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import extract_bench

    _dev_folder(tmp_path)
    now, earlier = tmp_path / "now.jsonl", tmp_path / "earlier.jsonl"
    assert extract_bench.main([str(tmp_path), "--methods", "newsfold", "--per-page", str(now)]) == 0
    scores = [json.loads(line) for line in now.read_text().splitlines()]
    assert sorted(r["id"] for r in scores) == ["p0", "p1", "p2", "p3"] and {r["method"] for r in scores} == {"newsfold"}
    # an earlier run that did worse on one page and better on another
    moved = {"p0": -0.5, "p1": +0.002, "p2": +0.5}
    earlier.write_text("".join(json.dumps({**r, "f1": r["f1"] + moved.get(r["id"], 0)}) + "\n" for r in scores))
    capsys.readouterr()
    assert extract_bench.main([str(tmp_path), "--methods", "newsfold", "--compare", str(earlier)]) == 0
    # p0 better by 0.5, p2 worse by 0.5, p1 moved by less than CHANGE
    assert "newsfold: 4 pages compared, 1 better, 1 worse, sum -0.002" in capsys.readouterr().out


def test_signing_bench_prints_both_costs(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import signing_bench

    _dev_folder(tmp_path)
    assert signing_bench.main([str(tmp_path), "--texts", "3", "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 gold texts")
    assert re.search(r"^sign_text\s+\d+\.\d\d CPU ms a text$", out, re.M)
    assert re.search(r"^passage_keys\s+\d+\.\d\d CPU ms a text$", out, re.M)
