"""Why pages share a cluster: pairwise scores, membership signals, shared passages and word differences.

Everything here is pure: it takes stored fields (signatures, band keys,
titles, texts) and returns data for an editor to read. Scores are the same
estimates the ingest decision uses (``plugin.signature``), so what the admin
shows is what the indexer saw.
"""

from __future__ import annotations

import difflib
import heapq
import re
import unicodedata
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import Signature, containment, jaccard
from newsfold.plugin.text import normalize

#: a passage must be at least this many words to count as shared (shorter runs are common phrases)
PASSAGE_MIN_WORDS = 8
#: texts longer than this are cut before passages and differences are computed (keeps a page view fast)
MAX_TEXT_WORDS = 3000
_WORD_KEY = re.compile(r"\W+")
_BREAK = "\n"


@dataclass(frozen=True)
class Signal:
    """One reason (or non-reason) for two pages to be copies."""

    name: str  # "jaccard" | "containment" | "band_keys" | "title" | "site"
    matched: bool
    detail: str


@dataclass
class Evidence:
    """The evidence that a page belongs with a reference page of its cluster."""

    page_id: str
    reference_id: str
    jaccard: float | None
    containment: float | None
    shared_bands: int
    signals: list[Signal] = field(default_factory=list)
    passages: list[str] = field(default_factory=list)

    @property
    def is_copy(self) -> bool:
        """Whether the scores alone make the pair copies under the current thresholds."""
        return any(s.matched for s in self.signals if s.name in ("jaccard", "containment"))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "page_id": self.page_id,
            "reference_id": self.reference_id,
            "jaccard": self.jaccard,
            "containment": self.containment,
            "shared_bands": self.shared_bands,
            "is_copy": self.is_copy,
            "signals": [s.__dict__ for s in self.signals],
            "passages": list(self.passages),
        }


def comparable(a: Signature | None, b: Signature | None) -> bool:
    """Whether two stored signatures can be compared (both present, same length)."""
    return a is not None and b is not None and len(a.hashvalues) == len(b.hashvalues)


def pair_scores(
    a: Signature | None, b: Signature | None, *, weighted: bool = False
) -> tuple[float | None, float | None]:
    """Estimated Jaccard and containment of two signatures.

    Args:
        a: a page's signature, or None when it has none.
        b: the other page's signature.
        weighted: the index signs with weighted (ICWS) samples (``Settings.signature_kind``).

    Returns:
        ``(jaccard, containment)`` rounded to 4 places, or ``(None, None)``
        when the signatures cannot be compared.
    """
    if a is None or b is None or not comparable(a, b):
        return None, None
    j = jaccard(a, b)
    return round(j, 4), round(containment(a, b, j, weighted=weighted), 4)


def similarity_matrix(signatures: Sequence[Signature | None]) -> list[list[float | None]]:
    """Pairwise estimated Jaccard of every pair of signatures (1.0 on the diagonal).

    Vectorised: n signatures of p values cost n x n x p comparisons of
    uint32 (200 pages at 256 permutations is about 10 M, a few milliseconds).

    Args:
        signatures: the pages' signatures; None entries get None scores.

    Returns:
        A symmetric n x n list of lists.
    """
    n = len(signatures)
    lengths = {len(s.hashvalues) for s in signatures if s is not None}
    usable = [i for i, s in enumerate(signatures) if s is not None and len(lengths) == 1]
    out: list[list[float | None]] = [[None] * n for _ in range(n)]
    if usable:
        values = np.stack([s.hashvalues for i in usable if (s := signatures[i]) is not None])
        equal = np.round((values[:, None, :] == values[None, :, :]).mean(axis=2), 4).tolist()
        for x, i in enumerate(usable):
            row = out[i]
            for y, k in enumerate(usable):
                row[k] = equal[x][y]
    for i in range(n):
        out[i][i] = 1.0
    return out


def least_similar_pairs(matrix: Sequence[Sequence[float | None]], *, limit: int = 100) -> list[tuple[int, int, float]]:
    """Index pairs ``(i, j, jaccard)`` with ``i < j``, least similar first (pairs without a score left out).

    An editor checking a cluster looks at its weakest links first: a wrong
    merge shows up as the pairs with the lowest resemblance (CEDAR's viewer
    orders members the same way).

    Args:
        matrix: a square matrix from :func:`similarity_matrix`.
        limit: at most this many pairs.

    Returns:
        The pairs, ties in index order.
    """
    pairs = (
        (score, i, j) for i, row in enumerate(matrix) for j, score in enumerate(row) if j > i and score is not None
    )
    return [(i, j, score) for score, i, j in heapq.nsmallest(limit, pairs)]


def choose_representative(members: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of a cluster's representative: the page marked ``representative``, else the first seen.

    Args:
        members: member documents with ``representative`` and ``ingested``
            (and ``id`` to break ties).

    Returns:
        The index in ``members``, or None for no members.
    """
    if not members:
        return None
    marked = [i for i, m in enumerate(members) if m.get("representative") is True]
    if marked:
        return marked[0]
    return min(range(len(members)), key=lambda i: (members[i].get("ingested") or "", str(members[i].get("id"))))


def title_keys_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two pages have the same normalised title.

    The stored ``title_key`` is used when both pages have one (the same
    normalisation on both sides); otherwise both titles are normalised here.

    Args:
        a: a page's stored fields (``title_key``, ``title``).
        b: the other page's.

    Returns:
        True for equal, non-empty titles.
    """
    key_a, key_b = a.get("title_key"), b.get("title_key")
    if key_a and key_b:
        return bool(key_a == key_b)
    title_a, title_b = normalize(a.get("title") or ""), normalize(b.get("title") or "")
    return bool(title_a) and title_a == title_b


def membership_evidence(
    member: Mapping[str, Any],
    reference: Mapping[str, Any],
    settings: Settings,
    *,
    member_signature: Signature | None,
    reference_signature: Signature | None,
    passages: int = 3,
) -> Evidence:
    """The evidence that ``member`` is a copy of ``reference``.

    Signals: estimated Jaccard at or above ``settings.threshold``; estimated
    containment at or above ``settings.containment_threshold`` while the
    shorter text is at least ``containment_min_ratio`` of the longer (the
    rule of ``plugin.cluster.verify``); band keys shared (at least
    ``min_bands`` makes a candidate); the same normalised title; the same
    site. Shared passages are the longest common word runs of the two texts.

    Args:
        member: the page's stored fields (``id``, ``site``, ``title``,
            ``title_key``, ``band_keys``, ``body``).
        reference: the page it is compared with, same fields.
        settings: thresholds of the decision.
        member_signature: the member's decoded signature (or None).
        reference_signature: the reference's decoded signature (or None).
        passages: how many shared passages to return at most.

    Returns:
        The evidence; a pair without comparable signatures gets None scores
        and unmatched score signals.
    """
    j, c = pair_scores(member_signature, reference_signature, weighted=settings.signature_kind == "weighted")
    bands = len(set(member.get("band_keys") or ()) & set(reference.get("band_keys") or ()))
    signals: list[Signal] = []
    if j is None or c is None or member_signature is None or reference_signature is None:
        signals.append(Signal("jaccard", False, "no comparable signatures"))
        signals.append(Signal("containment", False, "no comparable signatures"))
    else:
        signals.append(Signal("jaccard", j >= settings.threshold, f"{j:.2f} (threshold {settings.threshold:.2f})"))
        small, large = sorted((member_signature.shingle_count, reference_signature.shingle_count))
        ratio = small / large if large else 0.0
        ok = ratio >= settings.containment_min_ratio and c >= settings.containment_threshold
        signals.append(
            Signal(
                "containment",
                ok,
                f"{c:.2f} (threshold {settings.containment_threshold:.2f}; "
                f"length ratio {ratio:.2f}, at least {settings.containment_min_ratio:.2f})",
            )
        )
    signals.append(
        Signal("band_keys", bands >= settings.min_bands, f"{bands} shared (a candidate needs {settings.min_bands})")
    )
    same_title = title_keys_equal(member, reference)
    signals.append(Signal("title", same_title, "same normalised title" if same_title else "different titles"))
    site_a, site_b = member.get("site"), reference.get("site")
    same_site = bool(site_a) and site_a == site_b
    signals.append(
        Signal("site", same_site, f"both on {site_a}" if same_site else f"{site_a or '?'} / {site_b or '?'}")
    )
    found = shared_passages(member.get("body") or "", reference.get("body") or "", limit=passages)
    return Evidence(
        page_id=str(member.get("id")),
        reference_id=str(reference.get("id")),
        jaccard=j,
        containment=c,
        shared_bands=bands,
        signals=signals,
        passages=found,
    )


def words(text: str, *, max_words: int = MAX_TEXT_WORDS) -> list[str]:
    """The words of a text as written, with ``"\\n"`` marking line breaks.

    Args:
        text: any text.
        max_words: words kept at most (line-break marks do not count).

    Returns:
        The words in order.
    """
    out: list[str] = []
    count = 0
    for line in text.split("\n"):
        parts = line.split()
        if not parts:
            continue
        if out:
            out.append(_BREAK)
        take = parts[: max_words - count]
        out.extend(take)
        count += len(take)
        if count >= max_words:
            break
    return out


@lru_cache(maxsize=65536)
def word_key(word: str) -> str:
    """The form a word is compared in: case-folded, without punctuation.

    Cached: the words of a cluster's pages repeat, and a detail page keys
    every member's text.

    Args:
        word: one word of :func:`words` (a line-break mark stays as it is).

    Returns:
        The comparison key (the word itself when it is only punctuation).
    """
    if word == _BREAK:
        return _BREAK
    return _WORD_KEY.sub("", unicodedata.normalize("NFKC", word).casefold()) or word


def shared_passages(
    text_a: str,
    text_b: str,
    *,
    min_words: int = PASSAGE_MIN_WORDS,
    limit: int = 3,
    max_words: int = MAX_TEXT_WORDS,
) -> list[str]:
    """The longest runs of words the two texts share, longest first, as written in ``text_a``.

    Word ``min_words``-grams of ``text_b`` are indexed, every match in
    ``text_a`` is extended as far as both texts agree, and the longest runs
    that do not overlap in ``text_a`` are kept. Linear in the text lengths
    (moved and reordered paragraphs are found too, unlike a diff). Texts are
    cut to ``max_words`` words first.

    Args:
        text_a: the text the passages are quoted from.
        text_b: the text compared with.
        min_words: shortest run that counts.
        limit: at most this many passages.
        max_words: words of each text considered.

    Returns:
        Passages (words joined by spaces).
    """
    a = [w for w in words(text_a, max_words=max_words) if w != _BREAK]
    b = [w for w in words(text_b, max_words=max_words) if w != _BREAK]
    if len(a) < min_words or len(b) < min_words or limit < 1:
        return []
    ka, kb = tuple(map(word_key, a)), tuple(map(word_key, b))
    starts = _gram_starts(kb, min_words)
    runs: list[tuple[int, int]] = []  # (length, start in a)
    i = 0
    while i <= len(ka) - min_words:
        best = 0
        for j in starts.get(tuple(ka[i : i + min_words]), ()):
            length = min_words
            while i + length < len(ka) and j + length < len(kb) and ka[i + length] == kb[j + length]:
                length += 1
            best = max(best, length)
        if best:
            runs.append((best, i))
            i += best  # the rest of this run starts no longer run in a
        else:
            i += 1
    runs.sort(key=lambda r: (-r[0], r[1]))
    return [" ".join(a[start : start + length]) for length, start in runs[:limit]]


@lru_cache(maxsize=16)
def _gram_starts(keys: tuple[str, ...], n: int) -> dict[tuple[str, ...], list[int]]:
    """Where each word n-gram of a text starts (at most 8 places each); cached for a text compared many times."""
    starts: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for j in range(len(keys) - n + 1):
        positions = starts[keys[j : j + n]]
        if len(positions) < 8:  # a gram repeated more often is boilerplate; 8 anchors are enough
            positions.append(j)
    return dict(starts)


@dataclass(frozen=True)
class Segment:
    """A stretch of one side of a comparison: its text and whether it differs from the other side."""

    text: str
    changed: bool


def word_diff(
    text_a: str, text_b: str, *, max_words: int = MAX_TEXT_WORDS
) -> tuple[list[Segment], list[Segment], float]:
    """Word-level differences of two texts, for a side-by-side view.

    Words are compared case-folded and without punctuation (difflib's
    ``SequenceMatcher``); each side is returned as segments of unchanged and
    changed words, line breaks kept as ``"\\n"`` in the text. Texts are cut to
    ``max_words`` words first.

    Args:
        text_a: the left text.
        text_b: the right text.
        max_words: words of each text compared.

    Returns:
        ``(segments of a, segments of b, share of words that are unchanged)``.
    """
    wa, wb = words(text_a, max_words=max_words), words(text_b, max_words=max_words)
    matcher = difflib.SequenceMatcher(None, [word_key(w) for w in wa], [word_key(w) for w in wb], autojunk=False)
    left: list[Segment] = []
    right: list[Segment] = []
    same = 0
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            same += sum(1 for w in wa[a0:a1] if w != _BREAK)
        _append(left, wa[a0:a1], changed=tag != "equal")
        _append(right, wb[b0:b1], changed=tag != "equal")
    total = sum(1 for w in wa if w != _BREAK) + sum(1 for w in wb if w != _BREAK)
    return left, right, round(2 * same / total, 4) if total else 1.0


def _append(side: list[Segment], parts: list[str], *, changed: bool) -> None:
    """Add a run of words to one side; the space before it stays outside a changed segment."""
    if not parts:
        return
    text = _join(parts)
    if side and not side[-1].text.endswith("\n") and not text.startswith("\n"):
        side.append(Segment(" ", False))
    side.append(Segment(text, changed))


def _join(parts: list[str]) -> str:
    out: list[str] = []
    for w in parts:
        if w == _BREAK:
            out.append("\n")
        elif out and not out[-1].endswith("\n"):
            out.append(" " + w)
        else:
            out.append(w)
    return "".join(out)
