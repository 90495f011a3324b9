"""The benchmark scripts still run against the current plugin API (tiny sizes, real servers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import band_tokens
from newsfold.samples import generate
from tests.backends import REAL_ES
from tests.paths import REPO_ROOT

BENCHMARKS = REPO_ROOT / "benchmarks"


@pytest.fixture
def bench(monkeypatch):
    """The benchmarks folder on ``sys.path``, as when a script runs from it."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import ingest_bench
    import lookup_bench

    return ingest_bench, lookup_bench


def test_server_cost_attributes_the_stand_ins_cpu_to_requests(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import server_cost

    generate(tmp_path, seed=4, stories=8)
    out, cache = tmp_path / "cost.json", tmp_path / "signed.pkl"
    assert (
        server_cost.main(
            [str(tmp_path), "--pages", "30", "--batch", "10,30", "--cache", str(cache), "--json", str(out)]
        )
        == 0
    )
    replay = json.loads(out.read_text())["replay"]
    assert [r["batch"] for r in replay] == [10, 30] and cache.exists()
    calls = replay[0]["server_cpu_ms_per_page_by_call"]
    assert calls["bulk"]["calls"] >= 3 and calls["msearch"]["calls"] >= 6  # 3 batches: lookup + reconcile each
    assert (
        server_cost.main(
            [str(tmp_path), "--pages", "12", "--batch", "6", "--bulk", "--cache", str(cache), "--json", str(out)]
        )
        == 0
    )
    bulk = json.loads(out.read_text())["bulk"]
    assert bulk["docs"] == 12 and set(bulk["server_cpu_ms_per_doc"]) == {
        "all fields",
        "without band_keys",
        "without body",
    }
    assert server_cost.main([str(tmp_path), "--warmup", "-1", "--cache", str(cache)]) == 2


def test_distinct_band_keys_are_counted_exactly(bench):
    _, lookup_bench = bench
    settings = Settings()
    corpus = lookup_bench.Corpus(settings, 300, seed=3, body_words=0)
    assert sum(1 for _ in corpus.grow(300)) == 300
    keys = set()
    for i in range(corpus.size):
        keys.update(enumerate(band_tokens(corpus.signatures[i], bands=settings.bands, rows=settings.rows)))
    assert corpus.distinct_band_keys() == len(keys)
    # copies share band keys with their story, so there are fewer keys than bands x pages
    assert len(keys) < settings.bands * corpus.size
    assert corpus.cluster_count() < corpus.size


def test_replicated_pages_get_new_ids_and_urls(bench, tmp_path):
    ingest_bench, _ = bench
    (tmp_path / "html").mkdir()
    lines = []
    for n in range(3):
        (tmp_path / "html" / f"p{n}.html").write_text(f"<html><body><p>page {n}</p></body></html>")
        lines.append(json.dumps({"id": f"p{n}", "url": f"https://a.example/{n}", "html": f"html/p{n}.html"}))
    lines.append(json.dumps({"id": "no-html", "url": None}))
    (tmp_path / "pages.jsonl").write_text("\n".join(lines) + "\n")
    payloads = ingest_bench.replicate(tmp_path, 7)
    assert len(payloads) == 7
    assert len({p["id"] for p in payloads}) == 7
    assert len({p["url"] for p in payloads}) == 7
    assert [p["id"] for p in payloads[:4]] == ["r0000-p0", "r0000-p1", "r0000-p2", "r0001-p0"]
    assert payloads[3]["html_path"] == payloads[0]["html_path"]
    assert Path(payloads[0]["html_path"]).is_file()


def test_lookup_bench_reports_every_size(bench, es_url, monkeypatch, tmp_path, capsys):
    _, lookup_bench = bench
    monkeypatch.setenv("ELASTICSEARCH_URL", es_url)
    out = tmp_path / "lookup.json"
    args = ["--sizes", "40,80", "--batches", "3", "--batch", "5", "--bulk-docs", "7", "--compare-shapes"]
    assert lookup_bench.main([*args, "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["bulk_docs"] == 7
    assert len(result["sizes"][0]["shapes"]) == 6  # every query shape ran (unmeasured on an external server; terms_set
    # refused by the stand-in)
    assert [row["index"]["docs"] for row in result["sizes"]] == [40, 80]
    for row in result["sizes"]:
        assert row["lookup"]["batch_ms"]["n"] == 3
        assert row["index"]["distinct_band_keys"] > 0
        assert row["load"]["json_bytes_per_doc"] > 1000  # signature and band keys alone are over 4 KB
    # half the looked-up pages are near-copies of indexed stories: the lookup must find some
    assert max(row["lookup"]["candidates_per_page_mean"] for row in result["sizes"]) > 0
    assert "p95 ratio" in capsys.readouterr().out


def test_stage_timings_follow_the_worker_path(bench, settings, es, redis_url, tmp_path):
    ingest_bench, _ = bench
    live = settings.replace(redis_url=redis_url, batch_size=4)  # the index of ``es``, dropped afterwards
    generate(tmp_path, seed=5, stories=8)
    payloads = ingest_bench.replicate(tmp_path, 8)
    result = ingest_bench.stage_phase(live, payloads, profile=False)
    assert result["pages"] == 8
    assert result["pages_signed"] > 0
    batches = result["per_batch_ms"]
    assert batches["index (bulk, refresh=wait_for)"]["n"] == 1  # the even batch, step by step
    assert batches["ingest() whole (odd batches)"]["n"] == 1
    assert result["per_page_ms"]["extract"]["n"] == 8
    floor = ingest_bench.index_floor(es, live, docs=5)
    scratch = f"{live.index}-floor"
    assert not es.indices.exists(index=scratch) and not es.indices.exists_alias(name=scratch)
    if floor is None:  # the CPU of a server this process did not start is not measured
        assert REAL_ES, "the stand-in's CPU must be measured"
    else:
        assert floor["docs"] == min(5, es.count(index=live.index)["count"]) > 0
        assert 0 <= floor["server_cpu_ms_per_doc"] < 10_000 and floor["seconds"] > 0


@pytest.mark.slow
def test_ingest_bench_reports_the_workers_cpu_against_trafilatura(tmp_path):
    """Run as a user runs it, in a process of its own: its process pools fork, and forking this test process
    (which runs other tests' threads) once left a pool child waiting forever on a lock."""
    import subprocess
    import sys

    generate(tmp_path, seed=6, stories=8)
    out = tmp_path / "ingest.json"
    args = [str(tmp_path), "--pages", "16", "--workers", "1", "--sample", "4", "--no-sign-phase", "--json", str(out)]
    done = subprocess.run([sys.executable, str(BENCHMARKS / "ingest_bench.py"), *args], capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["trafilatura"]["pages"] == result["extract_only"]["pages"] == result["ingest"]["pages"] == 16
    assert result["trafilatura"]["kinds"].get("article", 0) > 0
    assert result["trafilatura_after"]["pages"] == 16  # the yardstick again, after the workers
    yardstick = (result["trafilatura"]["cpu_ms_per_page"] + result["trafilatura_after"]["cpu_ms_per_page"]) / 2
    assert result["trafilatura_cpu_ms_per_page"] == pytest.approx(yardstick)
    expected = result["ingest"]["cpu_ms_per_page_workers"] / yardstick
    assert result["ratio_workers_to_trafilatura"] == pytest.approx(expected)
    assert "Celery workers' CPU per page end to end / trafilatura alone's" in done.stdout


def test_containment_bench_compares_both_estimates_with_exact_containment(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import containment_bench

    from tests.pages import story

    full = story(40, sentences=40)
    texts = {"full": "\n".join(full), "cut": "\n".join(full[:6]), "other": "\n".join(story(41, sentences=40))}
    (tmp_path / "truth").mkdir()
    (tmp_path / "truth" / "clusters.jsonl").write_text(
        "".join(json.dumps({"id": k, "cluster": "s" if k != "other" else "o"}) + "\n" for k in texts)
    )
    pairs = [{"a": "full", "b": "cut", "label": "duplicate", "kind": "truncated"}]
    pairs.append({"a": "full", "b": "other", "label": "different", "kind": "other-story"})
    (tmp_path / "truth" / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
    extraction = tmp_path / "extract.jsonl"
    extraction.write_text("".join(json.dumps({"id": k, "text": t}) + "\n" for k, t in texts.items()))
    out = tmp_path / "containment.json"
    assert containment_bench.main([str(tmp_path), "--extraction", str(extraction), "--json", str(out)]) == 0
    summary = json.loads(out.read_text())
    kinds = {row["rows"]: row for row in summary["errors"]}
    assert kinds["duplicate:truncated"]["estimate"]["mae"] < 0.05  # the cut copy lies wholly in the story
    assert summary["accepted"]["duplicate"] == {"pairs": 1, "exact": 1, "estimate": 1, "from_jaccard": 1}
    assert summary["accepted"]["different"]["estimate"] == 0
    assert "maximum likelihood" in capsys.readouterr().out


def test_hostile_bench_prints_every_hostile_inputs_memory_and_outcome(monkeypatch, tmp_path, capsys):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import hostile_bench

    out = tmp_path / "hostile.json"
    assert hostile_bench.main(["--scale", "0.02", "--no-ingest", "--json", str(out)]) == 0
    inputs = json.loads(out.read_text())["inputs"]
    assert inputs["bomb WARC (8 x gzip)"]["outcomes"] == {"page": 2, "too_large": 8}
    assert inputs["page: attributes"]["outcomes"] == {"too_complex": 1}
    assert inputs["JSONL of 9 MB attributes"]["outcomes"] == {"page": 6}
    assert inputs["page: attribute_9mb"]["outcomes"] == {"signed": 1}  # its long value emptied, the article kept
    assert all(got["peak_rss_mb"] > 0 and got["wall_s"] >= 0 for got in inputs.values())
    assert "peak RSS" in capsys.readouterr().out


def test_cluster_bench_gives_the_cluster_as_ratios_to_the_single_node(bench, monkeypatch, capsys):
    import cluster_bench

    def run(pages_per_s: float, workers_ms: float, es_ms: float) -> dict:
        return {"pages_per_s": pages_per_s, "cpu_ms_per_page_workers": workers_ms,
                "cpu_ms_per_page_elasticsearch": es_ms, "outcomes": {"new": 3}}  # fmt: skip

    result = {"single": [run(40, 30, 20), run(60, 30, 20)], "cluster": [run(25, 33, 50), run(25, 33, 70)]}
    summary = cluster_bench.summary(result)
    assert summary["means"]["single"]["pages_per_s"] == 50
    assert summary["cluster_over_single"] == pytest.approx(
        {"pages_per_s": 0.5, "cpu_ms_per_page_workers": 1.1, "cpu_ms_per_page_elasticsearch": 3.0}
    )
    monkeypatch.setenv("ELASTICSEARCH_URL", "http://127.0.0.1:9")
    with pytest.raises(SystemExit):  # it starts its own node and cluster
        cluster_bench.main(["/nonexistent"])
    assert "unset ELASTICSEARCH_URL" in capsys.readouterr().err


def test_archive_lookup_bench_looks_up_the_window_of_monthly_indices(bench, es_url, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ELASTICSEARCH_URL", es_url)
    import archive_lookup_bench

    out = tmp_path / "archive.json"
    args = ["--sizes", "60,240", "--months", "8", "--window", "90d", "--batches", "3", "--batch", "4", "--warmup", "1"]
    assert archive_lookup_bench.main([*args, "--bulk-docs", "25", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [(row["pages"], row["indices"]) for row in result["sizes"]] == [(60, 2), (240, 8)]  # 30 pages a month
    # a 90-day window over 30-day months: the write index and the three before it, however many there are
    assert result["sizes"][0]["window"]["indices_searched"] == [2]
    assert result["sizes"][1]["window"]["indices_searched"] == [4]
    assert result["sizes"][1]["every_index"]["indices_searched"] == [8]
    assert result["sizes"][1]["window"]["candidates_per_page_mean"] > 0  # copies of stories inside the window
    assert "p50 ratio 240 / 60 pages" in capsys.readouterr().out
    assert archive_lookup_bench.main(["--window", "ninety days"]) == 2
