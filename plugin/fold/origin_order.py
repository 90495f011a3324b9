"""The orders that decide a story's origin, declared once, read two ways.

Provenance decides a story's origin in the index (a sort, a terms aggregation's order:
``plugin.fold.provenance.origins_body``) and, for a story a batch founds, in memory before the batch writes
(``plugin.fold.provenance.story_origin``). Both must rank alike, ties and missing values included, so each order
is declared here once, as a tuple of :class:`By`, and both forms are made from it: :func:`sort_clauses` and
:func:`terms_order` for Elasticsearch, :func:`sort_key` for Python. To change a tie-break, edit the tuple.

- :data:`BELIEVED_FIRST`, :func:`earliest_first`: a story's versions, earliest first (its earliest version is
  its origin when no wire is agreed on; the story page's reference and first publisher start with
  :data:`BELIEVED_FIRST` too).
- :data:`WIRE_RANK`: the wires a story's versions credit, the :data:`MAX_WIRES` weighed first.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from newsfold.plugin.fold.document import FOLD_FIELDS, path
from newsfold.plugin.times import utc

Kind = Literal["boolean", "date", "keyword", "number"]


@dataclass(frozen=True)
class By:
    """One key of an order: a field (or a terms aggregation's ``_key``, ``_count`` or metric), its kind, its
    direction, and where documents without it go (``_last`` whatever the direction, as in Elasticsearch)."""

    field: str
    kind: Kind = "number"
    descending: bool = False
    missing: Literal["_first", "_last"] = "_last"


Order = tuple[By, ...]

#: what provenance believes (``plugin.fold.origin_rule``): in a story newsfold saw live, pages seen live before
#: archive-aged ones (false before true), then by believed time; undated pages and those written before fold
#: layout 6 (which hold neither field) last
BELIEVED_FIRST: Order = (By(path("archive_aged"), "boolean"), By(path("believed_time"), "date"))
#: the wires of a story weighed at most (a terms aggregation's size)
MAX_WIRES = 5
#: the wires a story's versions credit: most registrable domains, then most pages, then by name
WIRE_RANK: Order = (By("domains", descending=True), By("_count", descending=True), By("_key", "keyword"))


def earliest_first(time_field: str = "published") -> Order:
    """A story's versions, earliest first: :data:`BELIEVED_FIRST`, then the stated time (pages written before the
    believed time was), the ingest time and the URL key."""
    return (*BELIEVED_FIRST, By(time_field, "date"), By("ingested", "date"), By(path("url_key"), "keyword"))


def sort_clauses(order: Order) -> list[dict[str, Any]]:
    """The Elasticsearch sort of an order (``unmapped_type`` from its kind: an index without the field sorts)."""
    kinds = {"number": "long"}
    return [{b.field: {"order": "desc" if b.descending else "asc", "missing": b.missing,
                       "unmapped_type": kinds.get(b.kind, b.kind)}} for b in order]  # fmt: skip


def terms_order(order: Order) -> list[dict[str, str]]:
    """The ``order`` of a terms aggregation (its keys name ``_key``, ``_count`` or sub-aggregations)."""
    return [{b.field: "desc" if b.descending else "asc"} for b in order]


def sort_key(order: Order, value_of: Callable[[str], object]) -> tuple[Any, ...]:
    """A Python sort key that ranks as Elasticsearch does by ``order``; ``value_of(field)`` reads a value (None:
    missing; raise for a key it does not know, so an order naming one fails loudly)."""
    return tuple(_part(b, value_of(b.field)) for b in order)


def source_value(source: Mapping[str, Any]) -> Callable[[str], object]:
    """``value_of`` for :func:`sort_key` over a document's ``_source`` (dotted paths, as a sort names fields)."""

    def value_of(field: str) -> object:
        node: object = source
        for name in field.split("."):
            node = node.get(name) if isinstance(node, Mapping) else None
        return node

    return value_of


def _part(by: By, raw: object) -> tuple[int, Any]:
    value = _comparable(by, raw)
    if value is None:
        return (0 if by.missing == "_first" else 2, 0)
    return (1, _Reversed(value) if by.descending else value)


#: keyword fields longer than their mapping's ``ignore_above`` are not indexed: missing to a sort
_IGNORE_ABOVE = {path(name): int(m["ignore_above"]) for name, m in FOLD_FIELDS.items() if "ignore_above" in m}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _comparable(by: By, raw: object) -> Any:
    """A value as Elasticsearch compares it: booleans false first, dates in whole milliseconds, keywords by
    code point (the order of their UTF-8 bytes); None for a missing or unreadable value."""
    if raw is None:
        return None
    if by.kind == "boolean":
        return raw if isinstance(raw, bool) else {"true": True, "false": False}.get(str(raw))
    if by.kind == "date":
        when = utc(raw)
        return None if when is None else (when - _EPOCH) // dt.timedelta(milliseconds=1)
    if by.kind == "keyword":
        text = str(raw)
        chars = len(text.encode("utf-16-le")) // 2  # Elasticsearch counts a Java string's chars
        return None if chars > _IGNORE_ABOVE.get(by.field, chars) else text
    return raw


@functools.total_ordering
@dataclass(frozen=True)
class _Reversed:
    """A value that sorts the other way (a descending key)."""

    value: Any

    def __lt__(self, other: _Reversed) -> bool:
        return bool(other.value < self.value)
