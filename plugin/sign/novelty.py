"""What a version of a story holds of the story's reference text, and what it adds.

Syndicated stories are republished with local headlines and local material
added (Alonso, Fetterly & Manasse); a reader wants to know which versions say
something the others do not. The rule here is explainable and has no model.
Its steps 1 and 2 cut both texts into passages chosen by their words
(``plugin.sign.passages``); two passages match when their tokens are equal.
Then:

3. A version **holds** the share of the reference's tokens in passages it has
   too; below :data:`SHORTER_BELOW` it is **shorter**.
4. A sentence of the version (cut after ``.``, ``!``, ``?``, ``…`` and
   ``。！？``) is **added** when more than half of its tokens, and at least
   :data:`MIN_ADDED_TOKENS`, sit in passages the reference does not have
   (shorter ones are captions, bylines and "Advertisement" lines, not
   material). A paragraph whose counted sentences are all added is an
   **added paragraph**; the other added sentences are counted as sentences.

Each page stores its passage keys at ingest (``newsfold.passages``). The
relation of a version to its story's reference (:func:`relation`) is computed
when read, from the two stored values, so merges, splits and a new
representative need no rewrite.

Pure: no server is contacted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from newsfold.plugin.sign.passages import Layout, paragraphs, sentences
from newsfold.plugin.text import tokenize

#: a version holding less than this share of the reference's text (by tokens) is shorter
SHORTER_BELOW = 0.9
#: an added sentence has at least this many new tokens
MIN_ADDED_TOKENS = 8

#: relation kinds
KINDS = ("reference", "copy", "shorter", "adds", "shorter_adds")


def _sentence_flags(reference: Layout, version: Layout) -> list[list[bool | None]]:
    """Per paragraph of ``version``, per sentence: added (True), held (False), or new but too short to count (None)."""
    known = {h for h, _ in reference.chunks}
    new: list[bool] = []
    for h, n in version.chunks:
        new.extend([h not in known] * n)
    out: list[list[bool | None]] = []
    pos = 0
    for paragraph in version.shape:
        row: list[bool | None] = []
        for n in paragraph:
            fresh = sum(new[pos : pos + n])
            pos += n
            row.append(False if fresh * 2 <= n else True if fresh >= MIN_ADDED_TOKENS else None)
        out.append(row)
    return out


@dataclass(frozen=True)
class Relation:
    """How one version compares with its story's reference.

    Attributes:
        kind: ``reference`` (it is the reference), ``copy`` (holds the
            reference and adds nothing), ``shorter``, ``adds`` or
            ``shorter_adds``.
        held: share of the reference's text (by tokens) found in this version, 0..1.
        added_paragraphs: paragraphs of this version whose counted sentences are all added.
        added_sentences: the other added sentences.
    """

    kind: str
    held: float
    added_paragraphs: int = 0
    added_sentences: int = 0

    @property
    def shorter(self) -> bool:
        return self.kind in ("shorter", "shorter_adds")

    @property
    def adds(self) -> bool:
        return self.kind in ("adds", "shorter_adds")

    def label(self) -> str:
        """What a reader sees: ``full copy``, ``shorter (holds 60%)``, ``adds 2 paragraphs``, ``reference``."""
        if self.kind == "reference":
            return "reference"
        parts = []
        if self.shorter:
            parts.append(f"shorter (holds {math.floor(self.held * 100)}%)")
        if self.adds:
            parts.append("adds " + self.added_text())
        return ", ".join(parts) or "full copy"

    def added_text(self) -> str:
        """``2 paragraphs``, ``1 sentence``, ``1 paragraph and 2 sentences`` (empty when nothing is added)."""
        items = []
        if self.added_paragraphs:
            items.append(f"{self.added_paragraphs} paragraph{'s' if self.added_paragraphs != 1 else ''}")
        if self.added_sentences:
            items.append(f"{self.added_sentences} sentence{'s' if self.added_sentences != 1 else ''}")
        return " and ".join(items)

    def as_json(self) -> dict[str, Any]:
        """The relation as the API reports it."""
        return {
            "kind": self.kind,
            "label": self.label(),
            "held": round(self.held, 3),
            "added_paragraphs": self.added_paragraphs,
            "added_sentences": self.added_sentences,
        }


def relation(
    reference: Mapping[str, Any] | None, version: Mapping[str, Any] | None, *, same: bool = False
) -> Relation | None:
    """The relation of a version to its story's reference, from their stored ``newsfold.passages``.

    Args:
        reference: the reference's stored passages.
        version: the version's stored passages.
        same: the version is the reference itself.

    Returns:
        The relation; None when either side has no usable keys (a page
        ingested before they were stored, or keyed another way): nothing can be said.
    """
    if same:
        return Relation("reference", 1.0)
    ref, ver = Layout.of_stored(reference), Layout.of_stored(version)
    if ref is None or ver is None:
        return None
    return compare(ref, ver)


def compare(reference: Layout, version: Layout) -> Relation:
    """The relation of two layouts (see the module's rule)."""
    have = {h for h, _ in version.chunks}
    sizes = dict(reference.chunks)  # a passage repeated in the reference counts once
    total = sum(sizes.values())
    held = sum(n for h, n in sizes.items() if h in have) / total if total else 1.0
    added_paragraphs = added_sentences = 0
    for row in _sentence_flags(reference, version):
        counted = [flag for flag in row if flag is not None]
        if counted and all(counted):
            added_paragraphs += 1
        else:
            added_sentences += sum(counted)
    shorter, adds = held < SHORTER_BELOW, bool(added_paragraphs or added_sentences)
    kind = "shorter_adds" if shorter and adds else "shorter" if shorter else "adds" if adds else "copy"
    return Relation(kind, held, added_paragraphs, added_sentences)


@dataclass(frozen=True)
class Passage:
    """One sentence of a version's text, marked when it is added material."""

    text: str
    added: bool


def marked_passages(text: str, reference: Mapping[str, Any] | None) -> list[list[Passage]]:
    """A version's text as paragraphs of sentences, each marked ``added`` as :func:`relation` counts it.

    Args:
        text: the version's article text.
        reference: the reference's stored passages (None or unusable: nothing is marked).
    """
    ref = Layout.of_stored(reference)
    version = Layout.of_text(text)
    flags = _sentence_flags(ref, version) if ref is not None else []
    out: list[list[Passage]] = []
    index = 0
    for paragraph in paragraphs(text):
        row = []
        keyed = 0
        for sentence in sentences(paragraph):
            added = False
            if tokenize(sentence):
                if index < len(flags) and keyed < len(flags[index]):
                    added = bool(flags[index][keyed])
                keyed += 1
            row.append(Passage(sentence, added))
        if keyed:
            index += 1
        out.append(row)
    return out
