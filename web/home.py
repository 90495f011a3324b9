"""The home page that leads with news: the window that fills a page, and the sections as tabs and filters.

- :func:`filling_window`: without a ``window`` argument, top stories take the
  narrowest window (24 hours, 7 days, 30 days, all) that holds a page of
  stories, so the home page is full whatever the size or the age of the
  corpus. The list is ranked by coverage, ties going to the newest story: when
  few stories have several sites, the newest come next.
- :func:`section_choices`: the sections the pages declare (``section``, read
  at ingest by ``plugin.extract.section``), counted in stories, for the tabs
  above top stories and the section filter of a search.

The rule is described in docs/stories.md ("The home page" and "Sections").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from elasticsearch import Elasticsearch

from newsfold.plugin.fold.document import CLUSTER_ID
from newsfold.plugin.search.queries import search_facets, story_buckets, with_story_counts
from newsfold.plugin.search.story_queries import WINDOWS, window_filter
from newsfold.plugin.settings import Settings
from newsfold.web.validation import filter_text

#: the most sections offered as tabs (the most covered first); a chosen one is always offered
MAX_SECTIONS = 8


def section_arg(args: Mapping[str, str]) -> str | None:
    """The ``section`` argument, checked like the other filters and lower-cased (sections are stored so).

    Raises:
        ValueError: a value the filters refuse (too long, control characters; the message says which).
    """
    value = filter_text(args.get("section"), "section")
    return value.lower() if value else None


def section_filters(section: str | None) -> list[dict[str, Any]]:
    """The filter clause of a section (none without one)."""
    return [{"term": {"section": section}}] if section else []


def filling_window(
    es: Elasticsearch,
    settings: Settings,
    filters: Sequence[dict[str, Any]],
    *,
    anchor_ms: int | None,
    time_field: str,
    want: int,
) -> str:
    """The narrowest window of :data:`WINDOWS` holding at least ``want`` stories under ``filters`` (``all`` when
    none does, or when the index has no dates): one ``msearch`` of a story count per bounded window."""
    bounded = [name for name, span in WINDOWS.items() if span is not None]
    if anchor_ms is None:
        return "all"
    searches: list[dict[str, Any]] = []
    for name in bounded:
        query = {"bool": {"filter": [*window_filter(name, anchor_ms=anchor_ms, time_field=time_field), *filters]}}
        searches += [{"index": settings.index}, {"size": 0, "query": query, "aggs": _STORIES}]
    for name, res in zip(bounded, es.msearch(searches=searches)["responses"], strict=True):
        if int(((res.get("aggregations") or {}).get("stories") or {}).get("value") or 0) >= want:
            return name
    return "all"


_STORIES = {"stories": {"cardinality": {"field": CLUSTER_ID, "precision_threshold": 40000}}}


def top_section_choices(
    es: Elasticsearch, settings: Settings, filters: Sequence[dict[str, Any]], *, chosen: str | None
) -> list[tuple[str, int]]:
    """The sections of the pages a top-stories list counts (``filters``: its window, site and language, not its
    section), the most covered first."""
    return _choices(es, settings, {"size": 0, "query": {"bool": {"filter": list(filters)}}}, chosen=chosen)


def search_section_choices(
    es: Elasticsearch, settings: Settings, q: str, *, days: tuple[str | None, str | None], chosen: str | None
) -> list[tuple[str, int]]:
    """The sections of the pages a search matches (its query and days), the most covered first."""
    body = search_facets(q, date_from=days[0], date_to=days[1])
    body.pop("aggs", None)
    return _choices(es, settings, body, chosen=chosen)


def _choices(
    es: Elasticsearch, settings: Settings, body: dict[str, Any], *, chosen: str | None
) -> list[tuple[str, int]]:
    body["aggs"] = with_story_counts({"sections": {"terms": {"field": "section", "size": MAX_SECTIONS}}})
    res = es.search(index=settings.index, body=body)
    buckets = story_buckets((res.get("aggregations") or {}).get("sections") or {})
    found = [(str(b["key"]), int(b["stories"])) for b in buckets]
    found.sort(key=lambda item: (-item[1], item[0]))
    if chosen and chosen not in {key for key, _ in found}:
        found.append((chosen, 0))
    return found


def section_label(section: str) -> str:
    """How a section is shown: ``world-news`` -> ``World news``."""
    words = section.replace("-", " ")
    return words[:1].upper() + words[1:]
