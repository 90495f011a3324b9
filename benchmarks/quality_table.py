"""Run `newsfold cluster` once per configuration on a labelled set and print a quality table.

    python benchmarks/quality_table.py ../shared/data/dev [--only NAME ...] [--out docs/quality-runs.json]

Each configuration is a set of environment variables (the same settings the
workers read), so every row is measured through the real pipeline: embedded
stand-ins, two Celery workers, the default code path. Prints one markdown row
per configuration: pairwise P/R/F1, B-cubed F1, same-template merge rate,
truncated and related-box recall, Chinese pair recall/precision, pages/s, and
the CPU milliseconds per page of the whole run (command, workers and servers:
all children of this process), which other users of the machine disturb far
less than pages/s.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from newsfold.evaluate import evaluate, load_predictions, load_truth

CONFIGS: dict[str, dict[str, str]] = {
    "defaults": {},
    "no extraction cleanup": {"NEWSFOLD_CLEANUP": "0"},
    "no repeated-line filter": {"NEWSFOLD_REPEATED_LINES": "0"},
    "no cleanup, no repeated lines (trafilatura alone)": {"NEWSFOLD_CLEANUP": "0", "NEWSFOLD_REPEATED_LINES": "0"},
    "word 2-shingles (CEDAR)": {"NEWSFOLD_SHINGLES": "words"},
    "word 3-shingles": {"NEWSFOLD_SHINGLES": "words", "NEWSFOLD_WORD_SHINGLE": "3"},
    "containment off": {"NEWSFOLD_CONTAINMENT_MIN_RATIO": "1"},
    "CJK: character n-grams of the whole text": {"NEWSFOLD_CJK_METHOD": "ngram"},
    "CEDAR frequent-shingle filter (top 5% of stories)": {"NEWSFOLD_SHINGLE_FILTER": "frequent"},
    "weighted MinHash, rare-phrase weights": {"NEWSFOLD_SIGNATURE": "weighted"},
    "weighted MinHash, word 3-shingles": {
        "NEWSFOLD_SIGNATURE": "weighted",
        "NEWSFOLD_SHINGLES": "words",
        "NEWSFOLD_WORD_SHINGLE": "3",
    },
    "no URL/title evidence": {"NEWSFOLD_TITLE_EVIDENCE": "0"},
    "CJK: An & Cheng LCC verifier": {"NEWSFOLD_CJK_VERIFIER": "lcc"},
    "CJK: LCC verifier on character n-grams": {"NEWSFOLD_CJK_VERIFIER": "lcc", "NEWSFOLD_CJK_METHOD": "ngram"},
    "MinHash 128, LSH 64x2, two bands": {"NEWSFOLD_NUM_PERM": "128", "NEWSFOLD_BANDS": "64"},
    "MinHash 128, LSH 42x3, one band": {
        "NEWSFOLD_NUM_PERM": "128",
        "NEWSFOLD_BANDS": "42",
        "NEWSFOLD_ROWS": "3",
        "NEWSFOLD_MIN_BANDS": "1",
    },
}


def chinese_pairs(truth_dir: Path, pred: dict) -> tuple[float, float]:
    """Recall and precision over pairs of Chinese pages."""
    truth = load_truth(truth_dir)
    zh = sorted(pid for pid, lang in truth["langs"].items() if (lang or "").startswith("zh"))
    same_t = {(a, b) for a, b in itertools.combinations(zh, 2) if truth["clusters"][a] == truth["clusters"][b]}
    same_p = {
        (a, b) for a, b in itertools.combinations(zh, 2) if pred.get(a) is not None and pred.get(a) == pred.get(b)
    }
    tp = len(same_t & same_p)
    return tp / max(1, len(same_t)), tp / max(1, len(same_p))


def run(truth_dir: Path, name: str, env_changes: dict[str, str]) -> dict:
    env = {**os.environ, **env_changes}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "clusters.jsonl"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "newsfold.cli",
                "cluster",
                str(truth_dir / "pages.jsonl"),
                "--out",
                str(out),
                "--quiet",
            ],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rate = float(re.search(r"\(([\d.]+) pages/s\)", done.stderr).group(1))
        pages = int(re.search(r"(\d+) pages in", done.stderr).group(1))
        report = evaluate(truth_dir, out)
        pred = load_predictions(out)
    kinds = report["kinds"]
    zh_r, zh_p = chinese_pairs(truth_dir, pred)
    return {
        "name": name,
        "env": env_changes,
        "pairwise": report["pairwise"],
        "bcubed_f1": report["bcubed"]["f1"],
        "same_template": kinds["different"]["same-template-different-story"]["merge_rate"],
        "truncated": kinds["duplicate"]["transplant-truncated"]["recall"],
        "related_box": kinds["duplicate"]["transplant-related-box"]["recall"],
        "zh_recall": zh_r,
        "zh_precision": zh_p,
        "pages_per_s": rate,
        "cpu_ms_per_page": 1000 * (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / pages,
    }


def row(r: dict) -> str:
    p = r["pairwise"]
    cells = [
        r["name"],
        f"{p['precision']:.4f}",
        f"{p['recall']:.4f}",
        f"{p['f1']:.4f}",
        f"{r['bcubed_f1']:.4f}",
        f"{r['same_template']:.4f}",
        f"{r['truncated']:.3f}",
        f"{r['related_box']:.3f}",
        f"{r['zh_recall']:.3f} / {r['zh_precision']:.3f}",
        f"{r['pages_per_s']:.1f}",
        f"{r['cpu_ms_per_page']:.0f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("truth", type=Path, help="a labelled set laid out like ../shared/data/dev")
    parser.add_argument("--only", nargs="*", help="configuration names to run (default: all)")
    parser.add_argument("--out", type=Path, help="also write the raw results as JSON")
    args = parser.parse_args()
    header = (
        "| configuration | pairwise P | pairwise R | pairwise F1 | B-cubed F1 | same-template merge | truncated R "
        "| related-box R | Chinese R / P | pages/s | CPU ms/page |"
    )
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    results = []
    for name, env_changes in CONFIGS.items():
        if args.only and name not in args.only:
            continue
        result = run(args.truth, name, env_changes)
        results.append(result)
        print(row(result), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
