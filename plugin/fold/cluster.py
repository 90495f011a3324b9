"""Pure cluster decisions: which candidates are copies, and which cluster wins.

Nothing here talks to Elasticsearch; ``plugin.fold.batch`` feeds it what a lookup
found and writes what it decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.union_find import ConstrainedUnion
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import Signature, containment, jaccard


@dataclass(frozen=True)
class Match:
    """A verified copy: the other page, its cluster and the evidence."""

    page_id: str
    cluster_id: str
    similarity: float  # estimated Jaccard
    containment: float  # estimated share of the smaller text in the larger


@dataclass(frozen=True)
class SiteSignals:
    """What is known about a pair besides the texts (Media Cloud's per-site signals)."""

    same_site: bool = False
    same_title: bool = False  # same normalised title on the same day (only counted within a site)
    same_url: bool = False  # same normalised URL (only counted within a site)


NO_SIGNALS = SiteSignals()


def verify(
    a: Signature, b: Signature, settings: Settings, signals: SiteSignals = NO_SIGNALS
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
    c = containment(a, b, j, weighted=settings.signature_kind == "weighted")
    if settings.cjk_verifier == "lcc" and min(len(a.cjk_features), len(b.cjk_features)) >= LCC_MIN_FEATURES:
        return lcc_duplicate(a.cjk_features, b.cjk_features, same_host=signals.same_site), j, c
    if j >= settings.threshold:
        return True, j, c
    small, large = sorted((a.shingle_count, b.shingle_count))
    if large and small / large >= settings.containment_min_ratio and c >= settings.containment_threshold:
        return True, j, c
    if (
        settings.title_evidence
        and signals.same_site
        and (signals.same_title or signals.same_url)
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


def merge_survivor(names: Iterable[str]) -> tuple[str, list[str]]:
    """THE merge rule: which name a story keeps when stories (or new pages) become one story.

    The smallest name survives. Every module that proposes a merge, or names
    a group of pages, asks here; workers deciding concurrently stay correct
    only while they all agree, so no other module picks a survivor itself
    (``tests/test_architecture.py`` checks). The one exception is
    :func:`plugin.fold.regroup.relabel`, which may turn a proposed merge round so
    that a committed story never yields to a pending one (``plugin.fold.founding``).

    Args:
        names: cluster ids (or, for a new story, page ids); repeats are ignored.

    Returns:
        ``(survivor, losers)``, the losers in order.

    Raises:
        ValueError: ``names`` is empty.
    """
    ordered = sorted(set(names))
    if not ordered:
        raise InputError("names: a merge needs at least one cluster id")
    return ordered[0], ordered[1:]


def pair(a: str, b: str) -> tuple[str, str]:
    """The unordered pair of two page ids in one canonical order."""
    return (a, b) if a <= b else (b, a)


@dataclass(frozen=True)
class Constraints:
    """What editors decided about page ids (``plugin.edit.corrections``), latest decision per pair.

    ``must_link`` lists the pairs that belong together, the latest decision
    first (applied in that order, so a newer decision wins a conflict);
    ``cannot_link`` the pairs that never share a cluster; ``representative``
    whether an editor made a page its story's representative (True) or chose
    another page (False); ``clusters`` the current cluster of the indexed
    pages named in the pairs (a realtime read), used to lift page constraints
    onto existing clusters.
    """

    must_link: tuple[tuple[str, str], ...] = ()
    cannot_link: frozenset[tuple[str, str]] = frozenset()
    representative: Mapping[str, bool] = field(default_factory=dict)
    clusters: Mapping[str, str] = field(default_factory=dict)

    def is_empty(self) -> bool:
        """Whether there is no constraint at all."""
        return not (self.must_link or self.cannot_link or self.representative)

    def cannot(self, a: str, b: str) -> bool:
        """Whether the two pages must never share a cluster."""
        return pair(a, b) in self.cannot_link

    def spanning(self, left: Iterable[str], right: Iterable[str]) -> tuple[str, str] | None:
        """A cannot-link pair with one page in ``left`` and the other in ``right``, or None."""
        left, right = set(left), set(right)
        for a, b in sorted(self.cannot_link):
            if (a in left and b in right) or (a in right and b in left):
                return a, b
        return None

    def split_clusters(self) -> set[str]:
        """The clusters (from ``clusters``) that hold both pages of a cannot-link pair."""
        return {
            self.clusters[a]
            for a, b in self.cannot_link
            if a in self.clusters and self.clusters[a] == self.clusters.get(b)
        }

    def within(self, pages: Iterable[str]) -> tuple[str, str] | None:
        """A cannot-link pair with both pages in ``pages``, or None."""
        pages = set(pages)
        for a, b in sorted(self.cannot_link):
            if a in pages and b in pages:
                return a, b
        return None


NO_CONSTRAINTS = Constraints()


def _by_similarity(edge: tuple[str, Match]) -> tuple[float, float, str, str]:
    pid, match = edge
    return (-match.similarity, -match.containment, pid, match.page_id)


@dataclass
class Decision:
    """Where each page of a batch goes and which clusters merge."""

    cluster_of: dict[str, str] = field(default_factory=dict)  # page id -> cluster id
    merges: dict[str, str] = field(default_factory=dict)  # losing cluster id -> surviving cluster id
    best: dict[str, Match] = field(default_factory=dict)  # page id -> most similar verified copy
    founders: dict[str, str] = field(default_factory=dict)  # new story's name -> the page that founds it

    def rename(self, name: str, new_name: str) -> None:
        """Give a new story another name (``plugin.fold.founding``: its founder's id names another story)."""
        self.founders[new_name] = self.founders.pop(name)
        for pid, cluster in self.cluster_of.items():
            if cluster == name:
                self.cluster_of[pid] = new_name


def decide(
    page_ids: Iterable[str],
    edges: Iterable[tuple[str, Match]],
    constraints: Constraints | None = None,
) -> Decision:
    """Assign clusters for a batch from verified matches.

    Args:
        page_ids: ids of the batch's pages being written.
        edges: (page id, match) for every verified copy, where the match is an
            existing indexed page or another page of the batch
            (``match.page_id`` in ``page_ids``; its ``cluster_id`` is ignored).
        constraints: editor corrections touching the batch and its
            candidates. Must-link partners (of the batch, or indexed) join
            the page's group first; then matches are applied from the most
            similar down, and a match that would put a cannot-link pair in one
            group (pages, or the existing clusters holding them) is skipped.

    Returns:
        The decision: each connected group of pages and existing clusters
        gets the smallest existing cluster id it touches, or, when it touches
        none, the smallest page id of the group (a new story, founded by
        that page; ``plugin.fold.batch`` renames it when the name is taken). Every other
        existing cluster of the group merges into that survivor. The rule is
        deterministic, so workers deciding concurrently agree. Without
        constraints every match joins its group, whatever the order.
    """
    page_ids = list(page_ids)
    edges = list(edges)
    rules = constraints or NO_CONSTRAINTS
    nodes = _Nodes.of(page_ids, edges, rules)
    groups = _join(page_ids, edges, rules, nodes)
    decision = Decision(best=_best_matches(edges, groups, nodes))
    _name_groups(groups, decision)
    return decision


@dataclass(frozen=True)
class _Nodes:
    """What :func:`decide` joins: ``("p", page id)`` for a page of the batch, ``("c", cluster id)`` for a story."""

    batch: frozenset[str]
    labels: Mapping[str, str]  # indexed page -> its cluster (as a match found it; the constraints' read wins)
    clusters: Mapping[str, str]  # indexed page -> its cluster, read with the constraints

    @classmethod
    def of(cls, page_ids: list[str], edges: list[tuple[str, Match]], rules: Constraints) -> _Nodes:
        batch = frozenset(page_ids)
        labels = {m.page_id: m.cluster_id for _, m in edges if m.page_id not in batch}
        labels.update({p: c for p, c in rules.clusters.items() if p not in batch})
        return cls(batch, labels, rules.clusters)

    def node(self, pid: str) -> tuple[str, str] | None:
        """A page's node: itself in the batch, else its story; None for a page that is not indexed."""
        if pid in self.batch:
            return ("p", pid)
        return ("c", self.labels[pid]) if pid in self.labels else None

    def target(self, match: Match) -> tuple[str, str]:
        """The node a match joins: a page of the batch, or the story the matched page is in."""
        if match.page_id in self.batch:
            return ("p", match.page_id)
        return ("c", self.clusters.get(match.page_id, match.cluster_id))


def _join(
    page_ids: list[str], edges: list[tuple[str, Match]], rules: Constraints, nodes: _Nodes
) -> ConstrainedUnion[tuple[str, str]]:
    """Group the batch's pages and the stories they touch: must-links first, then matches, most similar first.

    A union that would put a cannot-link pair (pages, or the stories holding them) in one group is skipped.
    """
    cannot = [(nodes.node(a), nodes.node(b)) for a, b in rules.cannot_link]
    groups = ConstrainedUnion((a, b) for a, b in cannot if a is not None and b is not None)
    for pid in page_ids:
        groups.find(("p", pid))
    for a, b in rules.must_link:
        na, nb = nodes.node(a), nodes.node(b)
        if na is not None and nb is not None and "p" in (na[0], nb[0]):
            groups.try_union(na, nb)
    for pid, match in sorted(edges, key=_by_similarity):
        groups.try_union(("p", pid), nodes.target(match))
    return groups


def _best_matches(
    edges: list[tuple[str, Match]], groups: ConstrainedUnion[tuple[str, str]], nodes: _Nodes
) -> dict[str, Match]:
    """Each page's most similar match in its own group."""
    best: dict[str, Match] = {}
    for pid, match in edges:
        if groups.find(("p", pid)) != groups.find(nodes.target(match)):
            continue  # kept apart by a cannot-link: not this page's copy
        found = best.get(pid)
        if found is None or (match.similarity, match.containment) > (found.similarity, found.containment):
            best[pid] = match
    return best


def _name_groups(groups: ConstrainedUnion[tuple[str, str]], decision: Decision) -> None:
    """Give each group holding pages of the batch its name (:func:`merge_survivor`); its other stories merge into it."""
    for members in groups.groups().values():
        clusters = sorted(c for kind, c in members if kind == "c")
        pages = sorted(p for kind, p in members if kind == "p")
        if not pages:
            continue  # an existing cluster no page of the batch joined
        if clusters:
            survivor, losers = merge_survivor(clusters)
        else:  # a new story, named after (and founded by) one of its pages
            survivor, losers = merge_survivor(pages)[0], []
            decision.founders[survivor] = survivor
        for pid in pages:
            decision.cluster_of[pid] = survivor
        for loser in losers:
            decision.merges[loser] = survivor


def recluster_labels(
    cluster_id: str,
    page_ids: Iterable[str],
    edges: Iterable[tuple[str, Match]],
    constraints: Constraints | None = None,
) -> dict[str, str]:
    """Split one cluster's pages into groups under editor constraints.

    Must-links between members are applied first (latest decision first),
    then verified edges from the most similar down; any union that would put
    a cannot-link pair in one group is skipped.

    Args:
        cluster_id: the cluster being split again.
        page_ids: its member pages.
        edges: (page id, match) for verified pairs of members.
        constraints: the constraints touching the members.

    Returns:
        page id -> cluster id. The group holding the page whose id is
        ``cluster_id`` keeps it (when no member has that id, the largest
        group does); every other group gets its smallest page id.
    """
    members = sorted(set(page_ids))
    inside = set(members)
    rules = constraints or NO_CONSTRAINTS
    uf = ConstrainedUnion((a, b) for a, b in rules.cannot_link if a in inside and b in inside)
    for pid in members:
        uf.find(pid)
    for a, b in rules.must_link:
        if a in inside and b in inside:
            uf.try_union(a, b)
    for pid, match in sorted(edges, key=_by_similarity):
        if pid in inside and match.page_id in inside:
            uf.try_union(pid, match.page_id)
    groups = sorted(sorted(g) for g in uf.groups().values())
    if not groups:
        return {}
    keeper = next((g for g in groups if cluster_id in g), None)
    if keeper is None:
        keeper = max(groups, key=len)  # the first of the largest: groups are sorted
    labels: dict[str, str] = {}
    for group in groups:
        for pid in group:
            labels[pid] = cluster_id if group is keeper else merge_survivor(group)[0]
    return labels
