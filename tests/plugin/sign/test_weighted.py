"""The optional detection methods: weighted MinHash, story statistics, frequent-shingle filter,
URL/title evidence and An & Cheng's LCC verifier."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.cluster import NO_SIGNALS, SiteSignals, lcc_duplicate, verify
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.sign.shingles import feature_hashes
from newsfold.plugin.sign.signature import Signature, cjk_feature_string, jaccard, signed_features
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.plugin.sign.weighted import EMPTY, weighted_minhash
from newsfold.plugin.urls import normalize_title
from newsfold.state.story_stats import StoryStats
from tests.pages import page, story

RNG = np.random.default_rng(7)


def _true_weighted_jaccard(wa: np.ndarray, wb: np.ndarray) -> float:
    return float(np.minimum(wa, wb).sum() / np.maximum(wa, wb).sum())


def test_weighted_minhash_estimates_weighted_jaccard():
    hashes = RNG.integers(0, 2**63, size=600, dtype=np.uint64)
    wa = RNG.random(600) * 3
    wb = wa.copy()
    wb[:200] = RNG.random(200) * 3
    wb[500:] = 0
    a = weighted_minhash(hashes, wa, num_perm=512, seed=1)
    b = weighted_minhash(hashes, wb, num_perm=512, seed=1)
    estimate = float(np.mean(a == b))
    assert abs(estimate - _true_weighted_jaccard(wa, wb)) < 0.08


def test_weighted_minhash_is_consistent_and_seeded():
    hashes = RNG.integers(0, 2**63, size=50, dtype=np.uint64)
    weights = RNG.random(50)
    a = weighted_minhash(hashes, weights, num_perm=64, seed=1)
    assert np.array_equal(a, weighted_minhash(hashes[::-1], weights[::-1], num_perm=64, seed=1))
    assert np.mean(a == weighted_minhash(hashes, weights, num_perm=64, seed=2)) < 0.2


def test_weighted_minhash_ignores_zero_weights_and_marks_empty_sets():
    hashes = np.array([1, 2, 3], dtype=np.uint64)
    only_first = weighted_minhash(hashes, np.array([1.0, 0.0, 0.0]), num_perm=32, seed=1)
    assert np.array_equal(only_first, weighted_minhash(hashes[:1], np.array([1.0]), num_perm=32, seed=1))
    empty = weighted_minhash(hashes, np.zeros(3), num_perm=32, seed=1)
    assert np.all(empty == EMPTY)
    with pytest.raises(ValueError, match="shape"):
        weighted_minhash(hashes, np.ones(2), num_perm=8, seed=1)


def test_uniform_weights_estimate_plain_jaccard():
    hashes = RNG.integers(0, 2**63, size=400, dtype=np.uint64)
    wa = np.ones(400)
    wb = np.ones(400)
    wb[:200] = 0  # B is half of A: Jaccard 0.5
    a = weighted_minhash(hashes, wa, num_perm=512, seed=3)
    b = weighted_minhash(hashes, wb, num_perm=512, seed=3)
    assert abs(float(np.mean(a == b)) - 0.5) < 0.08


@pytest.fixture
def story_stats(redis_url):
    client = redis.Redis.from_url(redis_url)
    stats = StoryStats(client, f"test-{RNG.integers(1 << 30)}", width=1 << 12, depth=3)
    yield stats
    stats.clear()
    client.close()


def test_story_stats_count_each_feature_once_per_story(story_stats):
    common = feature_hashes([b"the council said", b"all rights reserved"])
    for n in range(5):
        story_stats.add(np.concatenate([common, common, feature_hashes([f"story {n}".encode()])]))
    counts, stories = story_stats.frequencies(np.concatenate([common, feature_hashes([b"story 1", b"never seen"])]))
    assert stories == 5
    assert counts.tolist()[:2] == [5, 5]
    # a count-min sketch never under-estimates; with a sparse sketch the rare ones are exact
    assert sorted(counts.tolist()[2:]) == [0, 1]


def test_story_stats_are_per_namespace(redis_url, story_stats):
    story_stats.add(feature_hashes([b"x y z"]))
    other = StoryStats(redis.Redis.from_url(redis_url), story_stats.count_key + "-other", width=1 << 12)
    assert other.stories() == 0
    assert story_stats.lookup(feature_hashes([b"x y z"]))[0] == {int(feature_hashes([b"x y z"])[0]): 1}


def _story(topic: str, boilerplate: str = "") -> str:
    words = [f"{topic}{i}" for i in range(60)]
    prose = " ".join(f"the {w} was said to be in {w}x" for w in words[:25])
    return prose + " " + boilerplate


BOILERPLATE = " ".join(f"the subscribe{i} is for the newsletter{i} and the offer{i}" for i in range(40))


def test_weighted_signature_zeroes_phrases_common_to_many_stories(story_stats, settings):
    weighted = settings.replace(signature_kind="weighted", stats_min_stories=5, rare_share=0.5)
    for n in range(8):  # boilerplate shared by eight different stories
        _, features = signed_features(_story(f"s{n}", BOILERPLATE), weighted, stats=story_stats)
        story_stats.add(features)
    a = _story("alpha", BOILERPLATE)
    b = _story("beta", BOILERPLATE)
    plain = settings.replace(shingle_scheme="words")
    # the boilerplate dominates plain shingles
    assert jaccard(signed_features(a, plain)[0], signed_features(b, plain)[0]) > 0.4
    wa, wb = signed_features(a, weighted, stats=story_stats)[0], signed_features(b, weighted, stats=story_stats)[0]
    assert jaccard(wa, wb) < 0.1
    assert jaccard(wa, signed_features(a, weighted, stats=story_stats)[0]) == 1.0


def test_frequent_shingle_filter_drops_collection_boilerplate(story_stats, settings):
    cedar = settings.replace(shingle_scheme="words", shingle_filter="frequent", stats_min_stories=5, frequent_share=0.5)
    for n in range(8):
        _, features = signed_features(_story(f"s{n}", BOILERPLATE), cedar, stats=story_stats)
        story_stats.add(features)
    a, b = _story("alpha", BOILERPLATE), _story("beta", BOILERPLATE)
    unfiltered = jaccard(signed_features(a, cedar)[0], signed_features(b, cedar)[0])  # no stats: nothing dropped
    filtered = jaccard(signed_features(a, cedar, stats=story_stats)[0], signed_features(b, cedar, stats=story_stats)[0])
    assert unfiltered > 0.4
    assert filtered < 0.1


def test_ingest_counts_only_pages_that_start_a_story(es, settings, story_stats):
    weighted = settings.replace(signature_kind="weighted", index=f"{settings.index}-weighted")
    ensure_index(es, weighted)  # an index records its signature kind: weighted pages need an index of their own
    try:
        html = page("Bridge opens", story(11))
        pages = [sign_page(Page(html=html, url=f"https://site{n}.example/a"), weighted) for n in range(3)]
        outcomes = ingest(pages, client=es, settings=weighted, stats=story_stats)
        assert sorted(o.status for o in outcomes) == ["duplicate", "duplicate", "new"]
        assert story_stats.stories() == 1
    finally:
        drop_index(es, weighted)


def test_normalize_title_strips_site_names_and_punctuation():
    assert normalize_title("Council passes the budget | The Daily Planet", "dailyplanet.com") == (
        "council passes the budget"
    )
    assert normalize_title("Daily Planet - Council Passes the Budget!", "dailyplanet.com") == (
        "council passes the budget"
    )
    assert normalize_title("Weather", "x.com") is None
    assert normalize_title("国务院常务会议部署稳就业工作_新华网", "xinhuanet.com") == "国务院常务会议部署稳就业工作"


def _sig(values: list[int], count: int = 100, cjk: str = "") -> Signature:
    return Signature(np.array(values, dtype=np.uint32), count, count, cjk)


def test_title_evidence_counts_only_within_a_site(settings):
    a = _sig(list(range(100)))
    b = _sig(list(range(25)) + [1000 + i for i in range(75)])  # Jaccard 0.25: below 0.35, above half of it
    assert not verify(a, b, settings)[0]
    assert verify(a, b, settings, SiteSignals(same_site=True, same_title=True))[0]
    assert verify(a, b, settings, SiteSignals(same_site=True, same_url=True))[0]
    assert not verify(a, b, settings, SiteSignals(same_site=False, same_title=True))[0]
    assert not verify(a, b, settings.replace(title_evidence=False), SiteSignals(same_site=True, same_title=True))[0]


def test_lcc_rule_follows_an_and_cheng():
    story = "国报道称会议决定加强合作推动发展提高水平"
    assert lcc_duplicate(story, story)
    assert lcc_duplicate(story[:13], story)  # a copy cut to 65 % still matches
    assert not lcc_duplicate(story[:8], story)  # 40 %: not enough of the longer string
    assert not lcc_duplicate(story, "天地人和风雨雷电山水林田湖草沙江河湖海")
    near = story[:12] + "X" + story[13:]
    assert lcc_duplicate(near, story, same_host=True)
    assert not lcc_duplicate(story[:13], story, same_host=True)  # same host: alpha raised to 0.8


def test_lcc_verifier_decides_cjk_pairs(settings):
    lcc = settings.replace(cjk_verifier="lcc")
    story = "国报道称会议决定加强合作推动发展提高水平"
    a = _sig(list(range(100)), cjk=story)
    b = _sig([1000 + i for i in range(100)], cjk=story[:15])  # no MinHash overlap at all
    assert verify(a, b, lcc, NO_SIGNALS)[0]
    assert not verify(a, b, settings)[0]


def test_cjk_feature_string_takes_the_character_before_each_full_stop():
    assert cjk_feature_string("今天天气很好。我们去公园。OK. 数字1。") == "好园"
