"""Passage keys: a text cut into sentences and into passages chosen by its words, and their stored form.

The first half of the novelty rule (``plugin.sign.novelty`` compares the keys):

1. A text is normalised as the signatures normalise it (``plugin.text.tokenize``:
   NFKC, case folded, words and single CJK characters; punctuation, spacing
   and line breaks dropped) into one stream of tokens.
2. The stream is cut into passages at every sentence stop (``.``, ``!``,
   ``?``, ``…``, ``。！？``) and, inside sentences, at points chosen by the
   words themselves (after a token whose hash, mixed with those of the
   :data:`CHUNK_WINDOW` - 1 tokens before it, falls in one bucket of
   :data:`CHUNK_AVERAGE`, a power of two), so the same words
   are cut the same way whatever their case, spacing or paragraph breaks (a
   list whose lines a copy runs together is still recognised), and an
   insertion or a cut changes at most the passage it falls in. Two passages
   match when their tokens are equal.

At ingest each page stores its passage keys and the shape of its paragraphs
(:func:`passage_keys`, the fold field ``newsfold.passages``: about 11 bytes
per 8 tokens), cut from the text that is signed (``plugin.sign.signing`` splits
and tokenises it once, :func:`split_text`, for the line filter, the keys and
the signature).

Pure: no server is contacted.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from newsfold.plugin.text import tokenize

#: the layout of the stored keys; keys of another layout are not compared (the relation is unknown)
KEYS_VERSION = 2
#: tokens whose hash decides a cut
CHUNK_WINDOW = 3
#: average passage length in tokens
CHUNK_AVERAGE = 8
#: tokens keyed per page at most (a longer text is compared on its beginning)
MAX_TOKENS = 20_000
#: hex digits of a passage hash (32 bits: a collision inside one story is vanishingly rare)
HASH_CHARS = 8
#: odd 64-bit multipliers that mix a window's token hashes (one per position in the window)
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9], dtype=np.uint64)[:CHUNK_WINDOW]
#: a window cuts when the top log2(CHUNK_AVERAGE) bits of its mix are zero
_TOP_SHIFT = np.uint64(64 - CHUNK_AVERAGE.bit_length() + 1)
_TOKEN_HASHES: dict[str, int] = {}
#: the polynomial base of passage hashes (odd), and its inverse modulo 2**64
_BASE = np.uint64(0x100000001B3)
_BASE_INVERSE = np.uint64(pow(int(_BASE), -1, 2**64))
_POWERS: dict[int, np.ndarray] = {}
_ZERO = np.zeros(1, dtype=np.uint64)
_TOKEN_CACHE_SIZE = 50_000

# a sentence ends with a stop and its closing quotes or brackets, before white space (or at a CJK stop)
_SENTENCE_END = re.compile(r"([.!?…][\"'”’»)\]]*(?=\s)|[。！？])")
_STOPPED = re.compile(r"[.!?…。！？][\"'”’»)\]]*$")


def paragraphs(text: str) -> list[str]:
    """The non-blank lines of an article text, stripped."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def sentences(paragraph: str) -> list[str]:
    """The sentences of one paragraph, stripped, each with its stop and closing quotes.

    A paragraph without a stop is one sentence.
    """
    parts = _SENTENCE_END.split(paragraph)  # text, stop, text, stop, ..., text
    parts.append("")
    return [s for s in map(str.strip, map(str.__add__, parts[::2], parts[1::2])) if s]


@dataclass(frozen=True)
class Layout:
    """A text as the rule sees it: sentence token counts per paragraph, and its passages.

    Attributes:
        shape: per paragraph, the token count of each of its sentences (sentences without tokens left out).
        chunks: per passage, ``(hash, tokens)`` in text order; they cover the same tokens as ``shape``.
    """

    shape: tuple[tuple[int, ...], ...]
    chunks: tuple[tuple[str, int], ...]

    @classmethod
    def of_text(cls, text: str, *, max_tokens: int = MAX_TOKENS) -> Layout:
        """Cut a text into sentences and passages (only its first ``max_tokens`` tokens)."""
        return text_layout(text, max_tokens=max_tokens)[0]

    @classmethod
    def of_stored(cls, stored: Mapping[str, Any] | None) -> Layout | None:
        """The layout read back from ``newsfold.passages``; None when missing, of another version or malformed."""
        if not isinstance(stored, Mapping) or stored.get("v") != KEYS_VERSION:
            return None
        try:
            chunks = []
            for key in str(stored.get("chunks") or "").split():
                digest, _, count = key.partition(":")
                chunks.append((digest, int(count)))
            shape = tuple(tuple(int(n) for n in str(p).split()) for p in stored.get("sentences") or ())
        except (TypeError, ValueError):
            return None
        if not chunks or sum(map(sum, shape)) != sum(n for _, n in chunks):
            return None
        return cls(tuple(p for p in shape if p), tuple(chunks))

    def stored(self) -> dict[str, Any]:
        """The value of the fold field ``newsfold.passages``."""
        return {
            "v": KEYS_VERSION,
            "chunks": " ".join(f"{h}:{n}" for h, n in self.chunks),
            "sentences": [" ".join(map(str, p)) for p in self.shape],
        }


def _token_hashes(stream: list[str]) -> np.ndarray:
    """A 32-bit CRC of each token (cached: a text repeats its words, and so does a collection)."""
    cache = _TOKEN_HASHES
    if len(cache) > _TOKEN_CACHE_SIZE:
        cache.clear()
    out = list(map(cache.get, stream))
    if None in out:  # new words: hash them once
        for token in set(stream).difference(cache):
            cache[token] = zlib.crc32(token.encode("utf-8"))
        out = list(map(cache.__getitem__, stream))
    return np.array(out, dtype=np.uint64)


def _chunks(stream: list[str], stops: list[int]) -> list[tuple[str, int]]:
    """Content-defined passages of a token stream, cut after each stop: ``(hash, tokens)`` each.

    Inside a run between two stops, a passage ends after a token whose window
    (it and the :data:`CHUNK_WINDOW` - 1 tokens before it, all in the run)
    mixes to a hash whose top bits are zero, one window in
    :data:`CHUNK_AVERAGE`. A passage's hash is a polynomial over its tokens'
    hashes (the same tokens give the same hash wherever they stand), found
    for all passages at once from prefix sums.
    """
    n = len(stream)
    if not n:
        return []
    hashes = _token_hashes(stream)
    cut = np.zeros(n, dtype=bool)
    with np.errstate(over="ignore"):  # the arithmetic wraps around 2**64 on purpose
        if n >= CHUNK_WINDOW:
            mixed = sum(hashes[k : n - CHUNK_WINDOW + 1 + k] * _MIX[k] for k in range(CHUNK_WINDOW))
            cut[CHUNK_WINDOW - 1 :] = (mixed >> _TOP_SHIFT) == 0
            starts = np.array([0, *stops], dtype=np.int64)
            for k in range(CHUNK_WINDOW - 1):  # a window reaching back over a stop does not cut
                cut[starts[starts + k < n] + k] = False
        cut[np.array([*stops, n], dtype=np.int64) - 1] = True
        ends = np.flatnonzero(cut) + 1
        begins = np.concatenate(([0], ends[:-1]))
        # sum of h[j] * B**(end - 1 - j) over a passage = (S[end] - S[begin]) * B**(end - 1),
        # with S[i] the prefix sums of h[j] * B**-j (B odd, so it has an inverse modulo 2**64)
        scaled = np.concatenate((_ZERO, np.cumsum(hashes * _powers(_BASE_INVERSE, n), dtype=np.uint64)))
        values = (scaled[ends] - scaled[begins]) * _powers(_BASE, n)[ends - 1] * _MIX[0]
    keys = (values >> np.uint64(64 - 4 * HASH_CHARS)).tolist()
    return [(f"{key:0{HASH_CHARS}x}", size) for key, size in zip(keys, (ends - begins).tolist(), strict=True)]


def _powers(base: np.uint64, n: int) -> np.ndarray:
    """``base ** j`` modulo 2**64 for j in 0..n-1 (extended and cached as texts grow)."""
    table = _POWERS.get(int(base))
    if table is None or len(table) < n:
        size = max(n, 1024, 2 * len(table) if table is not None else 0)
        factors = np.full(size, base, dtype=np.uint64)
        factors[0] = 1
        with np.errstate(over="ignore"):
            table = np.cumprod(factors, dtype=np.uint64)  # base**0 .. base**(size - 1)
        _POWERS[int(base)] = table
    return table[:n]


#: a text cut for keying: per paragraph (non-blank line), per sentence, its tokens and whether a stop ends it
Sentences = list[list[tuple[list[str], bool]]]


def split_text(text: str) -> Sentences:
    """A text's paragraphs and sentences, tokenised (:func:`plugin.text.tokenize`), for :func:`layout_of`."""
    return [[(tokenize(s), _STOPPED.search(s) is not None) for s in sentences(p)] for p in paragraphs(text)]


def layout_of(split: Sentences, *, max_tokens: int = MAX_TOKENS) -> tuple[Layout, list[str] | None]:
    """The :class:`Layout` of a split text, and its tokens.

    The tokens are those of the sentences in order, which are the tokens of
    the whole text (no token spans a sentence or paragraph break), so signing
    reuses them instead of tokenising the text again. None when the text has
    more than ``max_tokens`` tokens (only its beginning is keyed).
    """
    shape: list[tuple[int, ...]] = []
    stream: list[str] = []
    stops: list[int] = []  # stream positions where a sentence stop ends a passage
    complete = True
    for paragraph in split:
        counts = []
        for tokens, stopped in paragraph:
            if len(stream) + len(tokens) > max_tokens:
                tokens, complete = tokens[: max_tokens - len(stream)], False
            if tokens:
                counts.append(len(tokens))
                stream.extend(tokens)
            # a stop ends a passage, even one standing alone ("..."); a bare line break does not
            if stopped and stream and (not stops or stops[-1] != len(stream)):
                stops.append(len(stream))
        if counts:
            shape.append(tuple(counts))
        if not complete:
            break
    return Layout(tuple(shape), tuple(_chunks(stream, stops))), stream if complete else None


def text_layout(text: str, *, max_tokens: int = MAX_TOKENS) -> tuple[Layout, list[str] | None]:
    """A text's :class:`Layout`, and its tokens (see :func:`layout_of`)."""
    return layout_of(split_text(text), max_tokens=max_tokens)


def kept_paragraphs(split: Sentences, text: str, kept: str) -> Sentences:
    """The paragraphs of ``split`` (the split of ``text``) that remain in ``kept``, ``text`` without some lines."""
    remaining = iter(paragraphs(kept))
    wanted = next(remaining, None)
    out = []
    for paragraph, parts in zip(paragraphs(text), split, strict=True):
        if paragraph == wanted:
            out.append(parts)
            wanted = next(remaining, None)
    return out


def passage_keys(text: str) -> dict[str, Any] | None:
    """What ingest stores for a text in ``newsfold.passages`` (None for a text without words).

    Returns:
        ``{"v": 2, "chunks": "<hash>:<tokens> ...", "sentences": ["<tokens> <tokens> ...", ...]}``:
        the passages in text order, and per paragraph the token counts of its sentences.
    """
    return stored_keys(text_layout(text)[0])


def stored_keys(layout: Layout) -> dict[str, Any] | None:
    """The value of ``newsfold.passages`` for a layout (None when it has no passage)."""
    return layout.stored() if layout.chunks else None
