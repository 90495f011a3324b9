"""A MinHash signature's stored form (fold layout 8): its values at 20 significant bits, as one token per LSH band.

Pure: numpy only. ``plugin.sign.signature`` compares signatures at this precision.
"""

from __future__ import annotations

import base64

import numpy as np

from newsfold.plugin.errors import InputError

#: significant bits a stored MinHash value keeps (:func:`truncate`)
STORED_BITS = 20
#: a stored value's code takes this many bytes (:func:`band_tokens`)
_CODE_BYTES = 3
#: first character of the token holding the values beyond the bands (when ``bands x rows < num_perm``)
REST_MARK = "~"


def truncate(values: np.ndarray) -> np.ndarray:
    """MinHash values at the stored precision: each keeps its :data:`STORED_BITS` highest significant bits.

    A MinHash value is a minimum, so it is small (about 2**32 / the number of
    shingles): a fixed number of *significant* bits keeps its order and its
    equality to about one part in a million, where b-bit hashing (the lowest
    bits) would lose the order that containment reads
    (:func:`intersection_estimate`). Idempotent: a truncated value truncates
    to itself, so signatures read back from the index and fresh ones compare
    alike.
    """
    v = np.asarray(values, dtype=np.uint32)
    drop = np.maximum(_bit_length(v) - STORED_BITS, 0).astype(np.uint32)
    out: np.ndarray = (v >> drop) << drop
    return out


def _bit_length(v: np.ndarray) -> np.ndarray:
    """Bit length of each uint32 (0 for 0): the binary exponent of its exact float64."""
    exponent: np.ndarray = np.frexp(np.asarray(v, dtype=np.uint32).astype(np.float64))[1]
    return exponent


def _codes(values: np.ndarray) -> np.ndarray:
    """The 23-bit code of each truncated value: the value itself below 2**STORED_BITS, else its exponent and
    mantissa (order-preserving, and exactly inverted by :func:`_values`)."""
    v = truncate(values).astype(np.int64)
    shift = np.maximum(_bit_length(v.astype(np.uint32)) - STORED_BITS, 0)
    return np.where(shift == 0, v, (shift << (STORED_BITS - 1)) + (v >> shift))


def _values(codes: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_codes`."""
    c = codes.astype(np.int64)
    top = np.int64(1) << STORED_BITS
    half = np.int64(1) << (STORED_BITS - 1)
    shift = np.where(c < top, 0, (c - half) >> (STORED_BITS - 1))
    mantissa = np.where(c < top, c, c - (shift << (STORED_BITS - 1)))
    return (mantissa << shift).astype(np.uint32)


def band_tokens(hashvalues: np.ndarray, *, bands: int, rows: int) -> list[str]:
    """The stored signature as tokens (fold layout 8): one per LSH band, then the values beyond the bands.

    A band's token is its ``rows`` values at the stored precision (:func:`truncate`), 3 bytes each, in
    URL-safe base64 without padding (8 characters for 2 rows). The tokens, joined by spaces, are the stored
    field ``newsfold.bands``; its whitespace-analysed sub-field holds them as terms, so the band lookup
    queries the stored signature itself (:func:`tokens_signature` reads it back). Two pages share a band
    when their tokens at that band are equal; a token carries no band number, and a chance match
    between different bands (48 bits) does not count towards ``min_bands`` in practice.
    """
    if bands * rows > len(hashvalues):
        raise InputError(f"bands x rows = {bands * rows} exceeds num_perm = {len(hashvalues)}")
    raw = _packed(_codes(np.asarray(hashvalues)))
    width = rows * _CODE_BYTES
    tokens = [_b64(raw[b * width : (b + 1) * width]) for b in range(bands)]
    if bands * rows < len(hashvalues):
        tokens.append(REST_MARK + _b64(raw[bands * width :]))
    return tokens


def tokens_signature(stored: str) -> np.ndarray:
    """The MinHash values (at the stored precision) of a stored ``newsfold.bands`` string.

    Raises:
        ValueError: the string is not a stored signature.
    """
    raw = b"".join(base64.urlsafe_b64decode(t.lstrip(REST_MARK) + "=" * (-len(t) % 4)) for t in stored.split())
    if not raw or len(raw) % _CODE_BYTES:
        raise ValueError(f"not a stored signature: {len(raw)} bytes")
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.int64).reshape(-1, _CODE_BYTES)
    return _values((b[:, 0] << 16) | (b[:, 1] << 8) | b[:, 2])


def _packed(codes: np.ndarray) -> bytes:
    """3 big-endian bytes per code."""
    c = codes.astype(np.int64)
    return np.stack([(c >> 16) & 0xFF, (c >> 8) & 0xFF, c & 0xFF], axis=1).astype(np.uint8).tobytes()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def shared_bands(a: np.ndarray, b: np.ndarray, *, bands: int, rows: int) -> int:
    """How many LSH bands two signatures share at the stored precision (whatever layout each was read from)."""
    n = bands * rows
    if len(a) < n or len(b) < n:
        return 0
    same = (truncate(a[:n]) == truncate(b[:n])).reshape(bands, rows)
    return int(np.count_nonzero(same.all(axis=1)))
