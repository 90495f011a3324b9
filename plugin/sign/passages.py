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
(:func:`passage_keys`, the fold field ``newsfold.passages``), cut from the text
that is signed (``plugin.sign.signing`` splits and tokenises it once,
:func:`split_text`, for the line filter, the keys and the signature). The
stored form (:data:`KEYS_VERSION` 3) is one base85 string (as ``base64.b85encode`` writes it,
RFC 1924's alphabet: no quote or backslash, so JSON keeps it as it is) of
bytes: the passage count ``N`` as a varint, the ``N`` passage hashes (32 bits
each, big-endian), then deflated (raw deflate) the ``N`` passage token counts
as varints and per paragraph the token counts of its sentences as varints, a
0 after each paragraph but the last. Random hashes do not compress: each
passage costs 5 characters for its hash and about 1 for its count and its
share of the shape (the JSON of layout 2, ``"<8 hex>:<tokens> ..."`` and one
string of counts per paragraph, about 13; it is still read).

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

#: the layout of the stored keys that ingest writes (3: packed bytes in base85; 2: hex and counts in text)
KEYS_VERSION = 3
#: layouts :meth:`Layout.of_stored` reads; keys of another layout are not compared (the relation is unknown)
READ_VERSIONS = (2, 3)
#: tokens whose hash decides a cut
CHUNK_WINDOW = 3
#: average passage length in tokens
CHUNK_AVERAGE = 8
#: tokens keyed per page at most (a longer text is compared on its beginning)
MAX_TOKENS = 20_000
#: bits of a passage hash (4 bytes stored). A false match between a version and its reference (a passage
#: of one taken for one of the other) has odds of (passages one lacks x passages the other has) / 2**32:
#: about 4e-6 per comparison on the dev set, 1.5e-3 for two 20,000-token texts that share nothing (2,500
#: passages each); 24 bits make it 256 times likelier (docs/measurements.md, 2026-11-28)
HASH_BITS = 32
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
        chunks: per passage, ``(hash, tokens)`` in text order (the hash an int of :data:`HASH_BITS` bits);
            they cover the same tokens as ``shape``.
    """

    shape: tuple[tuple[int, ...], ...]
    chunks: tuple[tuple[int, int], ...]

    @classmethod
    def of_text(cls, text: str, *, max_tokens: int = MAX_TOKENS) -> Layout:
        """Cut a text into sentences and passages (only its first ``max_tokens`` tokens)."""
        return text_layout(text, max_tokens=max_tokens)[0]

    @classmethod
    def of_stored(cls, stored: Mapping[str, Any] | None) -> Layout | None:
        """The layout read back from ``newsfold.passages`` (layout 2 or 3).

        None when it is missing, of another layout or malformed.
        """
        if not isinstance(stored, Mapping) or stored.get("v") not in READ_VERSIONS:
            return None
        try:
            chunks, shape = _unpacked(stored) if stored.get("v") == 3 else _from_text(stored)
        except (TypeError, ValueError):
            return None
        if not chunks or sum(map(sum, shape)) != sum(n for _, n in chunks):
            return None
        return cls(tuple(p for p in shape if p), tuple(chunks))

    def stored(self) -> dict[str, Any]:
        """The value of the fold field ``newsfold.passages`` (layout :data:`KEYS_VERSION`, see the module)."""
        hashes = np.array([h for h, _ in self.chunks], dtype=">u4").tobytes()
        counts = [len(self.chunks), *(n for _, n in self.chunks)]
        for i, paragraph in enumerate(self.shape):
            counts.extend((0, *paragraph) if i else paragraph)
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        raw = _varints(counts[:1]) + hashes + packer.compress(_varints(counts[1:])) + packer.flush()
        return {"v": KEYS_VERSION, "keys": b85encode(raw)}


Chunks = list[tuple[int, int]]
Shape = list[tuple[int, ...]]


def _from_text(stored: Mapping[str, Any]) -> tuple[Chunks, Shape]:
    """Layout 2: ``{"chunks": "<8 hex>:<tokens> ...", "sentences": ["<tokens> <tokens> ...", ...]}``."""
    chunks = []
    for key in str(stored.get("chunks") or "").split():
        digest, _, count = key.partition(":")
        chunks.append((int(digest, 16), int(count)))
    return chunks, [tuple(int(n) for n in str(p).split()) for p in stored.get("sentences") or ()]


def _unpacked(stored: Mapping[str, Any]) -> tuple[Chunks, Shape]:
    """Layout 3: ``{"keys": "<base85>"}`` (see the module)."""
    text = stored.get("keys")
    if not isinstance(text, str):
        raise ValueError("keys is not a string")
    raw = b85decode(text)
    width = HASH_BITS // 8  # the stored hashes are big-endian uint32
    (n,), start = _read_varints(raw, 0, 1)
    if len(raw) < start + width * n:
        raise ValueError("keys are cut short")
    hashes = np.frombuffer(raw, dtype=">u4", count=n, offset=start).tolist()
    unpacker = zlib.decompressobj(-15)
    try:  # counts of MAX_TOKENS passages and sentences fit in 6 * MAX_TOKENS bytes: more is not ours
        packed = unpacker.decompress(raw[start + width * n :], 6 * MAX_TOKENS + 64)
    except zlib.error as e:
        raise ValueError(f"counts do not inflate: {e}") from None
    if not unpacker.eof or unpacker.unconsumed_tail or unpacker.unused_data:
        raise ValueError("counts are cut short or too long")
    counts, _ = _read_varints(packed, 0, None)
    if len(counts) < n or 0 in counts[:n]:
        raise ValueError("passage counts are missing")
    shape: Shape = []
    paragraph: list[int] = []
    for count in counts[n:]:
        if count:
            paragraph.append(count)
        else:  # the end of a paragraph
            shape.append(tuple(paragraph))
            paragraph = []
    shape.append(tuple(paragraph))
    return list(zip(hashes, counts[:n], strict=True)), shape


#: RFC 1924's base85 digits, as ``base64.b85encode`` writes them
_B85 = np.frombuffer(b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~", np.uint8)
_B85_VALUE = np.full(256, 255, dtype=np.uint8)
_B85_VALUE[_B85] = np.arange(85, dtype=np.uint8)
_B85_POWERS = np.array([85**4, 85**3, 85**2, 85, 1], dtype=np.uint64)


def b85encode(raw: bytes) -> str:
    """``base64.b85encode(raw).decode()``, vectorised (the standard library's is pure Python: slow on pages).

    Every 4 bytes (a big-endian 32-bit number) become 5 digits, most significant first; the last group is
    padded with zero bytes and then cut to as many digits as it had bytes plus one.
    """
    pad = -len(raw) % 4
    words = np.frombuffer(raw + b"\0" * pad, dtype=">u4").astype(np.uint64)
    digits = (words[:, None] // _B85_POWERS) % np.uint64(85)
    encoded: bytes = _B85[digits.ravel()].tobytes()
    return encoded[: len(digits) * 5 - pad].decode("ascii")


def b85decode(text: str) -> bytes:
    """``base64.b85decode(text)``, vectorised; ValueError for a character outside the alphabet or a group too large."""
    if not text.isascii():
        raise ValueError("keys are not base85")
    pad = -len(text) % 5
    digits = _B85_VALUE[np.frombuffer(text.encode("ascii") + b"~" * pad, dtype=np.uint8)]
    if (digits == 255).any():
        raise ValueError("keys are not base85")
    words = digits.reshape(-1, 5).astype(np.uint64) @ _B85_POWERS
    if (words > 0xFFFFFFFF).any():
        raise ValueError("a base85 group overflows")
    decoded: bytes = words.astype(">u4").tobytes()
    return decoded[: len(words) * 4 - pad]


def _varints(values: list[int]) -> bytes:
    """Unsigned LEB128: 7 bits a byte, low bits first, the top bit set on every byte but a value's last."""
    if not values or max(values) < 0x80:  # the usual case: a byte each
        return bytes(values)
    out = bytearray()
    for value in values:
        while value > 0x7F:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


def _read_varints(raw: bytes, start: int, count: int | None) -> tuple[list[int], int]:
    """``count`` varints (all to the end when None) from ``raw[start:]``, and the position after them."""
    if count is None and (start == len(raw) or max(raw[start:]) < 0x80):  # the usual case: a byte each
        return list(raw[start:]), len(raw)
    out: list[int] = []
    value = shift = 0
    pos = start
    while pos < len(raw) and (count is None or len(out) < count):
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            out.append(value)
            value = shift = 0
    if shift or (count is not None and len(out) < count):
        raise ValueError("a varint is cut short")
    return out, pos


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


def _chunks(stream: list[str], stops: list[int]) -> list[tuple[int, int]]:
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
    keys = (values >> np.uint64(64 - HASH_BITS)).tolist()
    return list(zip(keys, (ends - begins).tolist(), strict=True))


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
        ``{"v": 3, "keys": "<base85>"}``: the passages in text order (hash and token count), and per
        paragraph the token counts of its sentences, packed as the module says.
    """
    return stored_keys(text_layout(text)[0])


def stored_keys(layout: Layout) -> dict[str, Any] | None:
    """The value of ``newsfold.passages`` for a layout (None when it has no passage)."""
    return layout.stored() if layout.chunks else None
