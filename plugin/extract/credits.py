"""A page's picture and the news agency it credits, read at extraction time.

Called from ``plugin.extract.article.extract_article`` in two steps: :func:`page_signals`
reads the parsed page before any cleanup (its metadata, bylines and first
figure are what the cleanup deletes), and :func:`wire_credit` weighs those
signals together with the extracted text.

**Wire credits** are matched as whole credits, never as words inside prose:

- metadata: JSON-LD ``author``/``creator``/``publisher``/``sourceOrganization``
  names and author/source ``<meta>`` tags;
- bylines: elements marked as author, byline, source or credit (short ones);
- the text's dateline (``LONDON (Reuters) -``, ``新华社北京3月5日电``) and short
  credit lines among its first and last lines (``— AP``, ``Source: Xinhua``,
  ``（来源：中新社）``, ``This is an abridged version of a … report.``,
  ``Copyright 2025 The Associated Press``).

A credit is split into parts (commas, "and", slashes, bars); a part counts when
it *is* an agency: one of :data:`AGENCIES` (English and Chinese names, mapped
to one canonical name), or an agency-shaped name ("Northwind Wire",
"… News Agency", "…通讯社"). A dateline's parenthesis counts whatever it names.
"Reuters reported that…" inside a paragraph matches none of these.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from lxml import etree

from newsfold.plugin.urls import public_host

if TYPE_CHECKING:
    from lxml.html import HtmlElement

#: canonical agency -> the names it is credited under (matched case-insensitively, as a whole credit)
AGENCIES: dict[str, tuple[str, ...]] = {
    "AP": ("AP", "Associated Press", "The Associated Press", "AP News", "美联社", "美聯社"),
    "Reuters": ("Reuters", "路透社", "路透"),
    "AFP": ("AFP", "Agence France-Presse", "Agence France Presse", "法新社"),
    "PA": ("PA", "PA Media", "PA Wire", "Press Association", "PA Ready"),
    "dpa": ("dpa", "Deutsche Presse-Agentur"),
    "ANI": ("ANI", "Asian News International"),
    "PTI": ("PTI", "Press Trust of India"),
    "IANS": ("IANS", "Indo-Asian News Service"),
    "Xinhua": ("Xinhua", "Xinhua News Agency", "新华社", "新華社", "新华通讯社"),
    "China News Service": ("China News Service", "中新社", "中国新闻社", "中新网", "中國新聞社"),
    "Kyodo": ("Kyodo", "Kyodo News", "共同社"),
    "Yonhap": ("Yonhap", "Yonhap News Agency", "韩联社", "韓聯社"),
    "CNA": ("Central News Agency", "中央社"),
    "AAP": ("AAP", "Australian Associated Press"),
    "Canadian Press": ("The Canadian Press", "Canadian Press"),
    "UPI": ("UPI", "United Press International"),
    "ANSA": ("ANSA",),
    "EFE": ("EFE", "Agencia EFE"),
    "TASS": ("TASS", "塔斯社"),
    "Anadolu": ("Anadolu", "Anadolu Agency"),
    "Bernama": ("Bernama",),
    "Bloomberg": ("Bloomberg", "Bloomberg News"),
}
_ALIASES = {alias.casefold(): name for name, aliases in AGENCIES.items() for alias in aliases}
#: an agency-shaped name: capitalised words ending in an agency word, or a Chinese name ending in 通讯社/新闻社
_SHAPED = re.compile(
    r"^(?:the\s+)?([A-Z][\w'&.-]*(?:\s+[A-Z][\w'&.-]*){0,4}\s+"
    r"(?:Wire|Newswire|News\s+Agency|Press\s+Agency|Wire\s+Service|Telegraph\s+Agency|Press\s+Association))$"
    r"|^([\u4e00-\u9fff]{2,6}(?:通讯社|通訊社|新闻社|新聞社))$"
)
_PART_SPLIT = re.compile(r"\s*(?:[,;/|·•、，；]|\band\b|\bwith\b|&|\s[-–—]\s)\s*", re.I)
_BY = re.compile(r"^(?:by|from|source|via|credit|written by|report(?:ing|ed)? by)\s*[:：]?\s+", re.I)
#: a dateline: a place (capitals or a name), maybe a date, then the credit in brackets and a dash
_DATELINE = re.compile(
    r"^\s*([A-Z][A-Za-z.'\- ]{1,40})(?:,\s*[A-Za-z0-9.'\- ]{1,30}){0,2}\s*[(（]([^()（）\n]{2,40})[)）]\s*[-–—:]"
)
#: a name in a dateline whose place is in capitals ("HARBOURTON (Valley Wire) —"): capitalised words
_DATELINE_NAME = re.compile(r"^[A-Z][A-Za-z&.'-]*(?:\s[A-Z][A-Za-z&.'-]*){0,3}$")
_DATELINE_ZH = re.compile(r"^\s*[(（【]?\s*([\u4e00-\u9fff]{2,8}社)[\u4e00-\u9fff]{0,10}\d{1,2}月\d{1,2}日[电讯電訊]")
_BYLINE_ZH = re.compile(r"^\s*([\u4e00-\u9fff]{2,8}社)(?:记者|記者|电|電)")
#: short credit lines at the start or end of a text: the credited name is group 1
_CREDIT_LINES = (
    re.compile(r"^[(\[（【]?\s*[-–—]*\s*(.{2,40}?)\s*[)\]）】]?\s*\.?$"),  # a line that is only a name
    re.compile(
        r"^[(\[（【]?\s*(?:source|sources|credit|来源|來源|稿源|消息来源)\s*[:：]\s*(.{2,40}?)\s*[)\]）】]?\s*\.?$",
        re.I,
    ),  # fmt: skip
    re.compile(r"^(?:additional|with|including)?\s*reporting (?:by|from)\s+(?:the\s+)?(.{2,40}?)\.?$", re.I),
    re.compile(
        r"^this (?:is an? (?:abridged|edited|shortened|condensed) version of an?|story was (?:first|originally) "
        r"(?:published|reported) by|article (?:first|originally) appeared (?:on|in))\s+(?:the\s+)?(.{2,40}?)"
        r"(?:\s+(?:report|story|article))?\.?$",
        re.I,
    ),  # fmt: skip
    re.compile(
        r"^(?:copyright|©|\(c\))\s*(?:\d{4}\s*)?(?:the\s+)?(.{2,40}?)[.,]?(?:\s*all rights reserved\.?)?$", re.I
    ),  # fmt: skip
)
#: a known agency closing the text's last paragraphs ("… into the US. PTI", "… on Tuesday. (AFP)")
_TRAILING = re.compile(r"(?:[.!?\"”’]\s+|\s[-–—]\s*)[(\[]?([A-Za-z][A-Za-z.\- ]{1,30}?)[)\]]?\.?$")
#: known names long enough to be read inside a byline without separators ("Tom Davies Associated Press Published …")
_LONG_ALIASES = re.compile("|".join(
    (rf"\b{re.escape(a)}\b" if a.isascii() else re.escape(a))
    for a in sorted(_ALIASES, key=len, reverse=True) if (" " in a and len(a) >= 8) or (not a.isascii() and len(a) >= 3)
), re.I)  # fmt: skip
_CREDIT_LINE_CHARS = 160
_MAX_CREDITS = 40  # distinct credits weighed at most (bylines repeat; a page listing hundreds is a listing)
_LINES_CHECKED = 3
_BYLINE_CHARS = 120
_META_NAMES = {"author", "article:author", "dc.creator", "dc.contributor", "dc.source", "dcterms.creator",
               "byl", "sailthru.author", "parsely-author", "source", "original-source", "syndication-source",
               "twitter:creator", "cxenseparse:author", "og:article:author"}  # fmt: skip
_BYLINE_CLASS = re.compile(r"byline|author|source|laiyuan", re.I)
#: the attributes that may mark a byline, found by the XPath engine (a walk of every element in Python costs more)
_WORDS = " or ".join(f"contains(., '{w}')" for w in ("yline", "uthor", "ource"))  # byline, Author, source...
_BYLINE_MARKS = etree.XPath(f"//@class[{_WORDS}] | //@id[{_WORDS}] | //@itemprop[. = 'author'] | //@rel[. = 'author']")
_FIGURE_IMAGES = etree.XPath("(//figure//img | //article//img)[position() <= 8]")
#: marks of a picture's credit ("Bloomberg | Getty Images" under a photo credits the photo, not the text)
_PICTURE = re.compile(r"photo|image|img|picture|caption|figure|media|gallery|video|getty|illustration|图片|摄影", re.I)
_PICTURE_TEXT = re.compile(r"\bphoto|\bimages?\b|getty|illustration|图片|摄影|图/", re.I)
#: names a dateline or byline uses for the site's own people, not an agency
_NOT_AGENCIES = {"staff", "staff reports", "staff report", "staff writer", "staff writers", "wire reports",
                 "wire services", "agencies", "news desk", "newsdesk", "web desk", "editorial", "the editors",
                 "editors", "reporters", "contributor", "contributors"}  # fmt: skip
_JSONLD_KEYS = ("author", "creator", "publisher", "sourceOrganization", "provider")
_MAX_JSONLD_CHARS = 200_000
_MAX_URL_CHARS = 2048


@dataclass
class PageSignals:
    """What the page says before cleanup: its picture and the credits in its metadata and bylines."""

    image: str | None = None
    credits: list[tuple[str, str]] = field(default_factory=list)  # (where, credited text)


def agency(name: str) -> str | None:
    """The canonical agency a whole credit names (``"The Associated Press"`` -> ``"AP"``), or None."""
    text = " ".join(str(name).split()).strip(" .:-–—()[]（）【】")
    if not text or len(text) > 60 or text.casefold() in _NOT_AGENCIES:
        return None
    known = _ALIASES.get(text.casefold())
    if known:
        return known
    m = _SHAPED.match(text)
    if m:
        return " ".join((m.group(1) or m.group(2)).split())
    return None


def credited(text: str) -> str | None:
    """The agency a credit (a byline, a meta tag, a credit line) names as one of its parts, or None."""
    text = " ".join(str(text).split())
    if not text or len(text) > _BYLINE_CHARS:
        return None
    text = _BY.sub("", text)
    found = agency(text)
    if found:
        return found
    for part in _PART_SPLIT.split(text):
        part = _BY.sub("", part.strip())
        found = agency(part) if part else None
        if found:
            return found
    zh = _BYLINE_ZH.match(text)
    return agency(zh.group(1)) if zh else None


def _jsonld_names(value: object, depth: int = 0) -> list[str]:
    if depth > 3:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [n for v in value[:10] for n in _jsonld_names(v, depth + 1)]
    if isinstance(value, dict):
        name = value.get("name")
        return [name] if isinstance(name, str) else []
    return []


def _jsonld_objects(data: object, depth: int = 0) -> Iterator[dict[str, Any]]:
    if depth > 4:
        return
    if isinstance(data, list):
        for item in data[:50]:
            yield from _jsonld_objects(item, depth + 1)
    elif isinstance(data, dict):
        yield data
        graph = data.get("@graph")
        if isinstance(graph, list):
            yield from _jsonld_objects(graph, depth + 1)


def _jsonld_image(value: object, depth: int = 0) -> str | None:
    if depth > 3:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        for v in value[:5]:
            found = _jsonld_image(v, depth + 1)
            if found:
                return found
    if isinstance(value, dict):
        return _jsonld_image(value.get("url") or value.get("contentUrl"), depth + 1)
    return None


def absolute_image(src: str | None, base: str | None) -> str | None:
    """An image address as an absolute http(s) URL (resolved against the page's URL), or None."""
    if not src or not isinstance(src, str):
        return None
    src = src.strip()
    if not src or len(src) > _MAX_URL_CHARS or src.startswith("data:") or re.search(r"[\x00-\x20\"'<>\\]", src):
        return None
    try:
        url = urljoin(base or "", src)
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not public_host(parts.hostname):
        return None  # the reader's browser loads it: never a loopback, private or metadata address
    return url if len(url) <= _MAX_URL_CHARS else None


def page_signals(tree: HtmlElement, *, url: str | None = None) -> PageSignals:
    """The picture and the credits of a parsed page, read before any cleanup (never raises on odd markup)."""
    out = PageSignals()
    images: list[str | None] = []
    for el in tree.iter("meta"):
        key = (el.get("property") or el.get("name") or el.get("itemprop") or "").strip().casefold()
        content = el.get("content") or ""
        if key in ("og:image", "og:image:url", "og:image:secure_url", "twitter:image", "twitter:image:src"):
            images.append(content)
        elif key in _META_NAMES and content and not content.strip().lower().startswith(("http:", "https:", "@")):
            out.credits.append(("meta", content))
    for el in tree.iter("link"):
        if (el.get("rel") or "").strip().casefold() == "image_src":
            images.append(el.get("href"))
    for el in tree.iter("script"):
        if (el.get("type") or "").strip().casefold() != "application/ld+json" or not el.text:
            continue
        try:
            data = json.loads(el.text[:_MAX_JSONLD_CHARS])
        except ValueError:
            continue
        for obj in _jsonld_objects(data):
            if obj.get("image") is not None:
                images.append(_jsonld_image(obj.get("image")))
            for key in _JSONLD_KEYS:
                for name in _jsonld_names(obj.get(key)):
                    out.credits.append((f"json-ld {key}", name))
    for el in dict.fromkeys(mark.getparent() for mark in _BYLINE_MARKS(tree)):
        marks = " ".join(filter(None, (el.get("class"), el.get("id"), el.get("itemprop"), el.get("rel"))))
        if marks and _BYLINE_CLASS.search(marks) and not _PICTURE.search(marks) and not _in_figure(el):
            text = " ".join("".join(el.itertext()).split())
            if text and len(text) <= _BYLINE_CHARS and not _PICTURE_TEXT.search(text):
                out.credits.append(("byline", text))
    out.image = next((u for u in (absolute_image(i, url) for i in images) if u), None)
    if out.image is None:  # no picture in the metadata: the article's first figure
        found = _FIGURE_IMAGES(tree)  # in document order: a figure's picture first, then the article's
        for img in sorted(found, key=lambda i: not any(a.tag == "figure" for a in i.iterancestors()))[:4]:
            if img.get("width") in ("0", "1") or img.get("height") in ("0", "1"):
                continue
            out.image = absolute_image(img.get("src") or img.get("data-src"), url)
            if out.image:
                break
    out.credits = list(dict.fromkeys(out.credits))[:_MAX_CREDITS]
    return out


def _in_figure(el: HtmlElement) -> bool:
    """Whether an element sits in a figure, a picture or a caption (up to four levels up)."""
    for n, up in enumerate(el.iterancestors()):
        if n >= 4 or not isinstance(up.tag, str):
            break
        marks = " ".join(filter(None, (up.get("class"), up.get("id"))))
        if up.tag in ("figure", "figcaption", "picture") or (marks and _PICTURE.search(marks)):
            return True
    return False


def _own_name(name: str, site: str | None) -> bool:
    """Whether a credited name is the site's own ("HawaiiNewsNow" on hawaiinewsnow.com)."""
    letters = re.sub(r"[^a-z0-9]", "", name.casefold())
    host = re.sub(r"[^a-z0-9]", "", (site or "").casefold())
    return len(letters) >= 3 and letters in host


def text_credit(text: str, *, site: str | None = None) -> tuple[str, str] | None:
    """``(agency, where)`` credited by a text's dateline or its short first or last lines, or None."""
    text = (text or "").strip()
    if not text:
        return None
    # only the first and the last lines matter: a long text is not split whole
    head, tail = text[:2000].split("\n"), text[-2000:].split("\n") if len(text) > 2000 else []
    lines = [" ".join(line.split()) for line in (head if not tail else head[:_LINES_CHECKED] + tail[1:])
             if line.strip()]  # fmt: skip
    if not lines:
        return None
    m = _DATELINE.match(lines[0][:200])
    if m:
        place, name = m.group(1).strip(), " ".join(m.group(2).split())
        found = agency(name)
        generic = (place.upper() == place and len(place) >= 3 and _DATELINE_NAME.match(name)
                   and name.casefold() not in _NOT_AGENCIES and not _own_name(name, site))  # fmt: skip
        if found or generic:
            return (found or name, "dateline")
    m = _DATELINE_ZH.match(lines[0][:200])
    if m:
        return (agency(m.group(1)) or m.group(1), "dateline")
    for line in [*lines[:_LINES_CHECKED], *lines[-_LINES_CHECKED:]]:
        if len(line) > _CREDIT_LINE_CHARS:
            continue
        for pattern in _CREDIT_LINES:
            m = pattern.match(line)
            found = credited(m.group(1)) if m else None
            if found:
                return (found, "credit line")
    for line in lines[-_LINES_CHECKED:]:
        m = _TRAILING.search(line[-60:])
        if m and m.group(1).strip() and _ALIASES.get(m.group(1).strip().casefold()):
            return (_ALIASES[m.group(1).strip().casefold()], "credit line")
    return None


def wire_credit(signals: PageSignals | None, text: str, *, url: str | None = None) -> tuple[str, str] | None:
    """``(agency, where)``: the news agency a page credits, from its text first, then its metadata and bylines.

    An agency-shaped name that is the site's own (from ``url``'s host) is no credit.
    """
    site = urlsplit(url).hostname if url and "//" in url else None
    found = text_credit(text, site=site)
    if found:
        return found
    credits = signals.credits if signals else []
    for where, value in credits:
        name = credited(value)
        if name and (name in AGENCIES or not _own_name(name, site)):
            return (name, where)
    for where, value in credits:  # a known agency's full name inside a byline, without separators
        m = _LONG_ALIASES.search(value) if where in ("byline", "meta") or "author" in where else None
        if m and len(value) <= _BYLINE_CHARS:
            return (_ALIASES[m.group(0).casefold()], where)
    return None
