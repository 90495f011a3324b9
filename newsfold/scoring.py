"""Scores of a clustering and of an extraction against the truth: pure functions over plain mappings.

Clusterings are mappings ``id -> cluster`` (a missing or null cluster is a
singleton of its own); :mod:`newsfold.evaluate` reads the files and builds the
report from these scores.

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

from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from newsfold.plugin.text import tokenize

CJK_LANGS = ("zh", "ja", "ko")
LANG_GROUPS = ("zh", "ja", "ko", "cjk", "other")

# --------------------------------------------------------------------------- helpers


def _comb2(n: int) -> int:
    return n * (n - 1) // 2


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def cluster_labels(ids: Iterable[str], assignment: Mapping[str, Any]) -> dict[str, Hashable]:
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
    t = cluster_labels(ids, truth)
    p = cluster_labels(ids, pred)
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
