"""Pure cluster decisions: which candidates are copies, and which cluster wins."""

from __future__ import annotations

import pytest

from newsfold.plugin.fold.cluster import Match, decide, merge_survivor, verify
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import signed_features
from tests.pages import story

S = Settings()


def test_verify_accepts_truncated_copy_but_not_teaser():
    full = " ".join(story(3, sentences=30))
    half = full[: len(full) // 2]
    teaser = full[: len(full) // 12]
    a, h, t = signed_features(full, S)[0], signed_features(half, S)[0], signed_features(teaser, S)[0]
    assert verify(a, h, S)[0]
    assert not verify(a, t, S)[0]
    assert not verify(a, signed_features(" ".join(story(4, sentences=30)), S)[0], S)[0]


def test_decide_new_story_takes_smallest_page_id():
    d = decide(["p2", "p1", "p3"], [("p2", Match("p1", "p1", 0.9, 0.9)), ("p1", Match("p2", "p2", 0.9, 0.9))])
    assert d.cluster_of == {"p1": "p1", "p2": "p1", "p3": "p3"}
    assert d.merges == {}


def test_decide_page_linking_two_clusters_merges_into_smallest():
    d = decide(["x"], [("x", Match("a1", "c9", 0.5, 0.6)), ("x", Match("b1", "c2", 0.7, 0.8))])
    assert d.cluster_of == {"x": "c2"}
    assert d.merges == {"c9": "c2"}
    assert d.best["x"].page_id == "b1"


def test_decide_is_independent_of_edge_order():
    edges = [("x", Match("a", "c5", 0.5, 0.5)), ("y", Match("b", "c3", 0.5, 0.5)), ("x", Match("y", "y", 0.8, 0.8))]
    assert decide(["x", "y"], edges).cluster_of == decide(["y", "x"], list(reversed(edges))).cluster_of


def test_merge_survivor_keeps_the_smallest_name_whatever_the_order():
    assert merge_survivor(["c9", "c10", "c2", "c9"]) == ("c10", ["c2", "c9"])  # names compare as text
    assert merge_survivor(("b", "a")) == merge_survivor(("a", "b")) == ("a", ["b"])
    with pytest.raises(ValueError, match="names"):
        merge_survivor([])


def _copy_of(page: str, cluster: str) -> Match:
    return Match(page, cluster, 0.9, 0.9)


def test_decide_names_groups_as_merge_survivor_does():
    m = _copy_of
    decision = decide(["p2", "p1"], [("p2", m("x", "c7")), ("p2", m("y", "c3")), ("p1", m("p2", "p2"))])
    assert decision.cluster_of == {"p1": "c3", "p2": "c3"} and decision.merges == {"c7": "c3"}
    fresh = decide(["p2", "p1"], [("p2", m("p1", "p1"))])
    assert fresh.cluster_of == {"p1": "p1", "p2": "p1"} and fresh.founders == {"p1": "p1"}
