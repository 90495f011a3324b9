"""The numpy MinHash equals datasketch's, value for value: signatures already in an index were made by datasketch."""

from __future__ import annotations

import numpy as np
import pytest
from datasketch import MinHash

from newsfold.plugin.settings import HASH_SCHEME, Settings
from newsfold.plugin.sign.shingles import shingle_set
from newsfold.plugin.sign.signature import _permutations, minhash, signed_features
from newsfold.plugin.text import is_cjk_text, tokenize
from tests.pages import story

S = Settings()


def _datasketch(shingled: set[bytes] | list[bytes], num_perm: int, seed: int) -> np.ndarray:
    m = MinHash(num_perm=num_perm, seed=seed, scheme=HASH_SCHEME)
    m.update_batch(list(shingled))
    return np.asarray(m.hashvalues)


@pytest.mark.parametrize(("num_perm", "seed"), [(128, 1), (256, 42), (64, 0), (1, 7)])
def test_permutations_are_datasketchs(num_perm, seed):
    a, b = _permutations(num_perm, seed)
    theirs = MinHash(num_perm=num_perm, seed=seed, scheme=HASH_SCHEME).permutations
    assert a.dtype == b.dtype == theirs.dtype == np.uint32
    assert np.array_equal(a, theirs[0]) and np.array_equal(b, theirs[1])


EDGE_SETS = [
    set(),  # empty: every value 2^32 - 1
    {b"one"},  # one shingle
    {b""},  # the empty string is a shingle too
    {"caf\u00e9 \u65b0\u95fb \U0001f600".encode()},  # unicode, astral plane included
    {"\ufffd".encode(), b"\x00\xff"},  # replacement character and raw bytes
    {f"s {i}".encode() for i in range(5000)},  # more shingles than one numpy block
]


@pytest.mark.parametrize("shingled", EDGE_SETS, ids=["empty", "one", "empty-string", "unicode", "bytes", "5000"])
def test_edge_sets_hash_as_datasketch_hashes_them(shingled):
    ours = minhash(shingled, num_perm=S.num_perm, seed=S.seed)
    assert ours.dtype == np.uint32
    assert np.array_equal(ours, _datasketch(shingled, S.num_perm, S.seed))
    if not shingled:
        assert (ours == np.iinfo(np.uint32).max).all()


def _texts() -> list[str]:
    corpus = ["\n".join(story(n, sentences=4 + n % 20)) for n in range(60)]
    corpus += ["今日は良い天気です。港の工事が始まった。", "新闻：今天港口开工。明天继续施工！"]
    corpus += ["Ünïcödé ßtraße naïve café", "word", "a b"]
    return corpus


def test_many_texts_sign_to_datasketchs_values():
    texts = _texts()
    assert len(texts) >= 60
    for scheme in ("stopwords", "words"):
        settings = Settings(shingle_scheme=scheme)
        for text in texts:
            tokens = tokenize(text)
            shingled = shingle_set(tokens, settings, cjk=is_cjk_text(tokens))
            expected = _datasketch(shingled, settings.num_perm, settings.seed)
            assert np.array_equal(minhash(shingled, num_perm=settings.num_perm, seed=settings.seed), expected), text
            assert np.array_equal(signed_features(text, settings)[0].hashvalues, expected), text
