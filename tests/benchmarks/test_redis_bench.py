"""benchmarks/redis_bench.py still runs against newsfold.state.repeated_lines (tiny sizes, real Redis servers)."""

from __future__ import annotations

import json

from tests.paths import REPO_ROOT


def test_redis_bench_measures_both_formats(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
    import redis_bench

    out = tmp_path / "redis.json"
    assert redis_bench.main(["--pages", "3000", "--sites", "3", "--weeks", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    before, after = result["before"], result["after"]
    assert before["pages"] == after["pages"] == 3000
    assert after["site_weeks"] == before["site_weeks"] == 6 and after["keys"] == 6  # one key per site-week
    assert after["largest_key"] < 32 * 1024 < before["largest_key"]
    for variant in (before, after):  # 500 pages a site-week: the site's lines found, a new page's own not
        assert variant["furniture_found"] > 0.9 and variant["article_false_positives"] < 0.05  # 60 probe lines
        assert variant["pages_filtered"] == 1.0


def test_redis_bench_replays_a_page_folder(monkeypatch, tmp_path):
    from newsfold.samples import generate

    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
    import redis_bench

    generate(tmp_path / "dev", seed=4, stories=8)
    out = tmp_path / "redis.json"
    assert redis_bench.main(["--dev", str(tmp_path / "dev"), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["before"]["pages"] == result["after"]["pages"] > 0
    assert result["after"]["keys"] == result["after"]["site_weeks"] <= result["before"]["keys"]
    assert result["after"]["memory_usage_sum"] < result["before"]["memory_usage_sum"]
