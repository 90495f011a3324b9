"""Weighted MinHash by Ioffe's improved consistent weighted sampling (ICWS), hash-seeded.

Each of ``num_perm`` samples picks one (feature, level) pair with probability
proportional to the feature's weight, consistently: two weighted sets pick the
same pair with probability equal to their weighted Jaccard similarity
``sum(min(w_a, w_b)) / sum(max(w_a, w_b))``. So a weighted signature is
compared, banded and stored exactly like a plain MinHash one (uint32 values).

The random numbers of a feature are derived from the feature's 64-bit hash
and the sample number (splitmix64), never drawn into a table: datasketch's
``WeightedMinHashGenerator`` pre-draws ``3 x num_perm x dim`` floats for a fixed
dimension, which is gigabytes for a vocabulary of shingles.
"""

from __future__ import annotations

import numpy as np

from newsfold.plugin.errors import InputError

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
EMPTY = np.uint32(0xFFFFFFFF)


def _splitmix(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = z + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        mixed: np.ndarray = z ^ (z >> np.uint64(31))
        return mixed


def _uniform_pair(keys: np.ndarray, stream: int) -> tuple[np.ndarray, np.ndarray]:
    """Two uniform float arrays in (0, 1) from uint64 keys (the two 32-bit halves of one hash)."""
    with np.errstate(over="ignore"):
        bits = _splitmix(keys ^ (np.uint64(stream) * np.uint64(0xD1B54A32D192ED03)))
    scale = np.float32(1.0 / 4294967296.0)
    low = ((bits & np.uint64(0xFFFFFFFF)).astype(np.float32) + np.float32(0.5)) * scale
    high = ((bits >> np.uint64(32)).astype(np.float32) + np.float32(0.5)) * scale
    return low, high


def weighted_minhash(hashes: np.ndarray, weights: np.ndarray, *, num_perm: int, seed: int) -> np.ndarray:
    """ICWS signature of a weighted set.

    Args:
        hashes: uint64 hashes of the features (distinct).
        weights: their non-negative weights; features of weight 0 are ignored.
        num_perm: number of samples.
        seed: the sampling seed (signatures with other seeds do not compare).

    Returns:
        uint32[num_perm]: per sample, a hash of the chosen (feature, level);
        all ``0xFFFFFFFF`` for a set without positive weight.
    """
    hashes = np.asarray(hashes, dtype=np.uint64)
    weights = np.asarray(weights, dtype=np.float64)
    if hashes.shape != weights.shape:
        raise InputError(f"hashes and weights differ in shape: {hashes.shape} != {weights.shape}")
    keep = weights > 0
    hashes, weights = hashes[keep], weights[keep]
    if len(hashes) == 0:
        return np.full(num_perm, EMPTY, dtype=np.uint32)
    with np.errstate(over="ignore"):
        sample_keys = _splitmix(np.arange(num_perm, dtype=np.uint64) + np.uint64(seed) * _GOLDEN)
        keys = hashes[:, None] ^ sample_keys[None, :]  # (features, samples)
    u1, u2 = _uniform_pair(keys, 1)
    v1, v2 = _uniform_pair(keys, 2)
    beta, _ = _uniform_pair(keys, 3)
    r = -np.log(u1 * u2)  # Gamma(2, 1)
    c = -np.log(v1 * v2)  # Gamma(2, 1)
    t = np.floor(np.log(weights).astype(np.float32)[:, None] / r + beta)
    ln_a = np.log(c) - r * (t - beta) - r
    best = np.argmin(ln_a, axis=0)  # the chosen feature of each sample
    cols = np.arange(num_perm)
    chosen_t = t[best, cols].astype(np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        mixed = _splitmix(hashes[best] ^ _splitmix(chosen_t + sample_keys))
    values = (mixed >> np.uint64(32)).astype(np.uint32)
    values[values == EMPTY] = EMPTY - np.uint32(1)  # keep the empty marker unambiguous
    return values
