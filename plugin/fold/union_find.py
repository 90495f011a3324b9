"""Disjoint sets (union-find) over hashable nodes, and the variant that keeps cannot-link pairs apart.

Bookkeeping only: which node roots a set says nothing about the name a story
keeps (that is ``plugin.fold.cluster.merge_survivor``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

#: a union-find node: a page id, or a ("p", page id) / ("c", cluster id) pair
Node = TypeVar("Node", bound=str | tuple[str, str])


class UnionFind(Generic[Node]):
    """Disjoint sets over hashable nodes."""

    def __init__(self) -> None:
        self.parent: dict[Node, Node] = {}

    def find(self, x: Node) -> Node:
        self.parent.setdefault(x, x)
        root = x
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[x] != root:
            self.parent[x], x = root, self.parent[x]
        return root

    def union(self, a: Node, b: Node) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)  # bookkeeping: a root never names a story (merge_survivor)

    def groups(self) -> dict[Node, list[Node]]:
        out: dict[Node, list[Node]] = {}
        for x in list(self.parent):
            out.setdefault(self.find(x), []).append(x)
        return out


class ConstrainedUnion(UnionFind[Node]):
    """Union-find that refuses a union putting a cannot-link pair into one set."""

    def __init__(self, cannot_link: Iterable[tuple[Node, Node]] = ()) -> None:
        super().__init__()
        self.members: dict[Node, set[Node]] = {}
        self.forbidden: dict[Node, set[Node]] = {}
        for a, b in cannot_link:
            if a != b:
                self.forbidden.setdefault(a, set()).add(b)
                self.forbidden.setdefault(b, set()).add(a)

    def find(self, x: Node) -> Node:
        if x not in self.parent:
            self.members[x] = {x}
        return super().find(x)

    def union(self, a: Node, b: Node) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            super().union(ra, rb)
            root, other = min(ra, rb), max(ra, rb)
            self.members[root] |= self.members.pop(other)

    def try_union(self, a: Node, b: Node) -> bool:
        """Join the sets of ``a`` and ``b`` unless a cannot-link pair would end in one; True when joined."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        small, large = sorted((self.members[ra], self.members[rb]), key=len)
        if any(self.forbidden.get(n, set()) & large for n in small):
            return False
        self.union(ra, rb)
        return True
