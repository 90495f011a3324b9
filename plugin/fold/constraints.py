"""Reading editor corrections back as constraints on page ids.

The corrections index (``plugin.edit.corrections``) is an append-only log; each
correction decides something about pairs of pages (must-link, cannot-link,
or "released": an earlier cannot-link no longer holds) or about which page
represents its story. For every pair, and every page's representative flag,
the latest decision wins (ordered by the correction's time, then its id).

``plugin.fold.batch`` and ``plugin.fold.regroup`` read the constraints touching their
pages here; this module never imports either, nor ``plugin.edit.corrections``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from elasticsearch import Elasticsearch

from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.cluster import NO_CONSTRAINTS, Constraints, pair
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.fold.store import MAX_TERMS, current_labels
from newsfold.plugin.settings import Settings

log = logging.getLogger(__name__)

MAX_CORRECTIONS = 10_000  # corrections read per lookup
PAIR_FIELDS = (("must_link", "must"), ("cannot_link", "cannot"), ("released", "released"))

Decisions = dict[tuple[str, ...], tuple[tuple[str, str], object, str]]  # key -> ((at, id), value, correction id)


def decisions(docs: Iterable[Mapping[str, Any]], pages: set[str] | None = None) -> Decisions:
    """The latest decision on every pair and representative flag in some corrections.

    Args:
        docs: stored corrections (``_source`` with ``id``, ``at``, ``kind``
            and the decision fields).
        pages: when given, only decisions naming one of these pages are kept
            (every correction deciding such a pair names that page, so a
            lookup by page id sees all of them and the result is complete).

    Returns:
        ``("pair", a, b)`` -> ((at, id), "must" | "cannot" | "released", id)
        and ``("rep", page)`` -> ((at, id), True | False, id).
    """
    out: Decisions = {}
    for doc in sorted(docs, key=lambda d: (str(d.get("at") or ""), str(d.get("id") or ""))):
        order = (str(doc.get("at") or ""), str(doc.get("id") or ""))
        cid = str(doc.get("id") or "")
        for name, value in PAIR_FIELDS:
            for item in doc.get(name) or []:
                a, b = pair(str(item["a"]), str(item["b"]))
                if a != b and (pages is None or a in pages or b in pages):
                    out[("pair", a, b)] = (order, value, cid)
        kind = doc.get("kind")
        if kind in ("representative", "undo"):  # an undo names the pages it makes representative again apart
            chosen = doc.get("pages") if kind == "representative" else doc.get("representative")
            for page, flag in [(p, True) for p in chosen or []] + [
                (p, False) for p in doc.get("not_representative") or []
            ]:
                if pages is None or page in pages:
                    out[("rep", page)] = (order, flag, cid)
    return out


def resolve(docs: Iterable[Mapping[str, Any]], pages: set[str] | None = None) -> Constraints:
    """The constraints in force after some corrections (latest decision wins; no cluster labels)."""
    found = decisions(docs, pages)
    must = sorted(
        ((order, key[1], key[2]) for key, (order, value, _) in found.items() if key[0] == "pair" and value == "must"),
        reverse=True,
    )
    return Constraints(
        must_link=tuple((a, b) for _, a, b in must),
        cannot_link=frozenset(
            (key[1], key[2]) for key, (_, value, _) in found.items() if key[0] == "pair" and value == "cannot"
        ),
        representative={key[1]: bool(value) for key, (_, value, _) in found.items() if key[0] == "rep"},
    )


def fetch_corrections(page_ids: Iterable[str], *, client: Elasticsearch, settings: Settings) -> list[dict[str, Any]]:
    """The stored corrections naming any of ``page_ids`` (none when the index is missing).

    The corrections are written with ``refresh=wait_for``, so a search issued
    after a correction call returned sees it.
    """
    ids = sorted(set(page_ids))
    docs: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), MAX_TERMS):
        res = client.search(
            index=corrections_index(settings),
            ignore_unavailable=True,
            **lookups.corrections_touching(ids[start : start + MAX_TERMS], size=MAX_CORRECTIONS),
        )
        hits = res["hits"]["hits"]
        if len(hits) >= MAX_CORRECTIONS:
            log.warning("more than %d corrections touch %d pages; the oldest may be missed", MAX_CORRECTIONS, len(ids))
        for hit in hits:
            docs[hit["_id"]] = hit["_source"]
    return list(docs.values())


def load_constraints(
    page_ids: Iterable[str],
    *,
    client: Elasticsearch,
    settings: Settings,
    labels: bool = True,
    unlabelled: Iterable[str] = (),
) -> Constraints:
    """The constraints in force on pairs naming any of ``page_ids``.

    One terms query on the corrections index (cheap when it is empty or
    missing), then, when ``labels`` and a pair was found, one realtime
    ``mget`` of the current cluster of every page the pairs name.

    Args:
        page_ids: the pages whose constraints are wanted.
        client: an Elasticsearch client.
        settings: gives the articles alias and the corrections index.
        labels: whether to read the pages' current clusters.
        unlabelled: pages whose stored cluster is not wanted (a batch being
            re-decided).

    Returns:
        The constraints, with ``clusters`` filled when ``labels``.
    """
    ids = set(page_ids)
    if not ids:
        return NO_CONSTRAINTS
    rules = resolve(fetch_corrections(ids, client=client, settings=settings), ids)
    if rules.is_empty() or not labels:
        return rules
    named = {p for link in (*rules.must_link, *rules.cannot_link) for p in link} - set(unlabelled)
    clusters = current_labels(named, client=client, settings=settings) if named else {}
    return Constraints(rules.must_link, rules.cannot_link, rules.representative, clusters)
