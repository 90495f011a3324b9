"""The page's headline and publication date, read from its head.

trafilatura's own metadata pass (htmldate, authors, ...) costs as much as the
extraction itself; these few tags are all newsfold needs.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import TYPE_CHECKING

from lxml import etree

if TYPE_CHECKING:
    from lxml.html import HtmlElement

_TITLE_XPATHS = (
    "//meta[@property='og:title']/@content",
    "//meta[@name='twitter:title']/@content",
    "//title/text()",
    "//h1//text()",
)
# where a publication date is declared, best first: (attribute, value) of a <meta> whose content is the date
_DATE_METAS = (
    ("property", "article:published_time"),
    ("property", "og:published_time"),
    ("itemprop", "datePublished"),
    ("name", "date"),
    ("name", "pubdate"),
    ("name", "publish-date"),
    ("name", "dc.date"),
)
_DATE_RANK = {key: rank for rank, key in enumerate(_DATE_METAS)}
# every element that can carry a date, in one walk of the tree
_DATE_NODES = etree.XPath("//meta[@content]|//*[@datetime]")
_ISO_DATE = re.compile(
    r"((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
    r"(?:[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:[.,]\d+)?)?\s*(Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?"
)
_JSONLD_DATE = re.compile(r'"datePublished"\s*:\s*"([^"]+)"')


def page_title(tree: HtmlElement) -> str:
    """The page's headline from og:title, twitter:title, <title> or <h1>."""
    for xpath in _TITLE_XPATHS:
        for value in tree.xpath(xpath):
            value = " ".join(str(value).split())
            if value:
                return value[:500]
    return ""


def published_date(tree: HtmlElement, html: str) -> str | None:
    """The publication date from common meta tags or JSON-LD, if any: ``YYYY-MM-DD``, or a UTC time when the
    page gives the time of day (``2025-03-01T23:00:00Z``: a copy posted the same evening is not the origin).

    Meta tags in the order of :data:`_DATE_METAS`, then the ``datetime`` of an
    element marked ``itemprop="datePublished"``, then of a ``<time>``, then
    JSON-LD (a search over the page's text, so only when nothing else has a date).
    """
    ranked = []
    for n, el in enumerate(_DATE_NODES(tree)):
        if el.tag == "meta":
            rank = next(
                (
                    r
                    for attr in ("property", "itemprop", "name")
                    if (r := _DATE_RANK.get((attr, el.get(attr)))) is not None
                ),
                None,
            )
            value = el.get("content")
        else:
            rank = len(_DATE_METAS) if el.get("itemprop") == "datePublished" else None
            if rank is None and el.tag == "time":
                rank = len(_DATE_METAS) + 1
            value = el.get("datetime")
        if rank is not None and value:
            ranked.append((rank, n, value))
    for _rank, _n, value in sorted(ranked):
        m = _ISO_DATE.search(value)
        if m:
            return _iso(m)
    for value in _JSONLD_DATE.findall(html[:300_000]):
        m = _ISO_DATE.search(value)
        if m:
            return _iso(m)
    return None


def _iso(m: re.Match[str]) -> str:
    """A matched date as ``YYYY-MM-DD``, or with its time of day as a UTC ISO time (no zone given: UTC)."""
    day = f"{m.group(1)}-{m.group(2)}-{m.group(3)}"
    if m.group(4) is None:
        return day
    zone = m.group(7) or "Z"
    zone = "+00:00" if zone == "Z" else (zone if ":" in zone else f"{zone[:3]}:{zone[3:]}")
    try:
        when = dt.datetime.fromisoformat(f"{day}T{m.group(4)}:{m.group(5)}:{m.group(6) or '00'}{zone}")
    except ValueError:
        return day
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
