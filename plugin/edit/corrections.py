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
wins (``plugin.fold.constraints``). A correction takes effect before the call
returns: it is logged pending with ``refresh=wait_for``, then the cluster is
split again (``plugin.fold.regroup.recluster``), relabelled or flagged, also
with ``refresh=wait_for`` (``plugin.edit.effects``), then marked done. A call
cut off in between is finished by the same call again (it finds the pending
correction and applies its effect, logging nothing new) or by
:func:`reapply_corrections`. Ingest honours the constraints for later pages
(``plugin.fold.batch.prepare`` and ``plugin.fold.cluster.decide``). See
``docs/corrections.md``.

Every correction takes ``user`` (who decides; recorded in the log, required),
``client`` (an Elasticsearch client), ``settings`` (the articles alias and
the corrections index) and an optional ``note`` (a reason, kept in the log),
and returns the logged :class:`Correction`.
"""

from __future__ import annotations

import logging

from elasticsearch import Elasticsearch

from newsfold.plugin.edit.correction_log import (
    MAX_LOG_SIZE,
    UNDO,
    Correction,
    CorrectionError,
    check_note,
    check_page_id,
    check_user,
    list_corrections,
    new_correction,
    pending_corrections,
    record_correction,
)
from newsfold.plugin.edit.effects import finish, set_flags
from newsfold.plugin.edit.undo import finish_undo
from newsfold.plugin.errors import InputError, refusals_as_server_errors
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.cluster import merge_survivor, pair
from newsfold.plugin.fold.constraints import load_constraints
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.fold.regroup import MAX_RECLUSTER_PAGES, recluster, relabel
from newsfold.plugin.fold.store import cluster_page_ids, current_labels
from newsfold.plugin.settings import Settings

log = logging.getLogger(__name__)

__all__ = [
    "Correction",
    "CorrectionError",
    "cut_off_correction",
    "list_corrections",
    "mark_not_duplicates",
    "merge_clusters",
    "reapply_corrections",
    "set_representative",
    "split_page",
]


def _labels(page_ids: list[str], *, client: Elasticsearch, settings: Settings) -> dict[str, str]:
    """Realtime cluster ids of pages; an unknown page is a :class:`CorrectionError`."""
    labels = current_labels(page_ids, client=client, settings=settings)
    for pid in page_ids:
        if pid not in labels:
            raise CorrectionError(f"unknown page {pid!r}")
    return labels


def cut_off_correction(
    kind: str, *, client: Elasticsearch, settings: Settings, **named: list[str]
) -> Correction | None:
    """A correction of ``kind`` naming the same ``pages`` (or ``clusters``) that was logged but not finished.

    The same call again finishes it; a caller that checks a request against the clusters first (the web's
    forms) asks here, since the cut-off correction may have moved the pages already.
    """
    for correction in pending_corrections(client=client, settings=settings, kind=kind):
        if all(sorted(getattr(correction, name)) == sorted(values) for name, values in named.items()):
            return correction
    return None


def _check_size(cluster_id: str, members: list[str]) -> None:
    if len(members) > MAX_RECLUSTER_PAGES:
        raise CorrectionError(
            f"cluster {cluster_id!r} has {len(members)} pages; corrections can split at most {MAX_RECLUSTER_PAGES}"
        )


# ------------------------------------------------------------------ the four corrections
@refusals_as_server_errors("split_page")
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
        user, client, settings, note: as for every correction (module docstring).

    Raises:
        CorrectionError: unknown page, a page alone in its cluster, a
            missing user, or a cluster too large to recluster.
    """
    page_id, user, note = check_page_id(page_id), check_user(user), check_note(note)
    cut_off = cut_off_correction("split", client=client, settings=settings, pages=[page_id])
    if cut_off is not None:
        return finish(cut_off, client=client, settings=settings)
    cluster = _labels([page_id], client=client, settings=settings)[page_id]
    members = cluster_page_ids([cluster], client=client, settings=settings)[cluster]
    others = sorted(m for m in members if m != page_id)
    if not others:
        raise CorrectionError(f"page {page_id!r} is alone in cluster {cluster!r}: there is nothing to split")
    _check_size(cluster, members)
    correction = new_correction(
        "split",
        user=user,
        note=note,
        pages=[page_id],
        clusters=[cluster],
        cannot_link=[pair(page_id, m) for m in others],
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, client=client, settings=settings)


@refusals_as_server_errors("merge_clusters")
def merge_clusters(
    cluster_a: str, cluster_b: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Fold two clusters into one story; the survivor is as ``plugin.fold.cluster.merge_survivor`` says.

    Records a must-link between one page of each cluster (the page named
    like its cluster, else its smallest page id) and releases the earlier
    cannot-links between the two clusters' pages (they stay in the log,
    marked ``superseded_by``), then relabels.

    Args:
        cluster_a, cluster_b: the two clusters, in either order.
        user, client, settings, note: as for every correction (module docstring).

    Raises:
        CorrectionError: the same cluster twice, an unknown cluster, or a
            missing user.
    """
    a, b = check_page_id(cluster_a, "cluster_a"), check_page_id(cluster_b, "cluster_b")
    user, note = check_user(user), check_note(note)
    if a == b:
        raise CorrectionError(f"clusters {a!r} and {b!r} are the same cluster")
    cut_off = cut_off_correction("merge", client=client, settings=settings, clusters=[a, b])
    if cut_off is not None:
        return finish(cut_off, client=client, settings=settings)
    members = cluster_page_ids([a, b], client=client, settings=settings)
    for c in (a, b):
        if not members[c]:
            raise CorrectionError(f"unknown cluster {c!r}")
    anchors = [c if c in members[c] else min(members[c]) for c in (a, b)]
    rules = load_constraints(members[a] + members[b], client=client, settings=settings, labels=False)
    in_a, in_b = set(members[a]), set(members[b])
    released = sorted(p for p in rules.cannot_link if {p[0], p[1]} & in_a and {p[0], p[1]} & in_b)
    correction = new_correction(
        "merge",
        user=user,
        note=note,
        pages=anchors,
        clusters=[a, b],
        must_link=[pair(*anchors)],
        released=released,
        before={c: sorted(members[c]) for c in (a, b)},  # what an undo restores (plugin.edit.undo)
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, client=client, settings=settings)


@refusals_as_server_errors("mark_not_duplicates")
def mark_not_duplicates(
    page_a: str, page_b: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Record that two pages are different stories; if they share a cluster, split it again.

    Args:
        page_a, page_b: the two pages, in either order.
        user, client, settings, note: as for every correction (module docstring).

    Raises:
        CorrectionError: the same page twice, an unknown page, a missing
            user, or a shared cluster too large to recluster.
    """
    a, b = check_page_id(page_a, "page_a"), check_page_id(page_b, "page_b")
    user, note = check_user(user), check_note(note)
    if a == b:
        raise CorrectionError(f"page {a!r} cannot be marked as not a duplicate of itself")
    cut_off = cut_off_correction("not_duplicates", client=client, settings=settings, pages=[a, b])
    if cut_off is not None:
        return finish(cut_off, client=client, settings=settings)
    labels = _labels([a, b], client=client, settings=settings)
    before = {}
    if labels[a] == labels[b]:
        before = {labels[a]: sorted(cluster_page_ids([labels[a]], client=client, settings=settings)[labels[a]])}
        _check_size(labels[a], before[labels[a]])
    correction = new_correction(
        "not_duplicates",
        user=user,
        note=note,
        pages=[a, b],
        clusters=list(dict.fromkeys([labels[a], labels[b]])),
        cannot_link=[pair(a, b)],
        before=before,  # the shared cluster's pages: whose stories' origins the split decides again
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, client=client, settings=settings)


@refusals_as_server_errors("set_representative")
def set_representative(
    page_id: str, *, user: str, client: Elasticsearch, settings: Settings, note: str | None = None
) -> Correction:
    """Make a page the version shown for its story (``representative: true``; false on the other members), and
    its origin: its wire when it credits one, else its site, whatever is ingested later.

    Args:
        page_id: the page to show.
        user, client, settings, note: as for every correction (module docstring).

    Raises:
        CorrectionError: unknown page or a missing user.
    """
    page_id, user, note = check_page_id(page_id), check_user(user), check_note(note)
    cut_off = cut_off_correction("representative", client=client, settings=settings, pages=[page_id])
    if cut_off is not None:
        return finish(cut_off, client=client, settings=settings)
    cluster = _labels([page_id], client=client, settings=settings)[page_id]
    members = cluster_page_ids([cluster], client=client, settings=settings)[cluster]
    others = sorted(m for m in members if m != page_id)
    correction = new_correction(
        "representative", user=user, note=note, pages=[page_id], clusters=[cluster], not_representative=others
    )
    record_correction(correction, client=client, settings=settings)
    return finish(correction, client=client, settings=settings)


@refusals_as_server_errors("reapply_corrections")
def reapply_corrections(*, client: Elasticsearch, settings: Settings, since: str | None = None) -> int:
    """Finish every correction left pending, then apply those logged since ``since`` to ``settings.index`` again.

    A correction (or an undo) cut off after it was logged, by a failed
    request or a node restarting, is pending: its effect is applied here
    (oldest first) and it is marked done, whatever its time.

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
        How many pending corrections were finished, plus how many clusters were split, merged or re-flagged.
    """
    changed = _finish_pending(client=client, settings=settings)
    touched: set[str] = set()
    after = None
    while True:
        body = lookups.corrections_since(since, size=MAX_LOG_SIZE, search_after=after)
        hits = client.search(index=corrections_index(settings), ignore_unavailable=True, **body)["hits"]["hits"]
        for hit in hits:
            touched.update(hit["_source"].get("touches") or [])
        if len(hits) < MAX_LOG_SIZE:
            break
        after = hits[-1]["sort"]
    if not touched:
        return changed
    rules = load_constraints(touched, client=client, settings=settings)
    for cluster_id in sorted(rules.split_clusters()):
        try:
            recluster(cluster_id, client=client, settings=settings)
        except InputError as exc:  # too large to recluster: as on the ingest path, the rest goes on
            log.warning("cluster %s holds a cannot-link pair but was not split again: %s", cluster_id, exc)
            continue
        changed += 1
    for a, b in rules.must_link:  # latest first, as ingest applies them
        labels = current_labels([a, b], client=client, settings=settings)
        if a in labels and b in labels and labels[a] != labels[b]:
            survivor, (loser,) = merge_survivor((labels[a], labels[b]))
            changed += bool(relabel(loser, survivor, client=client, settings=settings))
    if rules.representative:
        set_flags(dict(rules.representative), client=client, settings=settings)
        changed += sum(rules.representative.values())
    return changed


def _finish_pending(*, client: Elasticsearch, settings: Settings) -> int:
    """Finish every correction and undo left pending, oldest first; returns how many were finished."""
    finished = 0
    for cut_off in pending_corrections(client=client, settings=settings):
        try:
            if cut_off.kind == UNDO:
                finish_undo(cut_off, client=client, settings=settings)
            else:
                finish(cut_off, client=client, settings=settings)
        except InputError as exc:  # e.g. its cluster grew too large to recluster: the others are still finished
            log.warning("correction %s stays pending: %s", cut_off.id, exc)
            continue
        finished += 1
    return finished
