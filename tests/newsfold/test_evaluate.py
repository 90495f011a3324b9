"""newsfold.scoring and newsfold.evaluate on small hand-made cases with hand-computed answers."""

from __future__ import annotations

import itertools
import json
import random

import pytest

from newsfold.evaluate import evaluate, format_report, load_extractions, load_predictions, load_truth
from newsfold.scoring import (
    adjusted_rand_index,
    bcubed_scores,
    extraction_scores,
    lang_group,
    pair_kind_scores,
    pairwise_scores,
    token_prf,
)

approx = pytest.approx


def _write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


# --------------------------------------------------------------------------- clustering


def test_perfect_clustering_scores_one_everywhere():
    truth = {"a": "1", "b": "1", "c": "2", "d": "3"}
    pred = {"a": "x", "b": "x", "c": "y", "d": "z"}  # same partition, other labels
    pw = pairwise_scores(truth, pred)
    assert (pw["precision"], pw["recall"], pw["f1"]) == (1.0, 1.0, 1.0)
    assert (pw["tp"], pw["fp"], pw["fn"]) == (1, 0, 0)
    b3 = bcubed_scores(truth, pred)
    assert (b3["precision"], b3["recall"], b3["f1"]) == (1.0, 1.0, 1.0)
    assert adjusted_rand_index(truth, pred) == 1.0


def test_all_singletons_against_one_true_pair():
    truth = {"a": "1", "b": "1", "c": "2", "d": "3"}
    # every page alone: distinct labels, a null cluster (rejected page) and a missing page
    pred = {"a": "p1", "b": "p2", "c": None}
    pw = pairwise_scores(truth, pred)
    # 1 true pair (a,b), 0 predicted pairs. Convention: precision = 1.0 when nothing is predicted
    # together (no false positive); recall 0/1 = 0; F1 = 0.
    assert pw["true_pairs"] == 1 and pw["pred_pairs"] == 0
    assert pw["precision"] == 1.0
    assert pw["recall"] == 0.0
    assert pw["f1"] == 0.0
    b3 = bcubed_scores(truth, pred)
    # precision: every predicted cluster has size 1 -> 1 for all docs.
    # recall: a 1/2, b 1/2, c 1, d 1 -> 3/4. F1 = 2*1*0.75/1.75 = 6/7.
    assert b3["precision"] == 1.0
    assert b3["recall"] == approx(0.75)
    assert b3["f1"] == approx(6 / 7)
    # ARI: sum_t=1, sum_p=0, N=C(4,2)=6, expected=0, max=0.5, index=0 -> 0.
    assert adjusted_rand_index(truth, pred) == approx(0.0)


def test_null_clusters_are_not_merged_with_each_other():
    truth = {"a": "1", "b": "1"}
    pw = pairwise_scores(truth, {"a": None, "b": None})
    assert pw["pred_pairs"] == 0 and pw["recall"] == 0.0


def test_merge_of_two_truth_clusters():
    truth = {"a": "1", "b": "1", "c": "2", "d": "2", "e": "3"}
    pred = {"a": "X", "b": "X", "c": "X", "d": "X", "e": "Y"}
    pw = pairwise_scores(truth, pred)
    # true pairs: (a,b),(c,d) = 2; predicted pairs: C(4,2) = 6; tp = 2.
    # P = 2/6 = 1/3, R = 1, F1 = 2*(1/3)/(4/3) = 0.5
    assert (pw["tp"], pw["fp"], pw["fn"]) == (2, 4, 0)
    assert pw["precision"] == approx(1 / 3)
    assert pw["recall"] == 1.0
    assert pw["f1"] == approx(0.5)
    b3 = bcubed_scores(truth, pred)
    # precision: a,b,c,d 2/4 each, e 1/1 -> (4*0.5+1)/5 = 0.6; recall 1; F1 = 1.2/1.6 = 0.75
    assert b3["precision"] == approx(0.6)
    assert b3["recall"] == approx(1.0)
    assert b3["f1"] == approx(0.75)
    # ARI: index=2, sum_t=2, sum_p=6, N=10, expected=1.2, max=4 -> 0.8/2.8 = 2/7
    assert adjusted_rand_index(truth, pred) == approx(2 / 7)


def test_pages_outside_truth_are_ignored():
    truth = {"a": "1", "b": "2"}
    pred = {"a": "x", "b": "y", "zzz": "x"}  # zzz is not in truth: must not create a pair
    assert pairwise_scores(truth, pred)["pred_pairs"] == 0
    assert bcubed_scores(truth, pred)["precision"] == 1.0


def _labels(seq):
    return {str(i): c for i, c in enumerate(seq)}


def test_ari_textbook_values():
    # scikit-learn's documented examples of adjusted_rand_score.
    # [0,0,1,2] vs [0,0,1,1]: index=1, sum_t=1, sum_p=2, N=6, expected=1/3, max=1.5 -> (2/3)/(7/6) = 4/7
    assert adjusted_rand_index(_labels([0, 0, 1, 2]), _labels([0, 0, 1, 1])) == approx(4 / 7)
    # [0,0,1,1] vs [0,1,0,1]: index=0, sum_t=sum_p=2, expected=2/3, max=2 -> (-2/3)/(4/3) = -0.5
    assert adjusted_rand_index(_labels([0, 0, 1, 1]), _labels([0, 1, 0, 1])) == approx(-0.5)
    # one cluster vs all singletons: expected=0, max=3, index=0 -> 0
    assert adjusted_rand_index(_labels([0, 0, 0, 0]), _labels([0, 1, 2, 3])) == approx(0.0)
    # label permutation does not matter
    assert adjusted_rand_index(_labels([0, 0, 1, 1]), _labels([1, 1, 0, 0])) == 1.0


def test_ari_trivial_identical_partitions_are_one():
    assert adjusted_rand_index(_labels([0, 1, 2]), _labels([5, 6, 7])) == 1.0
    assert adjusted_rand_index(_labels([0, 0, 0]), _labels([4, 4, 4])) == 1.0
    assert adjusted_rand_index({"a": "1"}, {}) == 1.0


def test_contingency_counts_match_brute_force():
    rng = random.Random(7)
    for _ in range(20):
        n = rng.randint(2, 30)
        truth = {f"d{i}": f"t{rng.randint(0, 6)}" for i in range(n)}
        pred = {f"d{i}": (None if rng.random() < 0.1 else f"p{rng.randint(0, 5)}") for i in range(n)}
        same_t = {(a, b): truth[a] == truth[b] for a, b in itertools.combinations(truth, 2)}
        same_p = {(a, b): pred[a] is not None and pred[a] == pred[b] for a, b in itertools.combinations(truth, 2)}
        tp = sum(1 for k in same_t if same_t[k] and same_p[k])
        pw = pairwise_scores(truth, pred)
        assert pw["tp"] == tp
        assert pw["true_pairs"] == sum(same_t.values())
        assert pw["pred_pairs"] == sum(same_p.values())
        # B-cubed by its per-document definition
        prec = rec = 0.0
        for d in truth:
            pc = {e for e in truth if e == d or (pred[d] is not None and pred[e] == pred[d])}
            tc = {e for e in truth if truth[e] == truth[d]}
            prec += len(pc & tc) / len(pc)
            rec += len(pc & tc) / len(tc)
        b3 = bcubed_scores(truth, pred)
        assert b3["precision"] == approx(prec / n)
        assert b3["recall"] == approx(rec / n)
        # ARI is symmetric
        if all(c is not None for c in pred.values()):
            assert adjusted_rand_index(truth, pred) == approx(adjusted_rand_index(pred, truth))


def test_pair_kind_scores():
    pred = {"a": "x", "b": "x", "c": "y", "d": None, "e": "y"}
    pairs = [
        {"a": "a", "b": "b", "label": "duplicate", "kind": "k1"},  # same
        {"a": "a", "b": "c", "label": "duplicate", "kind": "k1"},  # not
        {"a": "d", "b": "c", "label": "duplicate", "kind": "k2"},  # d is null -> not
        {"a": "c", "b": "e", "label": "different", "kind": "n1"},  # merged
        {"a": "a", "b": "e", "label": "different", "kind": "n1"},  # not
        {"a": "b", "b": "zz", "label": "different", "kind": "n2"},  # zz missing -> not
    ]
    out = pair_kind_scores(pairs, pred)
    assert out["duplicate"]["k1"] == {"pairs": 2, "same_cluster": 1, "recall": 0.5}
    assert out["duplicate"]["k2"] == {"pairs": 1, "same_cluster": 0, "recall": 0.0}
    assert out["different"]["n1"] == {"pairs": 2, "same_cluster": 1, "merge_rate": 0.5}
    assert out["different"]["n2"] == {"pairs": 1, "same_cluster": 0, "merge_rate": 0.0}
    assert out["totals"]["duplicate"]["recall"] == approx(1 / 3)
    assert out["totals"]["different"]["merge_rate"] == approx(1 / 3)


def test_pair_kind_scores_rejects_unknown_label():
    with pytest.raises(ValueError, match="unknown label"):
        pair_kind_scores([{"a": "a", "b": "b", "label": "maybe", "kind": "k"}], {})


# --------------------------------------------------------------------------- extraction


def test_token_prf_words_and_multiset():
    # gold: the x2, cat, sat, on, mat = 6 tokens; predicted 3 tokens all in gold
    p, r, f = token_prf("The cat sat on the mat.", "the CAT sat")
    assert (p, r) == (1.0, 0.5)
    assert f == approx(2 / 3)
    # multiset: "the" x3 predicted, x2 in gold -> common 2; P=2/3, R=2/6, F1=2*(2/9)/1=4/9
    p, r, f = token_prf("The cat sat on the mat.", "the the the")
    assert p == approx(2 / 3)
    assert r == approx(1 / 3)
    assert f == approx(4 / 9)


def test_token_prf_cjk_is_scored_by_characters():
    # 北京大学 = 4 character tokens; 北京 = 2, both in gold -> P=1, R=0.5, F1=2/3
    p, r, f = token_prf("北京大学", "北京")
    assert (p, r) == (1.0, 0.5)
    assert f == approx(2 / 3)
    # whitespace between characters does not matter
    assert token_prf("北京大学", "北京 大学") == (1.0, 1.0, 1.0)
    # mixed: 我, 爱, nlp (3 tokens) vs 我, nlp -> P=1, R=2/3, F1=0.8
    p, r, f = token_prf("我爱NLP", "我 nlp")
    assert p == 1.0 and r == approx(2 / 3) and f == approx(0.8)


def test_token_prf_empty_cases():
    assert token_prf("", "") == (1.0, 1.0, 1.0)
    assert token_prf("!!!", "  ") == (1.0, 1.0, 1.0)  # no tokens on either side
    assert token_prf("", "some words") == (0.0, 0.0, 0.0)
    assert token_prf("some words", "") == (0.0, 0.0, 0.0)


def test_lang_group():
    assert lang_group("zh-CN") == "zh"
    assert lang_group("ZH_tw") == "zh"
    assert lang_group("ja") == "ja"
    assert lang_group("ko") == "ko"
    assert lang_group("en") == "other"
    assert lang_group(None) == "other"


def test_extraction_scores_macro_and_groups():
    gold = {"e1": "a b c d", "z1": "北京大学", "j1": "ひらがな", "k1": "안녕 하세요", "x1": "one two"}
    predicted = {"e1": "a b", "z1": "北京大学", "j1": None, "k1": "안녕", "extra": "ignored"}  # x1 missing
    langs = {"e1": "en", "z1": "zh", "j1": "ja", "k1": "ko", "x1": None}
    out = extraction_scores(gold, predicted, langs)
    # per page (P, R, F): e1 (1, .5, 2/3), z1 (1, 1, 1), j1 (0, 0, 0) error, k1 (1, .5, 2/3), x1 (0, 0, 0) missing
    assert out["all"]["pages"] == 5 and out["all"]["failed"] == 2
    assert out["all"]["precision"] == approx(3 / 5)
    assert out["all"]["recall"] == approx(2 / 5)
    assert out["all"]["f1"] == approx((7 / 3) / 5)
    assert out["zh"] == {"pages": 1, "failed": 0, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert out["ja"]["f1"] == 0.0 and out["ja"]["failed"] == 1
    assert out["ko"]["recall"] == approx(0.5)
    # cjk = z1, j1, k1: P (1+0+1)/3, R (1+0+.5)/3, F (1+0+2/3)/3
    assert out["cjk"]["pages"] == 3
    assert out["cjk"]["precision"] == approx(2 / 3)
    assert out["cjk"]["recall"] == approx(0.5)
    assert out["cjk"]["f1"] == approx(5 / 9)
    # other = e1, x1: P (1+0)/2, R (.5+0)/2, F (2/3+0)/2
    assert out["other"]["pages"] == 2
    assert out["other"]["precision"] == approx(0.5)
    assert out["other"]["recall"] == approx(0.25)
    assert out["other"]["f1"] == approx(1 / 3)


def test_extraction_scores_without_langs_and_empty():
    out = extraction_scores({"a": "x y"}, {"a": "x y"})
    assert set(out) == {"all", "other"} and out["all"]["f1"] == 1.0
    assert extraction_scores({}, {})["all"]["f1"] is None


# --------------------------------------------------------------------------- loading and evaluate()


@pytest.fixture
def truth_dir(tmp_path):
    root = tmp_path / "set"
    _write_jsonl(
        root / "pages.jsonl",
        [
            {"id": "p1", "url": None, "site": "a.example", "lang": "en", "html": "html/p1.html.gz", "title": None},
            {"id": "p2", "url": None, "site": "b.example", "lang": "en", "html": "html/p2.html.gz", "title": None},
            {"id": "p3", "url": None, "site": "c.example", "lang": "zh", "html": "html/p3.html.gz", "title": None},
            {"id": "p4", "url": None, "site": "b.example", "lang": None, "html": "html/p4.html.gz", "title": None},
            {"id": "p5", "url": None, "site": "b.example", "lang": "en", "html": "html/p5.html.gz", "title": None},
        ],
    )
    _write_jsonl(
        root / "truth" / "clusters.jsonl",
        [{"id": "p1", "cluster": "A"}, {"id": "p2", "cluster": "A"}, {"id": "p3", "cluster": "A"}]
        + [{"id": "p4", "cluster": "B"}, {"id": "p5", "cluster": "C"}],
    )
    _write_jsonl(
        root / "truth" / "pairs.jsonl",
        [
            {"a": "p1", "b": "p2", "label": "duplicate", "kind": "transplant-full"},
            {"a": "p1", "b": "p3", "label": "duplicate", "kind": "transplant-truncated"},
            {"a": "p2", "b": "p3", "label": "duplicate", "kind": "transplant-sibling", "note": "full+truncated"},
            {"a": "p1", "b": "p4", "label": "different", "kind": "same-template-different-story"},
            {"a": "p4", "b": "p5", "label": "different", "kind": "same-site-different-story"},
        ],
    )
    _write_jsonl(
        root / "truth" / "extraction.jsonl",
        [
            {"id": "p1", "text": "one two\n\nthree four"},
            {"id": "p2", "text": "one two three four"},
            {"id": "p3", "text": "北京大学"},
            {"id": "p4", "text": "alpha beta"},
        ],
    )
    return root


@pytest.fixture
def pred_file(tmp_path):
    path = tmp_path / "pred.jsonl"
    # p3 rejected (null), p5 missing, p9 not in truth
    _write_jsonl(
        path,
        [{"id": "p1", "cluster": "x"}, {"id": "p2", "cluster": "x"}, {"id": "p3", "cluster": None}]
        + [{"id": "p4", "cluster": "x"}, {"id": "p9", "cluster": "x"}],
    )
    return path


@pytest.fixture
def extract_file(tmp_path):
    path = tmp_path / "extract.jsonl"
    _write_jsonl(
        path,
        [
            {"id": "p1", "title": "T", "text": "one two three four", "lang": "en"},
            {"id": "p2", "title": None, "text": "one two", "lang": "en"},
            {"id": "p3", "error": "boom"},
        ],  # p4 missing
    )
    return path


def test_loaders(truth_dir, pred_file, extract_file):
    truth = load_truth(truth_dir)
    assert truth["clusters"]["p3"] == "A" and len(truth["clusters"]) == 5
    assert len(truth["pairs"]) == 5
    assert truth["extraction"]["p3"] == "北京大学"
    assert truth["langs"] == {"p1": "en", "p2": "en", "p3": "zh", "p4": None, "p5": "en"}
    assert load_predictions(pred_file) == {"p1": "x", "p2": "x", "p3": None, "p4": "x", "p9": "x"}
    assert load_extractions(extract_file) == {"p1": "one two three four", "p2": "one two", "p3": None}


def test_load_truth_accepts_the_truth_subfolder_and_flat_layout(truth_dir, tmp_path):
    sub = load_truth(truth_dir / "truth")  # pages.jsonl one level up
    assert sub["langs"]["p3"] == "zh" and len(sub["clusters"]) == 5
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "clusters.jsonl").write_text((truth_dir / "truth" / "clusters.jsonl").read_text())
    loaded = load_truth(flat)
    assert len(loaded["clusters"]) == 5 and loaded["pairs"] == [] and loaded["langs"] == {}
    with pytest.raises(FileNotFoundError):
        load_truth(tmp_path / "nowhere")


def test_evaluate_tiny_set(truth_dir, pred_file, extract_file):
    report = evaluate(truth_dir, pred_file, extract_file)
    c = report["counts"]
    assert (c["pages"], c["truth_clusters"], c["truth_multi_page_clusters"]) == (5, 3, 1)
    assert (c["labelled_pairs"], c["gold_texts"]) == (5, 4)
    assert (c["predicted_pages"], c["missing_from_prediction"], c["extra_in_prediction"]) == (4, 1, 1)
    assert c["null_cluster"] == 1
    # predicted partition over truth ids: x={p1,p2,p4}, {p3}, {p5}
    assert (c["predicted_clusters"], c["predicted_multi_page_clusters"]) == (3, 1)
    assert c["extracted_pages"] == 2

    # pairwise: true pairs C(3,2)=3, predicted C(3,2)=3, tp=1 (p1,p2) -> P=R=F=1/3
    pw = report["pairwise"]
    assert (pw["tp"], pw["fp"], pw["fn"]) == (1, 2, 2)
    assert pw["f1"] == approx(1 / 3)
    # B-cubed precision: p1 2/3, p2 2/3, p3 1, p4 1/3, p5 1 -> 11/15
    # B-cubed recall:    p1 2/3, p2 2/3, p3 1/3, p4 1, p5 1 -> 11/15
    assert report["bcubed"]["precision"] == approx(11 / 15)
    assert report["bcubed"]["recall"] == approx(11 / 15)
    # ARI: index 1, sum_t 3, sum_p 3, N 10, expected 0.9, max 3 -> 0.1/2.1 = 1/21
    assert report["ari"] == approx(1 / 21)

    kinds = report["kinds"]
    assert kinds["duplicate"]["transplant-full"]["recall"] == 1.0
    assert kinds["duplicate"]["transplant-truncated"]["recall"] == 0.0
    assert kinds["duplicate"]["transplant-sibling"]["recall"] == 0.0
    assert kinds["different"]["same-template-different-story"]["merge_rate"] == 1.0
    assert kinds["different"]["same-site-different-story"]["merge_rate"] == 0.0
    assert kinds["totals"]["duplicate"]["recall"] == approx(1 / 3)

    # extraction: p1 (1,1,1), p2 (1,.5,2/3), p3 error 0, p4 missing 0
    ext = report["extraction"]
    assert (ext["all"]["pages"], ext["all"]["failed"]) == (4, 2)
    assert ext["all"]["precision"] == approx(0.5)
    assert ext["all"]["recall"] == approx(0.375)
    assert ext["all"]["f1"] == approx(5 / 12)
    assert ext["zh"]["f1"] == 0.0 and ext["cjk"]["pages"] == 1
    assert ext["other"]["f1"] == approx(5 / 9)
    assert "ja" not in ext

    text = format_report(report)
    assert "pairwise" in text and "b-cubed" in text
    assert "0.3333" in text  # pairwise precision/recall/F1
    assert "0.7333" in text  # B-cubed
    assert "adjusted Rand index: 0.0476" in text
    assert "duplicate:transplant-full" in text
    assert "0.4167" in text  # extraction F1 (all)


def test_evaluate_only_truth_or_only_extraction(truth_dir, extract_file):
    report = evaluate(truth_dir)
    assert "pairwise" not in report and "extraction" not in report
    assert report["counts"]["pages"] == 5
    assert "pages" in format_report(report)
    report = evaluate(truth_dir, extraction=extract_file)
    assert "pairwise" not in report and report["extraction"]["all"]["pages"] == 4


def test_perfect_prediction_file(truth_dir, tmp_path):
    path = tmp_path / "perfect.jsonl"
    _write_jsonl(path, [{"id": i, "cluster": c} for i, c in load_truth(truth_dir)["clusters"].items()])
    report = evaluate(truth_dir, path)
    assert report["pairwise"]["f1"] == 1.0 and report["bcubed"]["f1"] == 1.0 and report["ari"] == 1.0
    assert report["kinds"]["totals"]["duplicate"]["recall"] == 1.0
    assert report["kinds"]["totals"]["different"]["merge_rate"] == 0.0


def test_bad_json_line_names_the_file(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "cluster": "x"}\nnot json\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        load_predictions(path)
