"""Tokens, shingles, MinHash signatures and band keys (pure, no servers)."""

from __future__ import annotations

import time

import numpy as np
from datasketch import MinHash, MinHashLSH

from newsfold.plugin.settings import HASH_SCHEME, Settings
from newsfold.plugin.sign.shingles import shingles
from newsfold.plugin.sign.signature import Signature, band_keys, containment, jaccard, minhash, signed_features
from newsfold.plugin.text import is_cjk_text, tokenize
from tests.pages import story

S = Settings()


def test_tokenize_splits_cjk_into_characters_and_latin_into_words():
    assert tokenize("Hello, World! 你好世界") == ["hello", "world", "你", "好", "世", "界"]
    assert tokenize("ＡＢＣ１２３") == ["abc123"]  # NFKC folds full-width forms
    assert is_cjk_text(tokenize("今日は良い天気です"))
    assert not is_cjk_text(tokenize("a plain english sentence 中"))


def test_shingles_of_short_and_long_texts():
    assert shingles(["a", "b", "c"], 2) == {b"a b", b"b c"}
    assert shingles(["a"], 2) == {b"a"}
    assert shingles([], 2) == set()


def test_stopword_shingles_anchor_on_function_words():
    from newsfold.plugin.sign.shingles import stopword_shingles

    tokens = tokenize("the council said that the bridge over the river will open in the spring " * 2)
    got = stopword_shingles(tokens, 2)
    assert b"the council said" in got and b"that the bridge" in got
    assert all(s.split()[0].decode() in {"the", "that", "over", "will", "in", "said"} for s in got)
    assert stopword_shingles(tokenize("zorg blip quax " * 10), 2) == shingles(tokenize("zorg blip quax " * 10), 2)


def test_cjk_signing_keeps_sentences_ending_with_full_stops():
    from newsfold.plugin.sign.signature import signing_text

    prose = "北京市政府今天发布了新的城市规划方案。方案提出将在五年内建设更多公园和绿地。市民对此表示欢迎并提出了建议。"
    text = "首页 新闻 体育 财经\n" + prose + "\n相关链接 热门推荐"
    signed = signing_text(text, S)
    assert "方案提出将在五年内建设更多公园和绿地" in signed
    assert "首页" not in signed and "热门推荐" not in signed
    assert signing_text(text, S.replace(cjk_method="ngram")) == text


def test_a_long_cjk_line_without_a_stop_is_read_once():
    # one pass per line: a 200,000-character line took minutes when each position rescanned the line
    from newsfold.plugin.text import cjk_sentences

    started = time.process_time()
    assert cjk_sentences("港" * 200_000) == []
    assert cjk_sentences("a" * 200_000 + "。") == []  # four CJK characters at least
    found = cjk_sentences("新闻 | 今天港口开工。明天 | 继续施工！\n尾巴")
    assert found == ["新闻 | 今天港口开工。", "明天 | 继续施工！"]
    assert time.process_time() - started < 5.0


def test_signature_encode_round_trip():
    sig = signed_features("the council approved the budget for the new bridge", S)[0]
    back = Signature.decode(sig.encode(), shingle_count=sig.shingle_count)
    assert np.array_equal(back.hashvalues, sig.hashvalues)
    assert len(sig.encode()) == 4 * -(-4 * S.num_perm // 3)  # base64 of num_perm uint32 values


def test_band_keys_equal_datasketch_lsh_buckets():
    b, r = 16, 8
    m = MinHash(num_perm=128, seed=1, scheme=HASH_SCHEME)
    m.update_batch([b"a b", b"b c", b"c d"])
    lsh = MinHashLSH(num_perm=128, params=(b, r))
    lsh.insert("doc", m)
    ours = band_keys(minhash({b"a b", b"b c", b"c d"}, num_perm=128, seed=1), bands=b, rows=r)
    for i, key in enumerate(ours):
        band, hexpart = key.split(":")
        assert int(band) == i
        assert list(lsh.hashtables[i].keys()) == [bytes.fromhex(hexpart)]


def test_jaccard_estimate_tracks_exact_resemblance():
    words = " ".join(story(1))
    other = " ".join(story(2))
    a, b = signed_features(words, S)[0], signed_features(words + " " + other, S)[0]
    exact = len(shingles(tokenize(words), 2)) / len(shingles(tokenize(words + " " + other), 2))
    assert abs(jaccard(a, b) - exact) < 0.12
    assert containment(a, b) > 0.85  # all of a is in b


def _sig(shingle_set: set[bytes]) -> Signature:
    values = minhash(shingle_set, num_perm=S.num_perm, seed=S.seed)
    return Signature(values, len(shingle_set), len(shingle_set))


def test_containment_of_a_short_copy_is_estimated_from_every_signature_value():
    # a fifth to a third of a story, 70-100% of it from the story: truncated copies and teasers
    rng = np.random.default_rng(7)
    errors, jaccard_based = [], []
    for n in range(40):
        story_set = {f"s{n} {i}".encode() for i in range(int(rng.integers(600, 1500)))}
        size = int(len(story_set) * rng.uniform(0.2, 0.35))
        inside = int(size * rng.uniform(0.7, 1.0))
        short = set(sorted(story_set)[:inside]) | {f"x{n} {i}".encode() for i in range(size - inside)}
        exact = inside / size
        a, b = _sig(short), _sig(story_set)
        errors.append(abs(containment(a, b) - exact))
        jaccard_based.append(abs(containment(a, b, weighted=True) - exact))  # the estimate from J alone
    assert np.mean(errors) < 0.05
    assert np.mean(errors) < 0.6 * np.mean(jaccard_based)


def test_containment_estimate_is_exact_at_the_extremes():
    story_set = {f"w {i}".encode() for i in range(800)}
    other = {f"v {i}".encode() for i in range(200)}
    head = set(sorted(story_set)[:200])
    assert containment(_sig(head), _sig(story_set)) == 1.0
    assert containment(_sig(other), _sig(story_set)) == 0.0
    assert containment(_sig(head), _sig(head)) == 1.0


def test_the_shingle_schemes_settings_accept_are_the_registered_ones():
    from newsfold.plugin import settings as settings_module
    from newsfold.plugin.sign.shingles import SCHEMES

    assert set(settings_module.SHINGLE_SCHEMES) == set(SCHEMES), "register a scheme in SCHEMES and name it in settings"


def test_a_registered_shingle_scheme_is_what_signatures_are_made_of(monkeypatch):
    from newsfold.plugin import settings as settings_module
    from newsfold.plugin.sign import shingles as shingles_module

    calls = []

    def first_words(tokens: list[str], k: int) -> set[bytes]:
        calls.append(k)
        return {" ".join(tokens[:k]).encode()}

    monkeypatch.setitem(shingles_module.SCHEMES, "first_words", first_words)
    monkeypatch.setattr(settings_module, "SHINGLE_SCHEMES", (*settings_module.SHINGLE_SCHEMES, "first_words"))
    text = " ".join(story(7))
    mine = Settings(shingle_scheme="first_words", word_shingle=3)
    sig, _ = signed_features(text, mine)
    assert calls == [3] and sig.shingle_count == 1
    other, _ = signed_features(text.replace(".", ". Extra words here."), mine)
    assert jaccard(sig, other) == 1.0  # the same first three words: the same one-shingle set
