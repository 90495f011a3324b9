"""Why pages share a cluster: pairwise scores, a similarity matrix, and the signals of a page's membership.

Everything here is pure: it takes stored fields (signatures, band keys,
titles, texts) and returns data for an editor to read. Scores are the same
estimates the ingest decision uses (``plugin.sign.signature``), so what the admin
shows is what the indexer saw. The passages two texts share and their word
differences are ``plugin.admin.text_compare``.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from newsfold.plugin.admin.text_compare import shared_passages
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import Signature, containment, jaccard, shared_bands
from newsfold.plugin.text import normalize


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
        values = np.stack([s.stored_values for i in usable if (s := signatures[i]) is not None])
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
    rule of ``plugin.fold.cluster.verify``); band keys shared (at least
    ``min_bands`` makes a candidate); the same normalised title; the same
    site. Shared passages are the longest common word runs of the two texts.

    Args:
        member: the page's stored fields (``id``, ``site``, ``title``,
            ``title_key``, ``body``).
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
    bands = (
        shared_bands(
            member_signature.hashvalues, reference_signature.hashvalues, bands=settings.bands, rows=settings.rows
        )  # fmt: skip
        if member_signature is not None and reference_signature is not None
        else 0
    )
    signals = [
        *_score_signals(j, c, member_signature, reference_signature, settings),
        Signal("band_keys", bands >= settings.min_bands, f"{bands} shared (a candidate needs {settings.min_bands})"),
        *_page_signals(member, reference),
    ]
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


def _score_signals(
    j: float | None,
    c: float | None,
    member_signature: Signature | None,
    reference_signature: Signature | None,
    settings: Settings,
) -> list[Signal]:
    """The signals of the scores: Jaccard, and containment while the shorter text is long enough (as ``verify``)."""
    if j is None or c is None or member_signature is None or reference_signature is None:
        return [Signal("jaccard", False, "no comparable signatures"),
                Signal("containment", False, "no comparable signatures")]  # fmt: skip
    small, large = sorted((member_signature.shingle_count, reference_signature.shingle_count))
    ratio = small / large if large else 0.0
    ok = ratio >= settings.containment_min_ratio and c >= settings.containment_threshold
    return [
        Signal("jaccard", j >= settings.threshold, f"{j:.2f} (threshold {settings.threshold:.2f})"),
        Signal(
            "containment",
            ok,
            f"{c:.2f} (threshold {settings.containment_threshold:.2f}; "
            f"length ratio {ratio:.2f}, at least {settings.containment_min_ratio:.2f})",
        ),
    ]


def _page_signals(member: Mapping[str, Any], reference: Mapping[str, Any]) -> list[Signal]:
    """The signals of the pages themselves: the same normalised title, the same site."""
    same_title = title_keys_equal(member, reference)
    site_a, site_b = member.get("site"), reference.get("site")
    same_site = bool(site_a) and site_a == site_b
    return [
        Signal("title", same_title, "same normalised title" if same_title else "different titles"),
        Signal("site", same_site, f"both on {site_a}" if same_site else f"{site_a or '?'} / {site_b or '?'}"),
    ]
