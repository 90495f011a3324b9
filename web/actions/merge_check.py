"""Before a merge: candidate stories found by searching, and a preview of what a merge would move.

A merge relabels every page of one story (the one ``merge_survivor`` lets go)
to the other's id, on the public site at once. The preview lists those pages
with their best similarity to a page of the other story (estimated from the
stored signatures, ``plugin.admin.evidence.pair_scores``); when no pair
reaches the copy threshold (``Settings.threshold``) the two stories are "not
similar" and the merge needs an explicit confirmation
(``web.actions.correction_requests``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from elasticsearch import Elasticsearch

from newsfold.plugin.admin import admin_queries
from newsfold.plugin.admin.evidence import pair_scores
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.cluster import merge_survivor
from newsfold.plugin.hits import COMPARE_SOURCE, PUBLIC_FIELDS
from newsfold.plugin.search.hits import read_versions
from newsfold.plugin.search.queries import collapsed_search
from newsfold.plugin.search.request import SearchRequest
from newsfold.plugin.settings import Settings

MAX_PREVIEW_PAGES = 200  # pages of each story read for the preview (the similarity is over these)
MAX_CANDIDATES = 10
#: what the preview reads of a page (no body: only the signatures are compared)
PREVIEW_SOURCE = [*PUBLIC_FIELDS, *(f"newsfold.{name}" for name in (*COMPARE_SOURCE, "token_count"))]


@dataclass
class MergePreview:
    """What merging ``other`` into the story of ``cluster_id`` (or the reverse) would do."""

    cluster_id: str
    other: str
    survivor: str
    loser: str
    threshold: float
    sizes: dict[str, int]
    moving: list[dict] = field(default_factory=list)  # pages of the loser, each with ``best`` and ``best_with``
    best: float | None = None

    @property
    def similar(self) -> bool:
        """Some pair of pages (of those read) is at or above the copy threshold."""
        return self.best is not None and self.best >= self.threshold

    @property
    def truncated(self) -> bool:
        return self.sizes[self.loser] > len(self.moving)


def _pages(es: Elasticsearch, settings: Settings, cluster_id: str) -> tuple[int, list[dict]]:
    body = {**admin_queries.cluster_detail(cluster_id, size=MAX_PREVIEW_PAGES), "_source": PREVIEW_SOURCE}
    res = es.search(index=settings.index, **body)
    pages = [{"id": page.id, "title": page.title, "site": page.site, "url": page.url, "signature_obj": page.signature}
             for page in read_versions(res.body)]  # fmt: skip
    return int(res["hits"]["total"]["value"]), pages


def merge_preview(es: Elasticsearch, settings: Settings, cluster_id: str, other: str) -> MergePreview:
    """Read both stories and score every moving page against the staying ones.

    Raises:
        LookupError: a story has no page (the message names it).
        ValueError: both ids are the same.
    """
    if cluster_id == other:
        raise InputError("a cluster cannot be merged with itself")
    survivor, (loser,) = merge_survivor((cluster_id, other))
    read = {c: _pages(es, settings, c) for c in (cluster_id, other)}
    for c, (total, _) in read.items():
        if not total:
            raise LookupError(f"unknown cluster {c!r}")
    weighted = settings.signature_kind == "weighted"
    moving, best = [], None
    for page in read[loser][1]:
        scores = [(pair_scores(page["signature_obj"], s["signature_obj"], weighted=weighted)[0], s)
                  for s in read[survivor][1]]  # fmt: skip
        known = [(j, s) for j, s in scores if j is not None]
        top = max(known, key=lambda t: t[0], default=(None, None))
        moving.append({**page, "best": top[0], "best_with": top[1]})
        if top[0] is not None and (best is None or top[0] > best):
            best = top[0]
    return MergePreview(
        cluster_id=cluster_id,
        other=other,
        survivor=survivor,
        loser=loser,
        threshold=settings.threshold,
        sizes={c: total for c, (total, _) in read.items()},
        moving=moving,
        best=best,
    )


def merge_candidates(es: Elasticsearch, settings: Settings, q: str, *, exclude: str) -> list[dict]:
    """Stories matching ``q`` (newsfold's own folded search, one hit per story), without ``exclude``.

    Raises:
        ValueError: the query is malformed or too long.
    """
    body = collapsed_search(SearchRequest(q=q, size=MAX_CANDIDATES + 1, representative_boost=0))
    out = []
    for page in read_versions(es.search(index=settings.index, **body).body):
        if page.cluster_id and page.cluster_id != exclude:
            out.append({"cluster_id": page.cluster_id, "id": page.id, "title": page.title, "site": page.site})
    return out[:MAX_CANDIDATES]
