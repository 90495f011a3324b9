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

The reconcile lookup, made after the batch's own write, finds racing
writers. By then the page's own keys are in the filter of the index it was
written to, so there a :class:`RecurringPresence` answers a narrower
question: which keys more than one add brought (:meth:`~RecurringPresence.may_recur`).
A page whose keys nobody else added asks that index nothing. Sound without
any clock: of two racing pages, the second add finds the first's keys and
marks them recurring, and the page whose reconcile reads the filter last
reads it after both adds and after the other page's write was made visible,
so it looks up the shared keys and finds the other page, as the full
reconcile would.

Every writer into an index whose filter is valid must pass the same presence
object (docs/embedding.md, "The presence pre-filter").
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
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


@runtime_checkable
class RecurringPresence(Presence, Protocol):
    """A :class:`Presence` that also knows which keys were added to an index more than once (the reconcile's filter).

    ``add`` then counts every key it is given, a key given twice in one call twice.
    """

    def may_recur(self, indices: Sequence[str], keys: Sequence[str]) -> Mapping[str, Sequence[bool]]:
        """For each of ``indices`` whose recurrence filter is valid, one flag per key: False when at most one
        occurrence of the key was added to that index since its mark. The filter is not valid if any add since the
        mark found the index's presence filter not valid. An index left out of the answer: every key may recur."""


@dataclass(frozen=True)
class Plan:
    """What one page's lookup asks: its possible keys, in the indices where it may have a candidate."""

    keys: list[str]
    indices: tuple[str, ...]


def prune(
    pages: Sequence[SignedPage],
    indices: Sequence[str],
    *,
    presence: Presence,
    min_bands: int,
    written: Mapping[str, str] | None = None,
) -> dict[str, Plan | None]:
    """Each page's lookup after the filter: a :class:`Plan`, or None for a page that needs no lookup.

    In an index with a valid filter, a page may have a candidate only if at
    least ``min_bands`` of its keys may be there; an index without one keeps
    every key. A page with no such index has no candidates. When the filter
    cannot be read at all, every page keeps every key in every index.

    ``written`` (page id -> the index its keys were added to, by this batch's
    :func:`record`) is for the reconcile lookup: in that index the page keeps
    only its keys that may recur there (:class:`RecurringPresence`); with a
    presence that cannot tell, or an index whose recurrence filter is not
    valid, it keeps every key there.
    """
    distinct = list(dict.fromkeys(k for p in pages for k in p.band_keys))
    written = written if isinstance(presence, RecurringPresence) else None
    own = sorted(set(written.values()) & set(indices)) if written else []
    # an index every page was written into is asked only which keys recur
    others = [i for i in indices if i not in own or any(written and written.get(p.page_id) != i for p in pages)]
    absent = _absent(presence.may_contain, others, distinct)
    recurring = _absent(presence.may_recur, own, distinct) if isinstance(presence, RecurringPresence) else {}
    plans: dict[str, Plan | None] = {}
    for p in pages:
        keys: set[str] = set()
        searched = []
        for index in indices:
            mine = index in own and written is not None and written.get(p.page_id) == index
            gone = recurring.get(index, set()) if mine else absent.get(index, set())
            possible = set(p.band_keys) - gone
            if len(possible) >= min_bands:
                searched.append(index)
                keys |= possible
        plans[p.page_id] = Plan([k for k in p.band_keys if k in keys], tuple(searched)) if searched else None
    return plans


def _absent(
    read: Callable[[list[str], list[str]], Mapping[str, Sequence[bool]]], indices: list[str], keys: list[str]
) -> dict[str, set[str]]:
    """Per index with a valid answer from ``read`` (``may_contain`` or ``may_recur``), the keys flagged False."""
    try:
        flags = read(indices, keys) if keys and indices else {}
    except Exception as exc:  # readers fail open: the filter only ever saves work
        log.warning("presence filter unreadable, looking up every key: %s", exc)
        flags = {}
    out: dict[str, set[str]] = {}
    for index in indices:
        got = flags.get(index)
        if got is not None and len(got) == len(keys):
            out[index] = {k for k, maybe in zip(keys, got, strict=True) if not maybe}
    return out


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
        # every occurrence: a key two pages of the batch share recurs (RecurringPresence); a plain filter's add
        # is as cheap either way
        presence.add(index, wanted)
    return out
