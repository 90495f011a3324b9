"""MinHash signatures (datasketch, pinned scheme) and LSH band keys."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from datasketch import MinHash

from plugin.settings import HASH_SCHEME, Settings
from plugin.shingles import shingle_size, shingles, stopword_shingles
from plugin.text import cjk_sentences, is_cjk_text, tokenize


@dataclass(frozen=True)
class Signature:
    """A text's MinHash signature and what is needed to compare it."""

    hashvalues: np.ndarray  # uint32[num_perm]
    shingle_count: int
    token_count: int

    def encode(self) -> str:
        """Base64 of the little-endian uint32 hash values (the stored form)."""
        return base64.b64encode(self.hashvalues.astype("<u4").tobytes()).decode("ascii")

    @classmethod
    def decode(cls, data: str, *, shingle_count: int, token_count: int = 0) -> Signature:
        """Inverse of :meth:`encode`."""
        values = np.frombuffer(base64.b64decode(data), dtype="<u4").astype(np.uint32)
        return cls(values, shingle_count, token_count)


@lru_cache(maxsize=8)
def _template(num_perm: int, seed: int) -> MinHash:
    # Drawing the permutations is the costly part of MinHash(); do it once.
    return MinHash(num_perm=num_perm, seed=seed, scheme=HASH_SCHEME)


def minhash(shingle_set: set[bytes], *, num_perm: int, seed: int) -> MinHash:
    """A datasketch MinHash of a shingle set with the pinned scheme."""
    template = _template(num_perm, seed)
    m = MinHash(num_perm=num_perm, seed=seed, scheme=HASH_SCHEME, permutations=template.permutations)
    if shingle_set:
        m.update_batch(list(shingle_set))
    return m


def _signed_tokens(text: str, settings: Settings) -> tuple[str, list[str]]:
    """The part of an article's text that is signed, and its tokens (tokenised once).

    For Chinese/Japanese text with ``cjk_method="periods"``, only sentences
    ending with a CJK full stop (or ! ?) are kept when they hold at least 50
    characters: the prose of the article without the navigation, captions
    and link lists that extraction left in. Otherwise the whole text.
    """
    tokens = tokenize(text)
    if settings.cjk_method == "periods" and is_cjk_text(tokens):
        kept = "\n".join(cjk_sentences(text))
        if len(kept) >= 50:
            return kept, tokenize(kept)
    return text, tokens


def signing_text(text: str, settings: Settings) -> str:
    """The part of an article's text that is signed (see :func:`_signed_tokens`)."""
    return _signed_tokens(text, settings)[0]


def sign_text(text: str, settings: Settings) -> Signature:
    """Tokenise, shingle and MinHash a text (see :func:`signing_text` for what is signed).

    Args:
        text: the article text (title excluded: headlines change between copies).
        settings: gives num_perm, seed and the shingle lengths.

    Returns:
        The signature with the shingle and token counts.
    """
    _, tokens = _signed_tokens(text, settings)
    k = shingle_size(tokens, word_shingle=settings.word_shingle, cjk_shingle=settings.cjk_shingle)
    if settings.shingles == "stopwords" and not is_cjk_text(tokens):
        shingle_set = stopword_shingles(tokens, settings.word_shingle)
    else:
        shingle_set = shingles(tokens, k)
    m = minhash(shingle_set, num_perm=settings.num_perm, seed=settings.seed)
    return Signature(np.asarray(m.hashvalues, dtype=np.uint32), len(shingle_set), len(tokens))


def band_keys(hashvalues: np.ndarray, *, bands: int, rows: int) -> list[str]:
    """LSH band keys ``"<band>:<hex>"``, one per band.

    The hex part is exactly datasketch's own bucket key for that band
    (``bytes(hashvalues[start:end].byteswap().data)``), so a pair collides
    here if and only if it collides in ``MinHashLSH`` with the same b x r.
    """
    if bands * rows > len(hashvalues):
        raise ValueError(f"bands x rows = {bands * rows} exceeds num_perm = {len(hashvalues)}")
    values = np.asarray(hashvalues, dtype=np.uint32)
    return [f"{b}:{bytes(values[b * rows : (b + 1) * rows].byteswap().data).hex()}" for b in range(bands)]


def jaccard(a: Signature, b: Signature) -> float:
    """Estimated Jaccard resemblance: the share of equal MinHash values."""
    if len(a.hashvalues) != len(b.hashvalues):
        raise ValueError(f"signatures of different lengths: {len(a.hashvalues)} != {len(b.hashvalues)}")
    return float(np.count_nonzero(a.hashvalues == b.hashvalues)) / len(a.hashvalues)


def containment(a: Signature, b: Signature, j: float | None = None) -> float:
    """Estimated share of the smaller shingle set found in the larger one.

    From |A n B| = J / (1 + J) * (|A| + |B|); a truncated copy has low
    Jaccard with the full story but containment near 1.
    """
    j = jaccard(a, b) if j is None else j
    small = min(a.shingle_count, b.shingle_count)
    if small == 0:
        return 0.0
    inter = j / (1.0 + j) * (a.shingle_count + b.shingle_count)
    return min(1.0, inter / small)


def content_hash(text: str) -> str:
    """A short stable hash of a text, to recognise an unchanged re-ingest."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()
