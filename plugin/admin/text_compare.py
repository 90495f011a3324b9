"""Two texts compared word by word: the longest passages they share, and their differences side by side.

Pure: texts in, passages and segments out. Words are compared case-folded and without punctuation
(:func:`word_key`); texts are cut to ``MAX_TEXT_WORDS`` words first, which keeps a page view fast.
``plugin.admin.evidence`` quotes the shared passages of a story's pages; the admin's comparison of two
pages shows :func:`word_diff`.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

#: a passage must be at least this many words to count as shared (shorter runs are common phrases)
PASSAGE_MIN_WORDS = 8
#: texts longer than this are cut before passages and differences are computed (keeps a page view fast)
MAX_TEXT_WORDS = 3000
_WORD_KEY = re.compile(r"\W+")
_BREAK = "\n"


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
