"""How far the MinHash containment estimates are from exact containment, on the labelled pairs of a dev set.

    newsfold extract ../shared/data/dev/pages.jsonl --out /tmp/dev-extract.jsonl
    python benchmarks/containment_bench.py ../shared/data/dev --extraction /tmp/dev-extract.jsonl [--json out.json]

Every page's extracted text is signed as the workers sign it (signed part,
shingle scheme, MinHash with the pinned seed; the repeated-line filter needs
the site's history in Redis and is left out) and its exact shingle set is
kept beside the signature. For every labelled pair both estimates of the
share of the smaller set found in the larger one are compared with the exact
share: the one ``plugin.sign.signature.containment`` makes (the maximum-likelihood
intersection, from every value of the two signatures) and the one derived from
the Jaccard estimate alone (``weighted=True``, what newsfold used before).
Rows: all pairs, pairs whose smaller set is under half the larger (the
short-against-long case), those of them that are mostly contained, and each
pair kind. Last, how many positive and negative pairs the verifier's rule
(Jaccard >= threshold, or containment >= its threshold with the smaller set
at least ``containment_min_ratio`` of the larger) accepts with exact
containment and with each estimate: what the estimate, not extraction, costs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from benchlib import env_settings, write_json

from newsfold.evaluate import load_extractions, load_truth
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign import shingles
from newsfold.plugin.sign.signature import containment, jaccard, signed_features, signing_text
from newsfold.plugin.text import is_cjk_text, tokenize


def shingle_set(text: str, settings: Settings) -> set[bytes]:
    """The exact set a signature of ``text`` is computed from (as ``signed_features`` builds it)."""
    tokens = tokenize(signing_text(text, settings))
    return shingles.shingle_set(tokens, settings, cjk=is_cjk_text(tokens))


def pair_rows(truth_dir: Path, extraction: Path, settings: Settings) -> list[dict]:
    """One row per labelled pair whose two pages have a text: exact and estimated containment."""
    texts = {pid: text for pid, text in load_extractions(extraction).items() if text}
    signed = {pid: (signed_features(text, settings)[0], shingle_set(text, settings)) for pid, text in texts.items()}
    rows = []
    for pair in load_truth(truth_dir)["pairs"]:
        a, b = str(pair["a"]), str(pair["b"])
        if a not in signed or b not in signed:
            continue
        (sig_a, set_a), (sig_b, set_b) = signed[a], signed[b]
        small, large = sorted((len(set_a), len(set_b)))
        if not small:
            continue
        j = jaccard(sig_a, sig_b)
        rows.append(
            {
                "kind": f"{pair['label']}:{pair['kind']}",
                "size_ratio": small / large,
                "jaccard": j,
                "exact": len(set_a & set_b) / small,
                "estimate": containment(sig_a, sig_b, j),
                "from_jaccard": containment(sig_a, sig_b, j, weighted=True),
            }
        )
    return rows


def error_row(name: str, rows: list[dict]) -> dict:
    """Bias, standard deviation and mean absolute error of both estimates over ``rows``."""
    out = {"rows": name, "pairs": len(rows)}
    for key in ("estimate", "from_jaccard"):
        err = np.array([r[key] - r["exact"] for r in rows])
        out[key] = {"bias": float(err.mean()), "sd": float(err.std()), "mae": float(np.abs(err).mean())}
    return out


def accepted(rows: list[dict], key: str, settings: Settings) -> int:
    """Pairs the verifier's rule accepts when containment is read from ``key``."""
    return sum(
        r["jaccard"] >= settings.threshold
        or (r["size_ratio"] >= settings.containment_min_ratio and r[key] >= settings.containment_threshold)
        for r in rows
    )


def summarise(rows: list[dict], settings: Settings) -> dict:
    short = [r for r in rows if r["size_ratio"] < 0.5]
    groups = [("all pairs", rows), ("smaller set under half the larger", short)]
    groups.append(("  of which mostly contained (exact >= 0.5)", [r for r in short if r["exact"] >= 0.5]))
    groups += [(kind, [r for r in rows if r["kind"] == kind]) for kind in sorted({r["kind"] for r in rows})]
    decisions = {}
    for label in ("duplicate", "different"):
        chosen = [r for r in rows if r["kind"].startswith(label + ":")]
        decisions[label] = {"pairs": len(chosen)} | {
            k: accepted(chosen, k, settings) for k in ("exact", "estimate", "from_jaccard")
        }
    return {"errors": [error_row(name, g) for name, g in groups if g], "accepted": decisions}


def report(summary: dict) -> str:
    lines = [
        f"{'pairs':48s} {'n':>5s}   maximum likelihood (bias / sd / mae)   from Jaccard (bias / sd / mae)",
    ]
    for row in summary["errors"]:
        cells = [
            f"{row[k]['bias']:+.3f} / {row[k]['sd']:.3f} / {row[k]['mae']:.3f}" for k in ("estimate", "from_jaccard")
        ]
        lines.append(f"{row['rows']:48s} {row['pairs']:5d}   {cells[0]:37s}  {cells[1]}")
    lines.append("")
    lines.append("pairs the verifier accepts with exact containment / maximum likelihood / from Jaccard:")
    for label, d in summary["accepted"].items():
        lines.append(f"  {label:10s} {d['exact']} / {d['estimate']} / {d['from_jaccard']} of {d['pairs']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dev_dir", type=Path, help="a folder with pages.jsonl and truth/pairs.jsonl")
    parser.add_argument("--extraction", type=Path, required=True, help="newsfold extract output for its pages")
    parser.add_argument("--json", type=Path, help="also write the summary as JSON here")
    args = parser.parse_args(argv)
    settings = env_settings("containment_bench")
    if settings is None:
        return 2
    if settings.signature_kind != "minhash":
        parser.error("the comparison needs plain MinHash signatures (NEWSFOLD_SIGNATURE=minhash)")
    rows = pair_rows(args.dev_dir, args.extraction, settings)
    if not rows:
        parser.error(f"no labelled pair of {args.dev_dir} has both texts in {args.extraction}")
    summary = summarise(rows, settings)
    print(report(summary))
    write_json(args.json, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
