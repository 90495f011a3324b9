"""One cluster for the admin: its members with their scores and the evidence of each membership, and two of
its pages side by side.

The queries come from ``plugin.admin.admin_queries``; the scores from ``plugin.admin.evidence``
(estimates from the stored MinHash signatures, as the indexer computed them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from elasticsearch import Elasticsearch

from newsfold.plugin.admin import admin_queries
from newsfold.plugin.admin.evidence import (
    least_similar_pairs,
    membership_evidence,
    pair_scores,
    similarity_matrix,
)
from newsfold.plugin.fold.by_id import read_docs
from newsfold.plugin.fold.document import cluster_of, flat
from newsfold.plugin.ids import id_problem
from newsfold.plugin.settings import Settings
from newsfold.web.actions.search_results import decode_signature


@dataclass
class ClusterDetail:
    """A cluster's members with their scores, the pairwise matrix and the evidence of each membership."""

    cluster_id: str
    size: int
    members: list[dict]
    representative: dict
    matrix: list[list[float | None]]
    pairs: list[tuple[dict, dict, float]]
    sites: int

    @property
    def truncated(self) -> bool:
        return self.size > len(self.members)

    def member(self, page_id: str) -> dict | None:
        return next((m for m in self.members if m["id"] == page_id), None)


def _member(hit: Mapping) -> dict:
    src = flat(hit["_source"])
    out = {"id": hit["_id"], **src}
    out["representative"] = src.get("representative") is True
    out["signature_obj"] = decode_signature(src)
    out.pop("signature", None)
    return out


def load_cluster_detail(
    es: Elasticsearch,
    settings: Settings,
    cluster_id: str,
    *,
    limit: int = 200,
    pairs: int = 50,
    evidence: bool = True,
) -> ClusterDetail | None:
    """A cluster's members (the reference first, then by publication date; at most ``limit``), or None.

    The reference is the public story page's (``plugin.search.version_relations.reference_sort``): the
    page an editor made representative, else the first published, so the scores are relative to the same
    page on both sides.

    Each member gets its Jaccard and containment to the representative and
    the evidence of its membership: compared with the page it matched at
    ingest when that page is still in the cluster, else with its most
    similar fellow member (``evidence=False`` skips that work).
    """
    res = es.search(index=settings.index, **admin_queries.cluster_detail(cluster_id, size=limit))
    hits = res["hits"]["hits"]
    if not hits:
        return None
    members = [_member(h) for h in hits]  # the reference first: the query sorts as the public story page does
    signatures = [m["signature_obj"] for m in members]
    matrix = similarity_matrix(signatures)
    rep = members[0]
    by_id = {m["id"]: k for k, m in enumerate(members)}
    for k, m in enumerate(members):
        m["number"] = k + 1
        m["is_representative"] = k == 0
        m["jaccard"], m["containment"] = pair_scores(
            m["signature_obj"], rep["signature_obj"], weighted=settings.signature_kind == "weighted"
        )
        ref, m["reference_reason"] = _reference_of(k, by_id.get(m.get("matched_id") or ""), matrix)
        m["evidence"] = (
            membership_evidence(
                m,
                members[ref],
                settings,
                member_signature=m["signature_obj"],
                reference_signature=members[ref]["signature_obj"],
            )
            if ref is not None and evidence
            else None
        )
        m["reference"] = members[ref] if ref is not None else None
    pair_list = [(members[i], members[j], score) for i, j, score in least_similar_pairs(matrix, limit=pairs)]
    return ClusterDetail(
        cluster_id=cluster_id,
        size=int(res["hits"]["total"]["value"]),
        members=members,
        representative=rep,
        matrix=matrix,
        pairs=pair_list,
        sites=len({m.get("site") for m in members if m.get("site")}),
    )


def _reference_of(k: int, matched: int | None, matrix: list[list[float | None]]) -> tuple[int | None, str]:
    """Which member the ``k``-th is explained against, and why: the page it matched at ingest while that page is
    still in the cluster, else its most similar fellow member (None when it has none)."""
    if matched is not None and matched != k:
        return matched, "matched when ingested"
    others = [(matrix[k][x], x) for x in range(len(matrix)) if x != k and matrix[k][x] is not None]
    return (max(others)[1] if others else None), "most similar member shown"


@dataclass
class Comparison:
    """Two members of a cluster side by side: scores, evidence, word differences and shared passages."""

    a: dict
    b: dict
    jaccard: float | None
    containment: float | None
    unchanged_share: float
    left: list
    right: list
    evidence: object
    truncated: bool
    max_words: int


def _fetch_member(es: Elasticsearch, settings: Settings, cluster_id: str, page_id: str) -> dict:
    doc = read_docs(es, settings.index, [page_id], source=admin_queries.MEMBER_SOURCE)[0]
    if not doc.get("found") or cluster_of(doc.get("_source")) != cluster_id:
        raise LookupError(f"page {page_id!r} is not in cluster {cluster_id!r}")
    return _member(doc)


def load_comparison(
    es: Elasticsearch, settings: Settings, detail: ClusterDetail, a_id: str, b_id: str, *, max_words: int = 0
) -> Comparison:
    """Compare two pages of ``detail``'s cluster (pages beyond the loaded members are read by id).

    Raises:
        ValueError: both ids are the same, or one is missing.
        LookupError: a page is not in the cluster.
    """
    from newsfold.plugin.admin.text_compare import MAX_TEXT_WORDS, word_diff, words

    max_words = max_words or MAX_TEXT_WORDS
    if not a_id or not b_id:
        raise ValueError("give two pages to compare: ?a=<page id>&b=<page id>")
    if a_id == b_id:
        raise ValueError("choose two different pages to compare")
    for name, value in (("a", a_id), ("b", b_id)):
        if (problem := id_problem(value)) is not None:
            raise ValueError(f"{name} is not a page id: the id {problem}")
    a = detail.member(a_id) or _fetch_member(es, settings, detail.cluster_id, a_id)
    b = detail.member(b_id) or _fetch_member(es, settings, detail.cluster_id, b_id)
    left, right, unchanged = word_diff(a.get("body") or "", b.get("body") or "", max_words=max_words)
    j, c = pair_scores(a["signature_obj"], b["signature_obj"], weighted=settings.signature_kind == "weighted")
    evidence = membership_evidence(
        a, b, settings, member_signature=a["signature_obj"], reference_signature=b["signature_obj"], passages=5
    )
    truncated = any(
        len([w for w in words(m.get("body") or "", max_words=max_words + 1) if w != "\n"]) > max_words for m in (a, b)
    )
    return Comparison(
        a=a,
        b=b,
        jaccard=j,
        containment=c,
        unchanged_share=unchanged,
        left=left,
        right=right,
        evidence=evidence,
        truncated=truncated,
        max_words=max_words,
    )
