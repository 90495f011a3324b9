"""Scoring of clustering and extraction output against a labelled truth set.

Pure functions only: nothing here talks to a server. The truth layout is the
one of the evaluation sets (see ``data/dev/README.md``)::

    <truth_dir>/pages.jsonl               {id, url, site, lang, html, title}
    <truth_dir>/truth/clusters.jsonl      {id, cluster} for every page
    <truth_dir>/truth/pairs.jsonl         {a, b, label: duplicate|different, kind}
    <truth_dir>/truth/extraction.jsonl    {id, text} gold article body

The truth files may also sit directly in ``truth_dir``, and ``truth_dir`` may
be the ``truth/`` folder itself (``pages.jsonl`` is then looked up one level
up).

Clustering predictions are ``{id, cluster}`` lines as written by
``newsfold cluster``; a null cluster (a rejected page) and a page missing from
the predictions both count as a singleton of its own. Extraction predictions
are ``{id, title, text, lang}`` or ``{id, error}`` lines as written by
``newsfold extract``.

The scores and their conventions for degenerate cases are in :mod:`newsfold.scoring`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from newsfold.scoring import (
    adjusted_rand_index,
    bcubed_scores,
    cluster_labels,
    extraction_scores,
    pair_kind_scores,
    pairwise_scores,
)

# --------------------------------------------------------------------------- loading


def _read_jsonl(path: Path) -> Iterator[dict]:
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not JSON: {exc}") from exc


def _find(truth_dir: Path, name: str, *, pages: bool = False) -> Path | None:
    if pages:
        candidates = [truth_dir / name, truth_dir.parent / name]
    else:
        candidates = [truth_dir / "truth" / name, truth_dir / name]
    return next((c for c in candidates if c.is_file()), None)


def load_truth(truth_dir: Path | str) -> dict:
    """Read a truth set.

    Returns ``{"clusters": {id: cluster}, "pairs": [pair, ...],
    "extraction": {id: text}, "langs": {id: lang or None}}``.
    ``truth/clusters.jsonl`` is required; the other files are optional (empty
    when absent).
    """
    truth_dir = Path(truth_dir)
    clusters_path = _find(truth_dir, "clusters.jsonl")
    if clusters_path is None:
        raise FileNotFoundError(f"no clusters.jsonl in {truth_dir} or {truth_dir / 'truth'}")
    clusters = {str(r["id"]): r["cluster"] for r in _read_jsonl(clusters_path)}
    pairs_path = _find(truth_dir, "pairs.jsonl")
    pairs = list(_read_jsonl(pairs_path)) if pairs_path else []
    extraction_path = _find(truth_dir, "extraction.jsonl")
    extraction = {str(r["id"]): r.get("text") or "" for r in _read_jsonl(extraction_path)} if extraction_path else {}
    pages_path = _find(truth_dir, "pages.jsonl", pages=True)
    langs = {str(r["id"]): r.get("lang") for r in _read_jsonl(pages_path)} if pages_path else {}
    return {"clusters": clusters, "pairs": pairs, "extraction": extraction, "langs": langs}


def load_predictions(path: Path | str) -> dict[str, Any]:
    """``{id: cluster}`` from ``{id, cluster}`` lines; a null cluster stays ``None``."""
    return {str(r["id"]): r.get("cluster") for r in _read_jsonl(Path(path))}


def load_extractions(path: Path | str) -> dict[str, str | None]:
    """``{id: text}`` from ``newsfold extract`` output; ``None`` for ``{id, error}`` lines."""
    out: dict[str, str | None] = {}
    for r in _read_jsonl(Path(path)):
        text = r.get("text")
        out[str(r["id"])] = None if r.get("error") is not None or text is None else text
    return out


# --------------------------------------------------------------------------- report


def evaluate(truth_dir: Path | str, pred: Path | str | None = None, extraction: Path | str | None = None) -> dict:
    """Score clustering predictions and/or extraction output against a truth set.

    The report holds ``counts`` always; ``pairwise``, ``bcubed``, ``ari`` and
    ``kinds`` when ``pred`` is given; ``extraction`` when ``extraction`` is
    given.
    """
    truth = load_truth(truth_dir)
    clusters = truth["clusters"]
    tsizes = Counter(clusters.values())
    counts: dict[str, Any] = {
        "pages": len(clusters),
        "truth_clusters": len(tsizes),
        "truth_multi_page_clusters": sum(1 for n in tsizes.values() if n > 1),
        "labelled_pairs": len(truth["pairs"]),
        "gold_texts": len(truth["extraction"]),
    }
    report: dict[str, Any] = {"truth_dir": str(truth_dir), "counts": counts}
    if pred is not None:
        predicted = load_predictions(pred)
        ids = set(clusters)
        known = {i: c for i, c in predicted.items() if i in ids}
        psizes = Counter(cluster_labels(clusters, known).values())
        counts.update(
            {
                "predicted_pages": len(known),
                "missing_from_prediction": len(ids) - len(known),
                "extra_in_prediction": len(predicted) - len(known),
                "null_cluster": sum(1 for c in known.values() if c is None),
                "predicted_clusters": len(psizes),
                "predicted_multi_page_clusters": sum(1 for n in psizes.values() if n > 1),
            }
        )
        report["pairwise"] = pairwise_scores(clusters, known)
        report["bcubed"] = bcubed_scores(clusters, known)
        report["ari"] = adjusted_rand_index(clusters, known)
        report["kinds"] = pair_kind_scores(truth["pairs"], known)
    if extraction is not None:
        extracted = load_extractions(extraction)
        counts["extracted_pages"] = sum(1 for i in truth["extraction"] if extracted.get(i) is not None)
        report["extraction"] = extraction_scores(truth["extraction"], extracted, truth["langs"])
    return report


def _num(x: Any, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    cells = [headers] + [[_num(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def fmt(row: list[str]) -> str:
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))

    return [fmt(cells[0]), fmt(["-" * w for w in widths]), *(fmt(r) for r in cells[1:])]


def format_report(report: dict) -> str:
    """A plain-text rendering of :func:`evaluate`'s report."""
    lines: list[str] = []
    if "truth_dir" in report:
        lines.append(f"truth: {report['truth_dir']}")
    counts = report.get("counts") or {}
    if counts:
        lines.append("")
        lines.extend(_table(["count", "value"], [[k, v] for k, v in counts.items()]))
    if "pairwise" in report:
        pw, b3 = report["pairwise"], report["bcubed"]
        lines.append("")
        lines.extend(
            _table(
                ["clustering", "precision", "recall", "f1"],
                [
                    ["pairwise", pw["precision"], pw["recall"], pw["f1"]],
                    ["b-cubed", b3["precision"], b3["recall"], b3["f1"]],
                ],
            )
        )
        lines.append(
            f"pairs: tp={pw['tp']} fp={pw['fp']} fn={pw['fn']} (true {pw['true_pairs']}, predicted {pw['pred_pairs']})"
        )
        lines.append(f"adjusted Rand index: {report['ari']:.4f}")
    kinds = report.get("kinds")
    if kinds:
        rows = []
        for label, rate in (("duplicate", "recall"), ("different", "merge_rate")):
            for kind, v in kinds[label].items():
                rows.append([f"{label}:{kind}", v["pairs"], v["same_cluster"], rate, v[rate]])
            tot = kinds["totals"][label]
            if tot["pairs"]:
                rows.append([f"{label}:(all)", tot["pairs"], tot["same_cluster"], rate, tot[rate]])
        if rows:
            lines.append("")
            lines.extend(_table(["pair kind", "pairs", "same", "measure", "value"], rows))
    ext = report.get("extraction")
    if ext:
        lines.append("")
        rows = [[g, v["pages"], v["failed"], v["precision"], v["recall"], v["f1"]] for g, v in ext.items()]
        lines.extend(_table(["extraction", "pages", "failed", "precision", "recall", "f1"], rows))
    return "\n".join(lines).lstrip("\n") + "\n"
