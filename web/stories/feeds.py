"""Atom 1.0 feeds (RFC 4287) of story lists: one entry per story, never per page.

Pure: a list of :class:`FeedEntry` in, the feed document out. Built with
ElementTree, so every text is escaped; characters XML 1.0 cannot carry
(control characters from hostile pages) are dropped.
"""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from urllib.parse import quote

from newsfold.plugin.times import utc

ATOM = "http://www.w3.org/2005/Atom"
MIMETYPE = "application/atom+xml"
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def story_id(cluster_id: str) -> str:
    """The entry id of a story: the same in every feed and every time, whatever the story's title or size."""
    return "urn:newsfold:story:" + quote(cluster_id, safe="")


def rfc3339(value: str | dt.datetime | None) -> str | None:
    """An ISO 8601 time or date as an RFC 3339 UTC time (a bare date is its midnight UTC); None when unreadable."""
    when = utc(value)
    if when is None:
        return None
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def _clean(text: str | None) -> str:
    return _NOT_XML.sub("", text or "")


@dataclass(frozen=True)
class FeedEntry:
    """One story in a feed.

    Attributes:
        id: the story's entry id (:func:`story_id`).
        title: the story's headline.
        link: the story page's absolute URL.
        updated: its latest version's time (ISO 8601).
        published: its first version's time, if known.
        summary: a line of plain text (sites, pages, what versions add).
        author: who published the reference version (its site).
    """

    id: str
    title: str
    link: str
    updated: str | None
    published: str | None = None
    summary: str | None = None
    author: str | None = None


def atom_feed(*, title: str, self_url: str, page_url: str, entries: list[FeedEntry], subtitle: str | None = None,
              updated_fallback: str | None = None) -> bytes:  # fmt: skip
    """An Atom 1.0 feed document.

    Args:
        title: the feed's title.
        self_url: the feed's own URL (also its id, one query one feed: a relative one becomes a
            ``urn:newsfold:feed:`` id, since an Atom id is absolute).
        page_url: the HTML page the feed mirrors (absolute, or relative to the feed).
        entries: the stories, in the page's order.
        subtitle: a line saying what the list is.
        updated_fallback: the feed's ``updated`` when no entry has a time (else the newest entry's).

    Returns:
        The UTF-8 XML document.
    """
    ET.register_namespace("", ATOM)

    def sub(parent, tag, text=None, **attrs):
        element = ET.SubElement(parent, f"{{{ATOM}}}{tag}", {k: _clean(v) for k, v in attrs.items()})
        if text is not None:
            element.text = _clean(text)
        return element

    feed = ET.Element(f"{{{ATOM}}}feed")
    sub(feed, "id", self_url if "://" in self_url else "urn:newsfold:feed:" + quote(self_url, safe=""))
    sub(feed, "title", title)
    if subtitle:
        sub(feed, "subtitle", subtitle)
    times = [t for t in (rfc3339(e.updated) for e in entries) if t]
    fallback = rfc3339(updated_fallback) or rfc3339(_EPOCH)
    sub(feed, "updated", max(times) if times else fallback)
    sub(feed, "link", rel="self", type=MIMETYPE, href=self_url)
    sub(feed, "link", rel="alternate", type="text/html", href=page_url)
    sub(sub(feed, "author"), "name", "newsfold")
    sub(feed, "generator", "newsfold")
    for entry in entries:
        item = sub(feed, "entry")
        sub(item, "id", entry.id)
        sub(item, "title", entry.title or "(untitled)")
        sub(item, "link", rel="alternate", type="text/html", href=entry.link)
        sub(item, "updated", rfc3339(entry.updated) or fallback)
        if rfc3339(entry.published):
            sub(item, "published", rfc3339(entry.published))
        if entry.author:
            sub(sub(item, "author"), "name", entry.author)
        if entry.summary:
            sub(item, "summary", entry.summary)
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)
