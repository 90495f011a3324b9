"""The presence pre-filter: which band keys may exist in which index, so a lookup asks only for those.

Most pages of a news stream start new stories, and their band lookups
(``plugin.fold.candidates``) ask the engine for 128 keys that no page holds.
A :class:`Presence` keeps, per concrete index, a set of the band keys written
into it that answers "certainly absent" or "maybe present" (a Bloom filter in
Redis: ``newsfold.indexer.presence``). Before a lookup, :func:`prune` keeps
each page's keys that may exist in an index searched; a page left with fewer
than ``settings.min_bands`` of them in every index searched needs no lookup at
all. A dropped key matches no page, so the candidates and their scores are the
same as without the filter.

The protocol fails open for readers and closed for writers:

- a writer adds a page's keys to the filter of the index its write goes to
  *before* the write (:func:`record`), so a racing writer's reconcile, which
  reads the filter after its own write, finds it; an add that fails
  (:class:`PresenceUnavailable`) stops the batch before it writes anything;
- a reader that cannot reach the filter, or finds an index's filter not
  valid, asks for every key of that index. A filter is valid only if it has
  existed since its index was empty: :meth:`Presence.mark` starts it when
  newsfold creates the index (``ensure_index``, ``roll_over``, the period
  reindex). Indices created before the feature, or by a host, have no valid
  filter and are searched in full.

Every writer into an index whose filter is valid must pass the same presence
object (docs/embedding.md, "The presence pre-filter").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from newsfold.plugin.errors import NewsfoldError
from newsfold.plugin.fold.by_id import behind, route
from newsfold.plugin.sign.signed_page import SignedPage

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

log = logging.getLogger(__name__)


class PresenceUnavailable(NewsfoldError, RuntimeError):
    """The presence filter could not record a batch's band keys, so the batch wrote nothing: try it again."""


@runtime_checkable
class Presence(Protocol):
    """Per concrete index, a set of the band keys written into it (false positives allowed, no false negatives)."""

    def mark(self, index: str) -> None:
        """Start a valid filter for ``index``, which holds no page yet (called before newsfold creates it).

        Keys added before the mark stay; a filter never marked, or lost since
        its mark (evicted, expired, a restart of its store), is not valid.
        """

    def add(self, index: str, keys: Sequence[str]) -> None:
        """Record ``keys`` as written into ``index`` (before they are).

        Raises:
            PresenceUnavailable: the keys may not be recorded (the caller must not write).
        """

    def may_contain(self, indices: Sequence[str], keys: Sequence[str]) -> Mapping[str, Sequence[bool]]:
        """For each of ``indices`` whose filter is valid, one flag per key: False when the key is certainly not
        in that index. An index left out of the answer is searched for every key (fail open)."""


@dataclass(frozen=True)
class Plan:
    """What one page's lookup asks: its possible keys, in the indices where it may have a candidate."""

    keys: list[str]
    indices: tuple[str, ...]


def prune(
    pages: Sequence[SignedPage], indices: Sequence[str], *, presence: Presence, min_bands: int
) -> dict[str, Plan | None]:
    """Each page's lookup after the filter: a :class:`Plan`, or None for a page that needs no lookup.

    In an index with a valid filter, a page may have a candidate only if at
    least ``min_bands`` of its keys may be there; an index without one keeps
    every key. A page with no such index has no candidates. When the filter
    cannot be read at all, every page keeps every key in every index.
    """
    distinct = list(dict.fromkeys(k for p in pages for k in p.band_keys))
    try:
        flags = presence.may_contain(list(indices), distinct) if distinct else {}
    except Exception as exc:  # readers fail open: the filter only ever saves work
        log.warning("presence filter unreadable, looking up every key: %s", exc)
        flags = {}
    absent: dict[str, set[str]] = {}
    for index in indices:
        got = flags.get(index)
        if got is not None and len(got) == len(distinct):
            absent[index] = {k for k, maybe in zip(distinct, got, strict=True) if not maybe}
    plans: dict[str, Plan | None] = {}
    for p in pages:
        keys: set[str] = set()
        searched = []
        for index in indices:
            possible = set(p.band_keys) - absent.get(index, set())
            if len(possible) >= min_bands:
                searched.append(index)
                keys |= possible
        plans[p.page_id] = Plan([k for k in p.band_keys if k in keys], tuple(searched)) if searched else None
    return plans


def record(
    presence: Presence,
    pages: Sequence[SignedPage],
    actions: Sequence[dict[str, Any]],
    *,
    client: Elasticsearch,
    alias: str,
) -> list[dict[str, Any]]:
    """Add each page's band keys to the filter of the index its write goes to; the actions, each naming that index.

    Called before the batch's bulk write. Each action names its concrete
    index (``plugin.fold.by_id.route``; a new page: the write index as it is
    now), so a rollover between the add and the write cannot send the page
    to an index whose filter lacks its keys (the page goes to the index before,
    which the lookup window and the reconcile step still search).

    Raises:
        PresenceUnavailable: the filter could not record the keys (write nothing).
    """
    keys = {p.page_id: p.band_keys for p in pages}
    routed = route(client, actions)
    write = None
    out = []
    by_index: dict[str, list[str]] = {}
    for a in routed:
        if a["_index"] == alias:  # one index behind the name: route left it as it was
            write = write or behind(client, alias).write
            a = {**a, "_index": write}
        by_index.setdefault(a["_index"], []).extend(keys.get(a["_id"], ()))
        out.append(a)
    for index, wanted in sorted(by_index.items()):
        presence.add(index, list(dict.fromkeys(wanted)))
    return out
