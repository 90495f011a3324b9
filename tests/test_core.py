"""Unit tests of the pure core (no servers)."""

from __future__ import annotations

import numpy as np
import pytest
from datasketch import MinHashLSH

from newsfold.plugin import queries
from newsfold.plugin.client import plain_media_type
from newsfold.plugin.cluster import Match, decide, verify
from newsfold.plugin.settings import Settings, settings_env
from newsfold.plugin.shingles import shingles
from newsfold.plugin.signature import Signature, band_keys, containment, jaccard, minhash, signature_of
from newsfold.plugin.text import is_cjk_text, tokenize
from newsfold.plugin.urls import normalize_url, site_of
from tests.pages import story

S = Settings()


# ------------------------------------------------------------------ settings
def test_settings_reject_bands_times_rows_over_num_perm():
    with pytest.raises(ValueError, match="70 x 4 = 280 > 256"):
        Settings(bands=70, rows=4)


def test_settings_reject_threshold_out_of_range():
    with pytest.raises(ValueError, match="threshold must be in"):
        Settings(threshold=1.5)


def test_settings_from_env_parses_and_names_bad_variable():
    s = Settings.from_env({"NEWSFOLD_BANDS": "32", "NEWSFOLD_ROWS": "4", "ELASTICSEARCH_URL": "http://es:9200"})
    assert (s.bands, s.rows, s.elasticsearch_url) == (32, 4, "http://es:9200")
    with pytest.raises(ValueError, match="NEWSFOLD_BANDS='many'"):
        Settings.from_env({"NEWSFOLD_BANDS": "many"})


def test_settings_env_round_trip():
    s = Settings(bands=20, rows=5, elasticsearch_verify_certs=False, redis_url="redis://x:1/0")
    assert Settings.from_env(settings_env(s)) == s


# ------------------------------------------------------------------ text and shingles
def test_tokenize_splits_cjk_into_characters_and_latin_into_words():
    assert tokenize("Hello, World! 你好世界") == ["hello", "world", "你", "好", "世", "界"]
    assert tokenize("ＡＢＣ１２３") == ["abc123"]  # NFKC folds full-width forms
    assert is_cjk_text(tokenize("今日は良い天気です"))
    assert not is_cjk_text(tokenize("a plain english sentence 中"))


def test_shingles_of_short_and_long_texts():
    assert shingles(["a", "b", "c"], 2) == {b"a b", b"b c"}
    assert shingles(["a"], 2) == {b"a"}
    assert shingles([], 2) == set()


# ------------------------------------------------------------------ signatures and band keys
def test_signature_encode_round_trip():
    sig = signature_of("the council approved the budget for the new bridge", S)
    back = Signature.decode(sig.encode(), shingle_count=sig.shingle_count)
    assert np.array_equal(back.hashvalues, sig.hashvalues)
    assert len(sig.encode()) == 4 * -(-4 * S.num_perm // 3)  # base64 of num_perm uint32 values


def test_band_keys_equal_datasketch_lsh_buckets():
    b, r = 16, 8
    m = minhash({b"a b", b"b c", b"c d"}, num_perm=128, seed=1)
    lsh = MinHashLSH(num_perm=128, params=(b, r))
    lsh.insert("doc", m)
    ours = band_keys(np.asarray(m.hashvalues), bands=b, rows=r)
    for i, key in enumerate(ours):
        band, hexpart = key.split(":")
        assert int(band) == i
        assert list(lsh.hashtables[i].keys()) == [bytes.fromhex(hexpart)]


def test_jaccard_estimate_tracks_exact_resemblance():
    words = " ".join(story(1))
    other = " ".join(story(2))
    a, b = signature_of(words, S), signature_of(words + " " + other, S)
    exact = len(shingles(tokenize(words), 2)) / len(shingles(tokenize(words + " " + other), 2))
    assert abs(jaccard(a, b) - exact) < 0.12
    assert containment(a, b) > 0.85  # all of a is in b


def test_verify_accepts_truncated_copy_but_not_teaser():
    full = " ".join(story(3, sentences=30))
    half = full[: len(full) // 2]
    teaser = full[: len(full) // 12]
    a, h, t = signature_of(full, S), signature_of(half, S), signature_of(teaser, S)
    assert verify(a, h, S)[0]
    assert not verify(a, t, S)[0]
    assert not verify(a, signature_of(" ".join(story(4, sentences=30)), S), S)[0]


# ------------------------------------------------------------------ cluster decision
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


# ------------------------------------------------------------------ queries
def test_band_lookup_counts_matching_bands():
    body = queries.band_lookup(["0:aa", "1:bb"], size=5, exclude_ids=["me"])
    assert body["query"]["bool"]["minimum_should_match"] == 1
    term = {"term": {"newsfold.band_keys": "1:bb"}}
    assert body["query"]["bool"]["should"][1] == {"constant_score": {"filter": term}}
    assert body["query"]["bool"]["must_not"] == [{"ids": {"values": ["me"]}}]
    assert body["size"] == 5


def test_band_lookup_can_leave_out_one_cluster():
    body = queries.band_lookup(["0:aa"], exclude_ids=["me"], exclude_cluster="c7")
    assert body["query"]["bool"]["must_not"] == [{"ids": {"values": ["me"]}}, {"term": {"newsfold.cluster_id": "c7"}}]
    assert "must_not" not in queries.band_lookup(["0:aa"])["query"]["bool"]


def test_collapsed_search_collapses_and_counts_stories():
    body = queries.collapsed_search("flood", page=3, size=10, site="a.example")
    assert body["collapse"] == {"field": "newsfold.cluster_id"}
    assert body["from"] == 20
    assert body["aggs"]["newsfold_stories"]["cardinality"]["field"] == "newsfold.cluster_id"
    assert {"term": {"site": "a.example"}} in body["query"]["bool"]["filter"]
    assert "highlight" in body


def test_collapsed_search_rejects_long_query_and_deep_pages():
    with pytest.raises(ValueError, match="limit is 500"):
        queries.collapsed_search("x" * 501)
    with pytest.raises(ValueError, match="out of range"):
        queries.collapsed_search("x", page=2000, size=10)


# ------------------------------------------------------------------ urls
def test_normalize_url_drops_tracking_and_variants():
    a = normalize_url("https://www.example.com/news/story-1/?utm_source=x&id=3#top")
    b = normalize_url("http://m.example.com/news/story-1?id=3&fbclid=abc")
    c = normalize_url("https://example.com/news/story-1/amp/?id=3")
    assert a == b == c == "example.com/news/story-1?id=3"
    assert normalize_url("https://example.com/section/index.html") == "example.com/section"
    assert site_of("https://WWW.Example.COM/x") == "example.com"
    assert normalize_url(None) is None


# ------------------------------------------------------------------ client
def test_plain_media_type():
    assert plain_media_type("application/vnd.elasticsearch+json; compatible-with=9") == "application/json"
    assert plain_media_type("application/vnd.elasticsearch+x-ndjson; compatible-with=8") == "application/x-ndjson"
    assert plain_media_type("text/plain") == "text/plain"


def test_every_setting_is_documented_in_the_readme():
    from pathlib import Path

    from newsfold.plugin.settings import ENV_NAMES
    from newsfold.web.config import ENV_NAMES as WEB_ENV_NAMES

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    names = [*ENV_NAMES.values(), *WEB_ENV_NAMES.values()]
    missing = [name for name in names if f"`{name}`" not in readme]
    assert not missing, f"settings missing from the README configuration table: {missing}"


def test_stopword_shingles_anchor_on_function_words():
    from newsfold.plugin.shingles import stopword_shingles

    tokens = tokenize("the council said that the bridge over the river will open in the spring " * 2)
    got = stopword_shingles(tokens, 2)
    assert b"the council said" in got and b"that the bridge" in got
    assert all(s.split()[0].decode() in {"the", "that", "over", "will", "in", "said"} for s in got)
    assert stopword_shingles(tokenize("zorg blip quax " * 10), 2) == shingles(tokenize("zorg blip quax " * 10), 2)


def test_cjk_signing_keeps_sentences_ending_with_full_stops():
    from newsfold.plugin.signature import signing_text

    prose = "北京市政府今天发布了新的城市规划方案。方案提出将在五年内建设更多公园和绿地。市民对此表示欢迎并提出了建议。"
    text = "首页 新闻 体育 财经\n" + prose + "\n相关链接 热门推荐"
    signed = signing_text(text, S)
    assert "方案提出将在五年内建设更多公园和绿地" in signed
    assert "首页" not in signed and "热门推荐" not in signed
    assert signing_text(text, S.replace(cjk_method="ngram")) == text


def test_ensure_index_adds_fields_of_a_newer_mapping(es, settings):
    from newsfold.plugin.index import ensure_index as ensure
    from newsfold.plugin.index import index_body

    name = ensure(es, settings)
    # an index made by an older mapping: the newest field is missing
    def fold_props():
        return es.indices.get_mapping(index=name)[name]["mappings"]["properties"]["newsfold"]["properties"]

    assert "representative" in fold_props()
    es.indices.delete(index=name)
    body = index_body(settings)
    del body["mappings"]["properties"]["newsfold"]["properties"]["representative"]
    es.indices.create(index=name, settings=body["settings"], mappings=body["mappings"], aliases={settings.index: {}})
    assert "representative" not in fold_props()
    assert ensure(es, settings) == name
    assert "representative" in fold_props()


def test_pages_in_flight_are_bounded_whatever_the_batch_size():
    from newsfold.workers import MAX_PAGES_IN_FLIGHT, in_flight_batches

    assert in_flight_batches(25) == 64 and in_flight_batches(100) == 16
    assert in_flight_batches(100) * 100 <= MAX_PAGES_IN_FLIGHT
    assert in_flight_batches(10_000) == 4 and in_flight_batches(0) >= 4  # never stalls the workers
