"""Editor corrections: split a page out, merge two clusters, mark a pair "not duplicates", pick the representative.

Every correction is a document in the corrections index (the log: who, when,
what) and yields constraints on page ids, never only on cluster ids, so they
survive a reindex, where every page is ingested again and cluster ids change:

- split P out of cluster C: cannot-link P with every other member of C;
- not duplicates (a, b): cannot-link a-b;
- merge A and B: must-link one page of A with one of B, and release the
  earlier cannot-links between the two clusters' pages;
- representative P: P represents its story, the other members do not.

For each pair (and each page's representative flag) the latest decision
wins (``plugin.constraints``). A correction takes effect before the call
returns: it is written with ``refresh=wait_for``, then the cluster is split
again (``plugin.regroup.recluster``), relabelled or flagged, also with
``refresh=wait_for``. Ingest honours the constraints for later pages
(``plugin.batch.prepare`` and ``plugin.cluster.decide``). See
``docs/corrections.md``.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from dataclasses import dataclass, field

from elasticsearch import BadRequestError, ConflictError, Elasticsearch, NotFoundError

from newsfold.plugin import queries
from newsfold.plugin.cluster import pair
from newsfold.plugin.constraints import decisions, fetch_corrections, load_constraints
from newsfold.plugin.document import fold_update
from newsfold.plugin.index import corrections_index, corrections_index_body
from newsfold.plugin.regroup import MAX_RECLUSTER_PAGES, recluster, relabel
from newsfold.plugin.settings import Settings
from newsfold.plugin.store import bulk_write, cluster_page_ids, current_labels

__all__ = [
    "Correction",
    "CorrectionError",
    "corrections_index",
    "ensure_corrections_index",
    "list_corrections",
    "mark_not_duplicates",
    "merge_clusters",
    "reapply_corrections",
    "set_representative",
    "split_page",
]

log = logging.getLogger(__name__)

KINDS = ("split", "merge", "not_duplicates", "representative")
MAX_ID_CHARS = 512
MAX_USER_CHARS = 200
MAX_NOTE_CHARS = 2000
MAX_LOG_SIZE = 1000
MAX_LOG_WINDOW = 10_000  # from + size of a search
MARK_ATTEMPTS = 5


class CorrectionError(ValueError):
    """An invalid correction request (unknown page, same cluster, ...); the message says what."""


def _pairs(items) -> list[tuple[str, str]]:
    out = []
    for item in items or []:
        a, b = (item["a"], item["b"]) if isinstance(item, dict) else item
        out.append(pair(str(a), str(b)))
    return out


@dataclass
class Correction:
    """One logged editor decision and the page constraints it yields."""

    id: str
    kind: str  # "split" | "merge" | "not_duplicates" | "representative"
    pages: list[str]  # the pages the editor named
    clusters: list[str]  # the clusters involved, as they were
    user: str
    at: str  # ISO 8601, UTC
    note: str | None = None
    must_link: list[tuple[str, str]] = field(default_factory=list)
    cannot_link: list[tuple[str, str]] = field(default_factory=list)
    released: list[tuple[str, str]] = field(default_factory=list)  # earlier cannot-links this one lifts
    not_representative: list[str] = field(default_factory=list)
    superseded_by: list[str] = field(default_factory=list)  # later corrections that overrode some decision

    def as_dict(self) -> dict:
        """The correction as JSON-ready data (pairs as two-item lists)."""
        return {
            "id": self.id,
            "kind": self.kind,
            "pages": list(self.pages),
            "clusters": list(self.clusters),
            "user": self.user,
            "at": self.at,
            "note": self.note,
            "must_link": [list(p) for p in self.must_link],
            "cannot_link": [list(p) for p in self.cannot_link],
            "released": [list(p) for p in self.released],
            "not_representative": list(self.not_representative),
            "superseded_by": list(self.superseded_by),
        }

    def touches(self) -> list[str]:
        """Every page the correction decides something about (the field lookups search)."""
        named = set(self.pages) | set(self.not_representative)
        for link in (*self.must_link, *self.cannot_link, *self.released):
            named.update(link)
        return sorted(named)

    def document(self) -> dict:
        """The stored form (``mappings/corrections.json``)."""
        doc = self.as_dict()
        for name in ("must_link", "cannot_link", "released"):
            doc[name] = [{"a": a, "b": b} for a, b in getattr(self, name)]
        doc["touches"] = self.touches()
        return doc

    @classmethod
    def from_source(cls, src: dict) -> Correction:
        """Inverse of :meth:`document`."""
        return cls(
            id=str(src["id"]),
            kind=str(src["kind"]),
            pages=list(src.get("pages") or []),
            clusters=list(src.get("clusters") or []),
            user=str(src.get("user") or ""),
            at=str(src.get("at") or ""),
            note=src.get("note"),
            must_link=_pairs(src.get("must_link")),
            cannot_link=_pairs(src.get("cannot_link")),
            released=_pairs(src.get("released")),
            not_representative=list(src.get("not_representative") or []),
            superseded_by=list(src.get("superseded_by") or []),
        )


def ensure_corrections_index(client: Elasticsearch, settings: Settings) -> None:
    """Create the corrections index from ``mappings/corrections.json`` if it is missing.

    Args:
        client: an Elasticsearch client.
        settings: gives the index name (:func:`corrections_index`) and replicas.
    """
    name = corrections_index(settings)
    if client.indices.exists(index=name):
        return
    body = corrections_index_body(settings)
    try:
        client.indices.create(index=name, settings=body["settings"], mappings=body["mappings"])
    except BadRequestError as exc:
        if exc.error != "resource_already_exists_exception":  # another process created it first
            raise


# ------------------------------------------------------------------ validation
def _page_id(value, name: str = "page") -> str:
    if not isinstance(value, str) or not value.strip():
        raise CorrectionError(f"{name} must be a non-empty page id")
    value = value.strip()
    if len(value) > MAX_ID_CHARS:
        raise CorrectionError(f"{name} is {len(value)} characters long; ids have at most {MAX_ID_CHARS}")
    return value


def _user(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise CorrectionError("user is required: the log records who made each correction")
    value = value.strip()
    if len(value) > MAX_USER_CHARS or not value.isprintable():
        raise CorrectionError(f"user must be at most {MAX_USER_CHARS} printable characters")
    return value


def _note(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise CorrectionError("note must be text")
    value = value.strip()
    if len(value) > MAX_NOTE_CHARS:
        raise CorrectionError(f"the note has {len(value)} characters; the limit is {MAX_NOTE_CHARS}")
    return value or None


def _labels(page_ids: list[str], *, client: Elasticsearch, settings: Settings) -> dict[str, str]:
    """Realtime cluster ids of pages; an unknown page is a :class:`CorrectionError`."""
    labels = current_labels(page_ids, client=client, settings=settings)
    for pid in page_ids:
        if pid not in labels:
            raise CorrectionError(f"unknown page {pid!r}")
    return labels


def _check_size(cluster_id: str, members: list[str]) -> None:
    if len(members) > MAX_RECLUSTER_PAGES:
        raise CorrectionError(
            f"cluster {cluster_id!r} has {len(members)} pages; corrections can split at most {MAX_RECLUSTER_PAGES}"
        )


def _new(kind: str, *, user: str, note: str | None, pages: list[str], clusters: list[str], **links) -> Correction:
    # time first in the id: corrections made in the same millisecond still have an order
    cid = f"{time.time_ns():016x}-{uuid.uuid4().hex[:8]}"
    at = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    return Correction(id=cid, kind=kind, pages=pages, clusters=clusters, user=user, at=at, note=note, **links)


# ------------------------------------------------------------------ storage
def _record(correction: Correction, *, client: Elasticsearch, settings: Settings) -> None:
    """Write a correction (visible to searches on return) and mark the earlier ones it overrides."""
    ensure_corrections_index(client, settings)
    touched = correction.touches()
    earlier = decisions(fetch_corrections(touched, client=client, settings=settings), set(touched))
    overridden = set()
    for key, (_, value, _) in decisions([correction.document()]).items():
        prior = earlier.get(key)
        if prior is not None and prior[1] != value:
            overridden.add(prior[2])
    client.index(
        index=corrections_index(settings),
        id=correction.id,
        document=correction.document(),
        op_type="create",
        refresh="wait_for",
    )
    for old in sorted(overridden):
        _mark_superseded(old, correction.id, client=client, settings=settings)


def _mark_superseded(old_id: str, by: str, *, client: Elasticsearch, settings: Settings) -> None:
    """Add ``by`` to an earlier correction's ``superseded_by`` (for the log; decisions never read it)."""
    name = corrections_index(settings)
    for _ in range(MARK_ATTEMPTS):
        try:
            doc = client.get(index=name, id=old_id)
        except NotFoundError:
            return
        src = doc["_source"]
        marks = list(src.get("superseded_by") or [])
        if by in marks:
            return
        src["superseded_by"] = marks + [by]
        try:
            client.index(
                index=name,
                id=old_id,
                document=src,
                if_seq_no=doc["_seq_no"],
                if_primary_term=doc["_primary_term"],
                refresh="wait_for",
            )
            return
        except ConflictError:
            continue  # another correction marked it meanwhile: read again
    log.warning("could not mark correction %s as superseded by %s", old_id, by)


# ------------------------------------------------------------------ the four corrections
def split_page(
    page_id: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Take a page out of its cluster: it is not a copy of any other page there.

    Records a cannot-link between the page and every other current member,
    then reclusters: the other members stay together where they verify as
    copies without the page (a page that only linked through it may leave
    too). Later copies never bring the page back into their group.

    Args:
        page_id: the page to split out.
        user: who decides (recorded in the log).
        client: an Elasticsearch client.
        settings: the articles alias and the corrections index.
        note: an optional reason, kept in the log.

    Returns:
        The logged correction.

    Raises:
        CorrectionError: unknown page, a page alone in its cluster, a
            missing user, or a cluster too large to recluster.
    """
    page_id, user, note = _page_id(page_id), _user(user), _note(note)
    cluster = _labels([page_id], client=client, settings=settings)[page_id]
    members = cluster_page_ids([cluster], client=client, settings=settings)[cluster]
    others = sorted(m for m in members if m != page_id)
    if not others:
        raise CorrectionError(f"page {page_id!r} is alone in cluster {cluster!r}: there is nothing to split")
    _check_size(cluster, members)
    correction = _new(
        "split",
        user=user,
        note=note,
        pages=[page_id],
        clusters=[cluster],
        cannot_link=[pair(page_id, m) for m in others],
    )
    _record(correction, client=client, settings=settings)
    recluster(cluster, client=client, settings=settings)
    return correction


def merge_clusters(
    cluster_a: str, cluster_b: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Fold two clusters into one story; the smaller cluster id survives.

    Records a must-link between one page of each cluster (the page named
    like its cluster, else its smallest page id) and releases the earlier
    cannot-links between the two clusters' pages (they stay in the log,
    marked ``superseded_by``), then relabels.

    Args:
        cluster_a: one cluster id.
        cluster_b: the other.
        user: who decides (recorded in the log).
        client: an Elasticsearch client.
        settings: the articles alias and the corrections index.
        note: an optional reason, kept in the log.

    Returns:
        The logged correction.

    Raises:
        CorrectionError: the same cluster twice, an unknown cluster, or a
            missing user.
    """
    a, b = _page_id(cluster_a, "cluster_a"), _page_id(cluster_b, "cluster_b")
    user, note = _user(user), _note(note)
    if a == b:
        raise CorrectionError(f"clusters {a!r} and {b!r} are the same cluster")
    members = cluster_page_ids([a, b], client=client, settings=settings)
    for c in (a, b):
        if not members[c]:
            raise CorrectionError(f"unknown cluster {c!r}")
    anchors = [c if c in members[c] else min(members[c]) for c in (a, b)]
    rules = load_constraints(members[a] + members[b], client=client, settings=settings, labels=False)
    in_a, in_b = set(members[a]), set(members[b])
    released = sorted(p for p in rules.cannot_link if {p[0], p[1]} & in_a and {p[0], p[1]} & in_b)
    correction = _new(
        "merge",
        user=user,
        note=note,
        pages=anchors,
        clusters=[a, b],
        must_link=[pair(*anchors)],
        released=released,
    )
    _record(correction, client=client, settings=settings)
    survivor, loser = sorted((a, b))
    relabel(loser, survivor, client=client, settings=settings)
    return correction


def mark_not_duplicates(
    page_a: str, page_b: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Record that two pages are different stories; if they share a cluster, split it again.

    Args:
        page_a: one page id.
        page_b: the other.
        user: who decides (recorded in the log).
        client: an Elasticsearch client.
        settings: the articles alias and the corrections index.
        note: an optional reason, kept in the log.

    Returns:
        The logged correction.

    Raises:
        CorrectionError: the same page twice, an unknown page, a missing
            user, or a shared cluster too large to recluster.
    """
    a, b = _page_id(page_a, "page_a"), _page_id(page_b, "page_b")
    user, note = _user(user), _note(note)
    if a == b:
        raise CorrectionError(f"page {a!r} cannot be marked as not a duplicate of itself")
    labels = _labels([a, b], client=client, settings=settings)
    if labels[a] == labels[b]:
        _check_size(labels[a], cluster_page_ids([labels[a]], client=client, settings=settings)[labels[a]])
    correction = _new(
        "not_duplicates",
        user=user,
        note=note,
        pages=[a, b],
        clusters=list(dict.fromkeys([labels[a], labels[b]])),
        cannot_link=[pair(a, b)],
    )
    _record(correction, client=client, settings=settings)
    # read the labels again after the correction is visible: a concurrent merge is either seen here
    # or sees the correction itself (plugin.regroup.relabel checks before and after moving pages)
    now = current_labels([a, b], client=client, settings=settings)
    if now.get(a) is not None and now.get(a) == now.get(b):
        recluster(now[a], client=client, settings=settings)
    return correction


def set_representative(
    page_id: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Make a page the version shown for its story (``representative: true``; false on the other members).

    Args:
        page_id: the page to show.
        user: who decides (recorded in the log).
        client: an Elasticsearch client.
        settings: the articles alias and the corrections index.
        note: an optional reason, kept in the log.

    Returns:
        The logged correction.

    Raises:
        CorrectionError: unknown page or a missing user.
    """
    page_id, user, note = _page_id(page_id), _user(user), _note(note)
    cluster = _labels([page_id], client=client, settings=settings)[page_id]
    members = cluster_page_ids([cluster], client=client, settings=settings)[cluster]
    others = sorted(m for m in members if m != page_id)
    correction = _new(
        "representative", user=user, note=note, pages=[page_id], clusters=[cluster], not_representative=others
    )
    _record(correction, client=client, settings=settings)
    _set_flags({pid: pid == page_id for pid in [page_id, *others]}, client=client, settings=settings)
    return correction


def _set_flags(flags: dict[str, bool], *, client: Elasticsearch, settings: Settings) -> None:
    """Write ``representative`` on pages with ``refresh=wait_for`` (a page deleted meanwhile is skipped)."""
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": pid, "doc": fold_update(representative=flag)}
        for pid, flag in sorted(flags.items())
    ]
    bulk_write(client, actions, settings=settings, refresh="wait_for", what="setting representative flags")


def reapply_corrections(*, client: Elasticsearch, settings: Settings, since: str | None = None) -> int:
    """Apply the corrections logged since ``since`` to the index behind ``settings.index`` again.

    For a reindex: pages the new index received before a correction was made
    (while the rebuild ran) did not see it. Call this after the alias swap
    with a time before the rebuild started. For the pages those corrections
    touch, it reclusters any cluster holding a cannot-link pair, merges the
    clusters of must-linked pages (unless a cannot-link spans them) and sets
    the representative flags. Idempotent.

    Args:
        client: an Elasticsearch client.
        settings: the articles alias and the corrections index.
        since: ISO 8601 time; None re-applies every correction.

    Returns:
        How many clusters were split, merged or re-flagged.
    """
    touched: set[str] = set()
    after = None
    while True:
        body = queries.corrections_since(since, size=MAX_LOG_SIZE, search_after=after)
        hits = client.search(index=corrections_index(settings), ignore_unavailable=True, **body)["hits"]["hits"]
        for hit in hits:
            touched.update(hit["_source"].get("touches") or [])
        if len(hits) < MAX_LOG_SIZE:
            break
        after = hits[-1]["sort"]
    if not touched:
        return 0
    rules = load_constraints(touched, client=client, settings=settings)
    changed = 0
    for cluster_id in sorted(rules.split_clusters()):
        recluster(cluster_id, client=client, settings=settings)
        changed += 1
    for a, b in rules.must_link:  # latest first, as ingest applies them
        labels = current_labels([a, b], client=client, settings=settings)
        if a in labels and b in labels and labels[a] != labels[b]:
            survivor, loser = sorted((labels[a], labels[b]))
            changed += bool(relabel(loser, survivor, client=client, settings=settings))
    if rules.representative:
        _set_flags(dict(rules.representative), client=client, settings=settings)
        changed += sum(rules.representative.values())
    return changed


def list_corrections(
    *,
    client: Elasticsearch,
    settings: Settings,
    cluster_id: str | None = None,
    page_id: str | None = None,
    offset: int = 0,
    size: int = 50,
) -> tuple[int, list[Correction]]:
    """The corrections log, newest first.

    Args:
        client: an Elasticsearch client.
        settings: gives the corrections index.
        cluster_id: only corrections involving this cluster (as it was then).
        page_id: only corrections deciding something about this page.
        offset: corrections to skip.
        size: corrections to return (at most 1,000).

    Returns:
        (total matching, this page of corrections); (0, []) before the first correction.

    Raises:
        CorrectionError: offset or size out of range.
    """
    if offset < 0 or not 1 <= size <= MAX_LOG_SIZE or offset + size > MAX_LOG_WINDOW:
        raise CorrectionError(
            f"offset {offset} and size {size} are out of range (size 1-{MAX_LOG_SIZE}, "
            f"offset + size at most {MAX_LOG_WINDOW})"
        )
    body = queries.corrections_log(cluster_id=cluster_id, page_id=page_id, offset=offset, size=size)
    res = client.search(index=corrections_index(settings), ignore_unavailable=True, **body)
    total = int(res["hits"]["total"]["value"])
    return total, [Correction.from_source(hit["_source"]) for hit in res["hits"]["hits"]]
