"""Shingles: the sets whose resemblance decides whether two texts are copies."""

from __future__ import annotations

from plugin.text import is_cjk_text


def shingle_size(tokens: list[str], *, word_shingle: int, cjk_shingle: int) -> int:
    """Shingle length for a token list: characters for CJK text, words otherwise."""
    return cjk_shingle if is_cjk_text(tokens) else word_shingle


def shingles(tokens: list[str], k: int) -> set[bytes]:
    """The set of k-token shingles, as UTF-8 bytes ready for hashing.

    A text shorter than ``k`` tokens yields one shingle of all its tokens, so
    a non-empty text never has an empty set.
    """
    if k < 1:
        raise ValueError(f"shingle length must be >= 1, got {k}")
    if not tokens:
        return set()
    if len(tokens) <= k:
        return {" ".join(tokens).encode()}
    return {" ".join(tokens[i : i + k]).encode() for i in range(len(tokens) - k + 1)}
