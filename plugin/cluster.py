"""Pure cluster decisions: which candidates are copies, and which cluster wins.

Nothing here talks to Elasticsearch; ``plugin.dedup`` feeds it what a lookup
found and writes what it decides.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from plugin.settings import Settings
from plugin.signature import Signature, containment, jaccard


@dataclass(frozen=True)
class Match:
    """A verified copy: the other page, its cluster and the evidence."""

    page_id: str
    cluster_id: str
    similarity: float  # estimated Jaccard
    containment: float  # estimated share of the smaller text in the larger


@dataclass(frozen=True)
class Evidence:
    """What is known about a pair besides the texts (Media Cloud's per-site signals)."""

    same_site: bool = False
    same_title: bool = False  # same normalised title on the same day (only counted within a site)
    same_url: bool = False  # same normalised URL (only counted within a site)


NO_EVIDENCE = Evidence()


def verify(
    a: Signature, b: Signature, settings: Settings, evidence: Evidence = NO_EVIDENCE
) -> tuple[bool, float, float]:
    """Decide from two signatures whether the texts are copies of one story.

    Copies either resemble each other (Jaccard >= ``threshold``) or the
    smaller is mostly contained in the larger (a truncated copy); containment
    only counts when the smaller text is at least ``containment_min_ratio`` of
    the larger (a fifth by default), so a short teaser quoting a story's lede
    is not folded into it.

    Within one site, the same normalised URL, or the same normalised title on
    the same day, is extra evidence (``title_evidence``): the pair then needs
    only half the Jaccard threshold. Across sites titles and URLs never count.

    With ``cjk_verifier="lcc"``, two Chinese/Japanese texts are decided by An
    & Cheng's largest-common-characters rule on their full-stop feature
    strings instead (:func:`lcc_duplicate`).

    Returns:
        (is_copy, estimated Jaccard, estimated containment)
    """
    j = jaccard(a, b)
    c = containment(a, b, j)
    if settings.cjk_verifier == "lcc" and min(len(a.cjk_features), len(b.cjk_features)) >= LCC_MIN_FEATURES:
        return lcc_duplicate(a.cjk_features, b.cjk_features, same_host=evidence.same_site), j, c
    if j >= settings.threshold:
        return True, j, c
    small, large = sorted((a.shingle_count, b.shingle_count))
    if large and small / large >= settings.containment_min_ratio and c >= settings.containment_threshold:
        return True, j, c
    if (
        settings.title_evidence
        and evidence.same_site
        and (evidence.same_title or evidence.same_url)
        and j >= settings.threshold / 2
    ):
        return True, j, c
    return False, j, c


LCC_MIN_FEATURES = 5
LCC_ALPHA = 0.6  # share of the longer feature string that must be common
LCC_BETA = 0.8  # share of the shorter one
LCC_SAME_HOST = 0.2  # added to alpha for two pages of one host (shared template noise)


def lcc_duplicate(x: str, y: str, *, same_host: bool = False) -> bool:
    """An & Cheng: duplicates when the largest common characters cover enough of both feature strings.

    LCC = m - edit(shorter, longer), m the longer length. The paper's two
    overlap factors are read as: LCC / m >= alpha (0.6; 0.8 on one host) and
    LCC / n >= beta (0.8) for the shorter length n, so a copy cut to 60 % of
    the story still matches while a short string cannot match by being a
    part of a long one.
    """
    from rapidfuzz.distance import Levenshtein

    short, long_ = sorted((x, y), key=len)
    n, m = len(short), len(long_)
    if n == 0:
        return False
    lcc = m - Levenshtein.distance(short, long_)
    alpha = min(1.0, LCC_ALPHA + (LCC_SAME_HOST if same_host else 0.0))
    return lcc / m >= alpha and lcc / n >= LCC_BETA


class UnionFind:
    """Disjoint sets over hashable nodes."""

    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)

    def groups(self) -> dict:
        out: dict = {}
        for x in list(self.parent):
            out.setdefault(self.find(x), []).append(x)
        return out


@dataclass
class Decision:
    """Where each page of a batch goes and which clusters merge."""

    cluster_of: dict[str, str] = field(default_factory=dict)  # page id -> cluster id
    merges: dict[str, str] = field(default_factory=dict)  # losing cluster id -> surviving cluster id
    best: dict[str, Match] = field(default_factory=dict)  # page id -> most similar verified copy


def decide(
    page_ids: Iterable[str],
    edges: Iterable[tuple[str, Match]],
) -> Decision:
    """Assign clusters for a batch from verified matches.

    Args:
        page_ids: ids of the batch's pages being written.
        edges: (page id, match) for every verified copy, where the match is an
            existing indexed page or another page of the batch
            (``match.page_id`` in ``page_ids``; its ``cluster_id`` is ignored).

    Returns:
        The decision: each connected group of pages and existing clusters
        gets the smallest existing cluster id it touches, or, when it touches
        none, the smallest page id of the group (new story). Every other
        existing cluster of the group merges into that survivor. The rule is
        deterministic, so workers deciding concurrently agree.
    """
    page_ids = list(page_ids)
    batch = set(page_ids)
    uf = UnionFind()
    for pid in page_ids:
        uf.find(("p", pid))
    decision = Decision()
    for pid, match in edges:
        if match.page_id in batch:
            uf.union(("p", pid), ("p", match.page_id))
        else:
            uf.union(("p", pid), ("c", match.cluster_id))
        best = decision.best.get(pid)
        if best is None or (match.similarity, match.containment) > (best.similarity, best.containment):
            decision.best[pid] = match
    for members in uf.groups().values():
        clusters = sorted(c for kind, c in members if kind == "c")
        pages = sorted(p for kind, p in members if kind == "p")
        survivor = clusters[0] if clusters else pages[0]
        for pid in pages:
            decision.cluster_of[pid] = survivor
        for loser in clusters[1:]:
            decision.merges[loser] = survivor
    return decision
