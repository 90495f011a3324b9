"""What provenance believes of a page, and the rule that decides a story's origin from it: pure, no client.

Provenance is a ranking signal (``originals=1``, ``nowire=1``, the syndication figures), so no one site
may forge it. Three things a page says are claims, and each is weighed here:

- **its credit** (``wire``, read at extraction): it says something about the page that carries it, not
  about the story. A story is a wire story when **independent sites** agree on the wire (registrable
  domains, :func:`~newsfold.plugin.urls.registrable_domain`; pages and ids add nothing), each site
  weighing :data:`VISIBLE` (a dateline, a credit line, a byline) or :data:`INVISIBLE` (metadata a reader
  never sees) by its best credit, and the agreement reaching :data:`QUORUM`. A wire fewer sites credit
  counts only when the story's earliest version itself credits it: one late copy's credit never
  overrides an earlier original that credits no one.
- **its time** (:func:`believed_time`): a date before 1990 or more than a day after newsfold first saw
  the page (its first write, kept by a re-ingest of changed content) is no date. A page may claim to be
  older than its first sighting by at most :data:`SIGHTING_BOUND`, unless it was first seen more than
  :data:`ARCHIVE_AGE` after the time it claims (an archive page: nothing newsfold observed says
  otherwise); and in a story newsfold saw live (some page first seen within :data:`ARCHIVE_AGE` of its
  claimed time) such an archive-aged page comes after every page seen live
  (``plugin.fold.origin_order.BELIEVED_FIRST``), since what was seen live contradicts it.
- **its site**: counted by registrable domain, so subdomains of one publisher are one site.

An editor overrides all of it: the version an editor made the story's representative is its origin (its
wire when it credits one, else its site), whatever is ingested later.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from newsfold.plugin.times import utc

#: publication times believed: from this day on, and up to a day after the page was first seen
EARLIEST_PLAUSIBLE = dt.datetime(1990, 1, 1, tzinfo=dt.UTC)
FUTURE_SLACK = dt.timedelta(days=1)
#: how much older than its first sighting a page may claim to be (a crawler's delay)
SIGHTING_BOUND = dt.timedelta(hours=2)
#: a page first seen this long after the time it claims is an archive page: its claim stands
ARCHIVE_AGE = dt.timedelta(days=2)
#: credits a reader sees, and credits in metadata only (``Article.wire_by``)
VISIBLE_SOURCES = ("dateline", "credit line", "byline")
VISIBLE, INVISIBLE = 1.0, 0.5
#: the weight of independent sites that makes a story a wire story
QUORUM = 2.0


def iso(when: dt.datetime) -> str:
    """A UTC time as ISO 8601 with milliseconds and ``Z``."""
    return when.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def plausible(when: dt.datetime | None, *, seen: dt.datetime) -> bool:
    """Whether a claimed time is believable at all: from 1990 to a day after the page was first seen."""
    return when is not None and EARLIEST_PLAUSIBLE <= when <= seen + FUTURE_SLACK


def believed_time(claimed: object, *, seen: object) -> tuple[str | None, bool]:
    """``(the page's time for provenance, whether it is archive-aged)`` from the time it claims and its sighting.

    The time is the claim, but never more than :data:`SIGHTING_BOUND` before ``seen`` unless the page is
    archive-aged (first seen more than :data:`ARCHIVE_AGE` after its claim), and None for an implausible
    or unreadable claim (the page is undated for provenance).
    """
    seen_at = utc(seen) or dt.datetime.now(dt.UTC)
    when = utc(claimed)
    if when is None or not plausible(when, seen=seen_at):
        return None, False
    if seen_at - when > ARCHIVE_AGE:
        return iso(when), True
    return iso(max(when, seen_at - SIGHTING_BOUND)), False


def weight(wire_by: str | None) -> float:
    """What one site's credit weighs: a visible credit more than metadata."""
    return VISIBLE if (wire_by or "") in VISIBLE_SOURCES else INVISIBLE


@dataclass(frozen=True)
class Version:
    """A version as the rule reads it: its id, its site and the wire it credits."""

    id: str
    site: str | None
    wire: str | None


@dataclass(frozen=True)
class Wire:
    """A wire some versions credit: the weight of the sites crediting it, and its earliest crediting version."""

    name: str
    support: float
    first: Version | None


def support(sites: int, visible_sites: int) -> float:
    """The weight of ``sites`` independent sites crediting a wire, ``visible_sites`` of them visibly."""
    visible = min(max(0, visible_sites), max(0, sites))
    return visible * VISIBLE + (max(0, sites) - visible) * INVISIBLE


def decide(
    *, chosen: Version | None, earliest: Version | None, wires: list[Wire]
) -> dict[str, Any] | None:
    """A story's origin ``{"origin_wire", "origin_site", "origin_id"}`` (None: no version).

    Args:
        chosen: the version an editor made representative (it decides).
        earliest: the earliest version by believed time (see the module docstring).
        wires: the wires its versions credit, each with its sites' support and earliest crediting version.
    """
    if chosen is not None:
        return _of(chosen, chosen.wire)
    agreed = sorted((w for w in wires if w.support >= QUORUM and w.first), key=lambda w: (-w.support, w.name))
    if agreed:
        return _of(agreed[0].first, agreed[0].name)
    if earliest is None:
        return None
    return _of(earliest, earliest.wire)  # the earliest version's own credit, or its site


def _of(version: Version | None, wire: str | None) -> dict[str, Any] | None:
    if version is None:
        return None
    if wire:
        return {"origin_wire": wire, "origin_site": None, "origin_id": version.id}
    return {"origin_wire": None, "origin_site": version.site, "origin_id": version.id}
