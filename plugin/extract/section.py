"""The section a page belongs to (politics, business, sport ...), from what the page declares.

Where a section is read, first found wins (docs/stories.md, "Sections"):

1. the page's ``<meta property="article:section">``;
2. its JSON-LD ``articleSection`` (the first one);
3. a section given with the page from outside (a feed's category);
4. the site's section in the URL path: the first folder of the path that is
   shaped like a section name (``/politics/2025/03/a-slug-123`` -> ``politics``).

Every value is normalised the same way (:func:`normalise_section`): lower
case, words joined by ``-``, at most :data:`MAX_WORDS` words. Values that
name no section (``news``, ``blog``, ``uncategorized``, a URL) are none. In the
path, the last segment (the page itself), language codes, containers
(``article``, ``category``, ``tag`` ...) and anything holding a digit (dates,
ids) are passed over; a segment counts when it is a short run of lower-case
letters, up to :data:`MAX_WORDS` words joined by ``-`` (a slug has more). A
section that only repeats the site's name (``treehugger`` on treehugger.com) is
none, and the next place is read.
"""

from __future__ import annotations

import html as htmllib
import json
import re
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from lxml.html import HtmlElement

#: a section name has at most this many words (a longer value or path segment is a title or a slug)
MAX_WORDS = 3
#: ... and at most this many characters
MAX_CHARS = 32
#: values that name no section: the whole site, a kind of page, a placeholder
GENERIC = frozenset(
    """news all home homepage home-page front-page frontpage index main latest top featured general uncategorized
    uncategorised default misc other others blog blogs post posts article articles story stories content contents
    page pages item items detail details view read amp html www section sections category categories topic topics
    tag tags archive archives default-category none null undefined""".split()
)
#: path segments that are a language or a region: passed over
_LANGUAGE = re.compile(r"(?:en|de|fr|es|it|pt|nl|ru|zh|ja|ko|ar|pl|sv|tr)(?:-[a-z]{2,4})?")
_SEGMENT = re.compile(rf"[a-z]{{2,}}(?:-[a-z]+){{0,{MAX_WORDS - 1}}}")
_JSONLD = re.compile(r'"articleSection"\s*:\s*(\[[^\]]*\]|"(?:[^"\\]|\\.)*")')
_DROPPED = re.compile(r"[.'’`´]")  # "U.S." is "us", "Buyer's guides" "buyers-guides"
_SEPARATOR = re.compile(r"[\W_]+")


def normalise_section(value: object) -> str | None:
    """A declared section as stored: lower case, words joined by ``-`` (``"World News"`` -> ``world-news``).

    Of a list of sections (``"Politics, Elections"``), the first. None for a value that names no section
    (:data:`GENERIC`), a URL, or one over :data:`MAX_WORDS` words or :data:`MAX_CHARS` characters.
    """
    if not isinstance(value, str):
        return None
    text = htmllib.unescape(value).strip()
    if not text or "://" in text or text.startswith("/"):
        return None
    first = re.split(r"[,;|>/]", text, maxsplit=1)[0]
    words = [w for w in _SEPARATOR.split(_DROPPED.sub("", first.lower())) if w]
    name = "-".join(words)
    if not words or len(words) > MAX_WORDS or len(name) > MAX_CHARS or name in GENERIC:
        return None
    return name


def url_section(url: str | None) -> str | None:
    """The site's section in a URL's path: the first folder shaped like a section name (None if none is)."""
    if not url:
        return None
    try:
        path = urlsplit(url if "//" in url else "//" + url).path
    except ValueError:
        return None
    segments = [unquote(s).lower() for s in path.split("/") if s]
    for segment in segments[:-1]:  # the last one names the page itself
        if any(c.isdigit() for c in segment) or segment in GENERIC or _LANGUAGE.fullmatch(segment):
            continue
        if len(segment) <= MAX_CHARS and _SEGMENT.fullmatch(segment):
            return segment
    return None


def declared_section(tree: HtmlElement, html: str) -> str | None:
    """The section the page's markup declares: ``article:section``, then JSON-LD ``articleSection``."""
    for value in tree.xpath("//meta[@property='article:section' or @name='article:section']/@content"):
        if name := normalise_section(str(value)):
            return name
    for raw in _JSONLD.findall(html[:300_000]):
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        first = value[0] if isinstance(value, list) and value else value
        if name := normalise_section(first):
            return name
    return None


def page_section(tree: HtmlElement | None, html: str, *, url: str | None, given: str | None = None) -> str | None:
    """A page's section, first found: its markup (:func:`declared_section`), ``given`` (a feed's category),
    its URL's path (:func:`url_section`)."""
    found = declared_section(tree, html) if tree is not None else None
    for name in (found, normalise_section(given), url_section(url)):
        if name and not _names_the_site(name, url):
            return name
    return None


def _names_the_site(name: str, url: str | None) -> bool:
    """Whether a section is the site's own name (``treehugger`` on treehugger.com): that says nothing."""
    try:
        host = urlsplit(url if url and "//" in url else "//" + (url or "")).hostname or ""
    except ValueError:
        return False
    return name.replace("-", "") in host.split(".")
