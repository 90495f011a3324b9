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

Conventions for degenerate cases (documented because they change numbers):

* Pairwise precision is 1.0 when the prediction puts no two pages together
  (no predicted pair, so no false positive); pairwise recall is 1.0 when the
  truth has no pair. F1 is 0 when precision + recall is 0.
* The adjusted Rand index is 1.0 when its denominator is 0, which only happens
  when both partitions are identical and trivial (all singletons, or all pages
  in one cluster), or for fewer than two pages.
* ``token_prf``: both texts without tokens -> (1, 1, 1); exactly one without
  tokens -> (0, 0, 0).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from newsfold.plugin.text import tokenize

CJK_LANGS = ("zh", "ja", "ko")
LANG_GROUPS = ("zh", "ja", "ko", "cjk", "other")

# --------------------------------------------------------------------------- helpers


def _comb2(n: int) -> int:
    return n * (n - 1) // 2


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def _labels(ids: Iterable[str], assignment: Mapping[str, Any]) -> dict[str, Hashable]:
    """Cluster label per id; a missing or null cluster becomes a singleton of its own.

    Singleton labels are tuples so they never collide with real (string) cluster ids.
    """
    out: dict[str, Hashable] = {}
    for i in ids:
        c = assignment.get(i)
        out[i] = ("singleton", i) if c is None else ("cluster", c)
    return out


def _contingency(truth: Mapping[str, Any], pred: Mapping[str, Any]) -> tuple[Counter, Counter, Counter]:
    """(cells, truth sizes, pred sizes) over the ids of ``truth``."""
    ids = list(truth)
    t = _labels(ids, truth)
    p = _labels(ids, pred)
    cells: Counter = Counter((t[i], p[i]) for i in ids)
    return cells, Counter(t.values()), Counter(p.values())


# --------------------------------------------------------------------------- clustering


def pairwise_scores(truth: Mapping[str, Any], pred: Mapping[str, Any]) -> dict:
    """Pair-counting precision/recall/F1 over all pairs of pages in ``truth``.

    A pair is positive when both pages share a cluster. Counted from the
    contingency table (sum of C(n, 2) over cells), not by enumerating pairs.
    Pages of ``pred`` that are not in ``truth`` are ignored; pages of
    ``truth`` missing from ``pred`` (or with a null cluster) are singletons.
    """
    cells, tsizes, psizes = _contingency(truth, pred)
    tp = sum(_comb2(n) for n in cells.values())
    true_pairs = sum(_comb2(n) for n in tsizes.values())
    pred_pairs = sum(_comb2(n) for n in psizes.values())
    precision = tp / pred_pairs if pred_pairs else 1.0
    recall = tp / true_pairs if true_pairs else 1.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": _f1(precision, recall),
        "tp": tp,
        "fp": pred_pairs - tp,
        "fn": true_pairs - tp,
        "true_pairs": true_pairs,
        "pred_pairs": pred_pairs,
    }


def bcubed_scores(truth: Mapping[str, Any], pred: Mapping[str, Any]) -> dict:
    """B-cubed precision/recall/F1 (per-document definition), over the ids of ``truth``.

    For a document d with predicted cluster P(d) and true cluster T(d):
    precision(d) = |P(d) ∩ T(d)| / |P(d)|, recall(d) = |P(d) ∩ T(d)| / |T(d)|.
    Both are averaged over documents; F1 is the harmonic mean of the averages.
    Every document of a contingency cell of size n has |P ∩ T| = n, so the
    sums are taken per cell. An empty truth scores 1.0.
    """
    cells, tsizes, psizes = _contingency(truth, pred)
    n = sum(cells.values())
    if n == 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0, "documents": 0}
    precision = sum(c * c / psizes[p] for (_, p), c in cells.items()) / n
    recall = sum(c * c / tsizes[t] for (t, _), c in cells.items()) / n
    return {"precision": precision, "recall": recall, "f1": _f1(precision, recall), "documents": n}


def adjusted_rand_index(truth: Mapping[str, Any], pred: Mapping[str, Any]) -> float:
    """Hubert & Arabie's adjusted Rand index over the ids of ``truth``."""
    cells, tsizes, psizes = _contingency(truth, pred)
    n = sum(cells.values())
    total = _comb2(n)
    index = sum(_comb2(c) for c in cells.values())
    sum_t = sum(_comb2(c) for c in tsizes.values())
    sum_p = sum(_comb2(c) for c in psizes.values())
    if total == 0:
        return 1.0
    expected = sum_t * sum_p / total
    maximum = (sum_t + sum_p) / 2
    if maximum == expected:
        return 1.0
    return (index - expected) / (maximum - expected)


def pair_kind_scores(pairs: Iterable[Mapping[str, Any]], pred: Mapping[str, Any]) -> dict:
    """Per-kind results on labelled pairs.

    For ``duplicate`` kinds ``recall`` is the share of pairs the prediction
    puts in one cluster; for ``different`` kinds ``merge_rate`` is that same
    share (lower is better). Pages missing from ``pred`` or with a null
    cluster are singletons, so such a pair is never "same cluster".
    Returns ``{"duplicate": {kind: {...}}, "different": {kind: {...}},
    "totals": {"duplicate": {...}, "different": {...}}}``.
    """
    counts: dict[str, dict[str, list[int]]] = {
        "duplicate": defaultdict(lambda: [0, 0]),
        "different": defaultdict(lambda: [0, 0]),
    }
    for pair in pairs:
        label = pair.get("label")
        if label not in counts:
            raise ValueError(f"pair {pair.get('a')}/{pair.get('b')}: unknown label {label!r}")
        ca, cb = pred.get(pair["a"]), pred.get(pair["b"])
        same = pair["a"] == pair["b"] or (ca is not None and ca == cb)
        cell = counts[label][pair.get("kind") or "(none)"]
        cell[0] += 1
        cell[1] += int(same)
    rate_name = {"duplicate": "recall", "different": "merge_rate"}
    out: dict[str, dict] = {"duplicate": {}, "different": {}, "totals": {}}
    for label, kinds in counts.items():
        all_pairs = all_same = 0
        for kind in sorted(kinds):
            total, same = kinds[kind]
            all_pairs += total
            all_same += same
            out[label][kind] = {"pairs": total, "same_cluster": same, rate_name[label]: same / total}
        out["totals"][label] = {
            "pairs": all_pairs,
            "same_cluster": all_same,
            rate_name[label]: all_same / all_pairs if all_pairs else None,
        }
    return out


# --------------------------------------------------------------------------- extraction


def token_prf(gold: str, predicted: str) -> tuple[float, float, float]:
    """Bag-of-tokens precision/recall/F1 (multiset intersection) of two texts.

    Tokens come from :func:`plugin.text.tokenize` (case-folded words, one
    token per CJK character, so Chinese/Japanese are scored by characters).
    """
    g = Counter(tokenize(gold or ""))
    p = Counter(tokenize(predicted or ""))
    if not g and not p:
        return 1.0, 1.0, 1.0
    if not g or not p:
        return 0.0, 0.0, 0.0
    common = sum((g & p).values())
    precision = common / sum(p.values())
    recall = common / sum(g.values())
    return precision, recall, _f1(precision, recall)


def lang_group(lang: str | None) -> str:
    """``zh``, ``ja``, ``ko`` for CJK language tags (``zh-CN`` -> ``zh``), else ``other``."""
    if not lang:
        return "other"
    primary = lang.strip().lower().replace("_", "-").split("-")[0]
    return primary if primary in CJK_LANGS else "other"


def extraction_scores(
    gold: Mapping[str, str],
    predicted: Mapping[str, str | None],
    langs: Mapping[str, str | None] | None = None,
) -> dict:
    """Macro-averaged token P/R/F1 per page over the pages of ``gold``.

    A page whose prediction is missing or ``None`` (an extraction error)
    scores 0/0/0. Reported overall (``all``) and per language group:
    ``zh``, ``ja``, ``ko``, ``cjk`` (the three together) and ``other``
    (everything else, including unknown language). Groups without pages are
    left out. Each group has ``pages``, ``failed`` (missing/None predictions),
    ``precision``, ``recall``, ``f1``.
    """
    langs = langs or {}
    sums: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0, 0.0, 0.0])  # pages, failed, p, r, f
    for page_id, gold_text in gold.items():
        text = predicted.get(page_id)
        failed = text is None
        p, r, f = (0.0, 0.0, 0.0) if text is None else token_prf(gold_text, text)
        group = lang_group(langs.get(page_id))
        groups = ["all", group] + (["cjk"] if group in CJK_LANGS else [])
        for g in groups:
            acc = sums[g]
            acc[0] += 1
            acc[1] += int(failed)
            acc[2] += p
            acc[3] += r
            acc[4] += f
    out: dict[str, dict] = {}
    for g in ("all", *LANG_GROUPS):
        if g not in sums:
            continue
        pages, failures, p, r, f = sums[g]
        out[g] = {
            "pages": int(pages),
            "failed": int(failures),
            "precision": p / pages,
            "recall": r / pages,
            "f1": f / pages,
        }
    if "all" not in out:
        out["all"] = {"pages": 0, "failed": 0, "precision": None, "recall": None, "f1": None}
    return out


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
        psizes = Counter(_labels(clusters, known).values())
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
