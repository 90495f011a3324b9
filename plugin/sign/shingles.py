"""Shingles: the sets whose resemblance decides whether two texts are copies."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from newsfold.plugin.errors import InputError

if TYPE_CHECKING:
    from newsfold.plugin.settings import Settings


def shingles(tokens: list[str], k: int) -> set[bytes]:
    """The set of k-token shingles, as UTF-8 bytes ready for hashing.

    A text shorter than ``k`` tokens yields one shingle of all its tokens, so
    a non-empty text never has an empty set.
    """
    if k < 1:
        raise InputError(f"shingle length must be >= 1, got {k}")
    if not tokens:
        return set()
    if len(tokens) <= k:
        return {" ".join(tokens).encode()}
    return {" ".join(gram).encode() for gram in _grams(tokens, k)}


def _grams(tokens: list[str], n: int) -> zip[tuple[str, ...]]:
    """Every run of ``n`` consecutive tokens, as a tuple (no list slice per position)."""
    return zip(*(tokens[j:] for j in range(n)), strict=False)


# Short function words (SpotSigs / MMDS): frequent in prose, rare in navigation and ads.
STOP_WORDS = frozenset(
    """a about after all also an and are as at be been but by can could did do for from had has have he her his
    how i if in into is it its may more most no not of on one or our out over said she so some than that the their
    them then there these they this to up was we were what when which while who will with would you your
    der die das und ist nicht ein eine zu den von mit sich des auf für im dem le la les et des un une du est pour
    que qui dans en au il el los las y es por con para del se lo o um uma os as do da no na em""".split()
)


def stopword_shingles(tokens: list[str], k: int = 2) -> set[bytes]:
    """Stop-word-anchored shingles: every stop word with the ``k`` words after it.

    Biases the set toward article prose (ads and navigation have few stop
    words), as in SpotSigs and the MMDS lecture. Falls back to plain word
    shingles for texts with too few stop words (other languages).
    """
    stop = STOP_WORDS
    out = {" ".join(gram).encode() for gram in _grams(tokens, k + 1) if gram[0] in stop}
    if len(out) < max(5, len(tokens) // 20):
        return shingles(tokens, k)
    return out


#: the shingle schemes of word-separated text, by the name ``NEWSFOLD_SHINGLES`` selects; each takes a text's
#: tokens and the shingle length (``NEWSFOLD_WORD_SHINGLE``). A new scheme is one function registered here, its name
#: added to ``plugin.settings.SHINGLE_SCHEMES`` (tests/plugin/sign/test_signature.py checks that the two agree).
SCHEMES: dict[str, Callable[[list[str], int], set[bytes]]] = {
    "words": shingles,
    "stopwords": stopword_shingles,
}


def shingle_set(tokens: list[str], settings: Settings, *, cjk: bool) -> set[bytes]:
    """The set a text's signature is computed from: CJK text by characters, other text by the configured scheme."""
    if cjk:
        return shingles(tokens, settings.cjk_shingle)
    return SCHEMES[settings.shingle_scheme](tokens, settings.word_shingle)


def feature_hashes(features: list[bytes] | set[bytes]) -> np.ndarray:
    """Stable 64-bit hashes of shingles or words (blake2b), as uint64."""
    return np.fromiter(
        (int.from_bytes(hashlib.blake2b(f, digest_size=8).digest(), "little") for f in features),
        dtype=np.uint64,
        count=len(features),
    )
