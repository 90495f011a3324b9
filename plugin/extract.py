"""Article extraction: page bytes in, an ``Article`` or a ``Rejection`` out.

A pure function at the per-page boundary: it never raises for bad input, it
returns a ``Rejection`` whose ``reason`` is a short code and whose ``detail``
says what was wrong, so one bad page never stops a batch.
"""

from __future__ import annotations

import codecs
import gzip
import io
import logging
import re
import zlib
from dataclasses import dataclass

from plugin.text import cjk_share, tokenize

log = logging.getLogger(__name__)

#: reason codes a rejection can carry (documented in docs/ingest.md)
REASONS = (
    "empty",
    "too_large",
    "not_html",
    "undecodable",
    "no_article",
    "too_short",
    "extraction_failed",
)

_MAGIC = {
    b"%PDF": "a PDF document",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"GIF8": "a GIF image",
    b"PK\x03\x04": "a ZIP archive",
    b"RIFF": "a RIFF media file",
    b"\x00\x00\x01\x00": "an icon file",
}
_DECLARED = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
_XML_DECL = re.compile(rb"""<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I)
_HTML_LANG = re.compile(r"""<html[^>]*?\slang\s*=\s*["']?([A-Za-z]{2,3})""", re.I)
_TAG = re.compile(r"<\s*(html|head|body|div|p|article|title|span|table|section|meta|!doctype)\b", re.I)
# Labels that browsers treat as a wider encoding (WHATWG encoding standard).
_WIDER = {
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "shift_jis": "cp932",
    "sjis": "cp932",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
}


@dataclass(frozen=True)
class Article:
    """The article found in a page."""

    title: str
    text: str
    lang: str | None
    published: str | None = None


@dataclass(frozen=True)
class Rejection:
    """Why a page yields no article; ``reason`` is one of ``REASONS``."""

    reason: str
    detail: str

    def message(self) -> str:
        return f"{self.reason}: {self.detail}"


def decode_html(data: bytes, *, max_bytes: int) -> str | Rejection:
    """Decode raw page bytes to text, or say why they are not an HTML page.

    Gzip is unpacked (bounded by ``max_bytes``); UTF-8 that decodes strictly
    wins over a declared charset (pages often declare ISO-8859-1 and send
    UTF-8); then the declared charset (widened as browsers do: GB2312 -> GB18030);
    then a statistical guess.
    """
    if not data or not data.strip():
        return Rejection("empty", "the page has no bytes")
    if data[:2] == b"\x1f\x8b":
        try:
            data = _gunzip(data, max_bytes)
        except (OSError, EOFError, zlib.error) as exc:
            return Rejection("undecodable", f"broken gzip data ({exc})")
        if data is None:
            return Rejection("too_large", f"the page unpacks to more than {max_bytes} bytes")
    if len(data) > max_bytes:
        return Rejection("too_large", f"the page has {len(data)} bytes, the limit is {max_bytes}")
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            return Rejection("not_html", f"the bytes are {what}, not an HTML page")
    text = _decode(data)
    if text is None:
        return Rejection("undecodable", "no character encoding decodes the page")
    head = text[:200_000]
    if head.count("\x00") > 10 or head.count("\ufffd") > max(20, len(head) // 50):
        return Rejection("undecodable", "the page is binary or in an unknown encoding")
    if not _TAG.search(head):
        return Rejection("not_html", "no HTML markup found")
    return text


def _gunzip(data: bytes, max_bytes: int) -> bytes | None:
    out = bytearray()
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
        while chunk := fh.read(1 << 20):
            out += chunk
            if len(out) > max_bytes:
                return None
    return bytes(out)


def _decode(data: bytes) -> str | None:
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(codec, errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    head = data[:4096]
    declared = _DECLARED.search(head) or _XML_DECL.search(head)
    if declared:
        label = declared.group(1).decode("ascii", "ignore").lower()
        label = _WIDER.get(label, label)
        try:
            return data.decode(label)
        except (LookupError, UnicodeDecodeError):
            pass
    from charset_normalizer import from_bytes

    best = from_bytes(data[:200_000]).best()
    if best is None:
        return None
    try:
        return data.decode(best.encoding, errors="replace")
    except LookupError:
        return None


def html_lang(html: str) -> str | None:
    """The primary language subtag of ``<html lang>``, lower-cased."""
    m = _HTML_LANG.search(html[:20_000])
    return m.group(1).lower() if m else None


def extract_article(
    data: bytes | str,
    *,
    url: str | None = None,
    lang: str | None = None,
    min_tokens: int = 25,
    max_bytes: int = 10 * 1024 * 1024,
    cleanup: bool = True,
) -> Article | Rejection:
    """Extract the article (title and body text) from one page.

    Args:
        data: raw page bytes in any encoding (gzip accepted), or decoded HTML.
        url: the page URL, used by trafilatura for relative links and metadata.
        lang: a language already known for the page (wins over detection).
        min_tokens: fewer article tokens than this is a ``too_short`` rejection.
        max_bytes: larger pages are rejected as ``too_large``.
        cleanup: remove related-story boxes, teasers and banners first (:func:`clean_tree`).

    Returns:
        An ``Article``, or a ``Rejection`` naming the reason. Never raises for
        bad input.
    """
    if isinstance(data, str):
        if len(data) > max_bytes:
            return Rejection("too_large", f"the page has {len(data)} characters, the limit is {max_bytes}")
        html = data
        if not html.strip():
            return Rejection("empty", "the page has no content")
    else:
        html = decode_html(data, max_bytes=max_bytes)
        if isinstance(html, Rejection):
            return html
    try:
        import trafilatura
        from trafilatura.utils import load_html

        tree = load_html(html)
        if tree is None:
            return Rejection("not_html", "the HTML could not be parsed")
        # Title and date from the head are cheap; trafilatura's full metadata
        # pass (htmldate, authors, ...) costs as much as the extraction itself.
        title, published = page_title(tree), published_date(tree, html)
        if cleanup:
            clean_tree(tree)
        doc = trafilatura.bare_extraction(tree, url=url, include_comments=False, with_metadata=False)
    except Exception as exc:  # the per-page boundary: any parser failure is a rejection
        log.warning("extraction failed for %s: %s", url, exc)
        return Rejection("extraction_failed", f"{type(exc).__name__}: {exc}")
    text = (getattr(doc, "text", None) or "").strip() if doc is not None else ""
    if not text:
        return Rejection("no_article", "no article text found in the page")
    tokens = tokenize(text)
    if len(tokens) < min_tokens:
        return Rejection("too_short", f"the article has {len(tokens)} tokens, fewer than {min_tokens}")
    lang = lang or html_lang(html) or getattr(doc, "language", None)
    if not lang and cjk_share(tokens) >= 0.5:
        lang = "ja" if re.search("[\u3040-\u30ff]", text) else "zh"
    return Article(title=title, text=text, lang=lang, published=published)


_TITLE_XPATHS = (
    "//meta[@property='og:title']/@content",
    "//meta[@name='twitter:title']/@content",
    "//title/text()",
    "//h1//text()",
)
_DATE_XPATHS = (
    "//meta[@property='article:published_time']/@content",
    "//meta[@property='og:published_time']/@content",
    "//meta[@itemprop='datePublished']/@content",
    "//meta[@name='date']/@content",
    "//meta[@name='pubdate']/@content",
    "//meta[@name='publish-date']/@content",
    "//meta[@name='dc.date']/@content",
    "//*[@itemprop='datePublished']/@datetime",
    "//time/@datetime",
)
_ISO_DATE = re.compile(r"((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")
_JSONLD_DATE = re.compile(r'"datePublished"\s*:\s*"([^"]+)"')


def page_title(tree) -> str:
    """The page's headline from og:title, twitter:title, <title> or <h1>."""
    for xpath in _TITLE_XPATHS:
        for value in tree.xpath(xpath):
            value = " ".join(str(value).split())
            if value:
                return value[:500]
    return ""


def published_date(tree, html: str) -> str | None:
    """The publication date (YYYY-MM-DD) from common meta tags or JSON-LD, if any."""
    candidates = [str(v) for xpath in _DATE_XPATHS for v in tree.xpath(xpath)]
    candidates += _JSONLD_DATE.findall(html[:300_000])
    for value in candidates:
        m = _ISO_DATE.search(value)
        if m:
            return m.group(0)
    return None


# ---------------------------------------------------------------- cleanup before extraction
# Class/id tokens of blocks that are never the article: related-story and teaser
# boxes (their long ledes of other stories leak into the body: the Media Cloud
# failure), recommendation widgets, newsletter/cookie/consent banners, share bars.
_BOILER_TOKEN = re.compile(
    r"^(related|recommend|more-?(stories|articles|news|from)|read-?(more|next|also)|also-?read|see-?also|"
    r"teaser|promo|outbrain|taboola|newsletter|subscri|cookie|consent|gdpr|social-?share|share-?(bar|buttons|tools)|"
    r"most-?(read|popular|viewed)|trending)",
    re.I,
)
# Headings that open such a box, in the languages of the corpus.
_BOILER_HEADING = re.compile(
    r"^\s*(related|related (stories|articles|posts|content|links|news|coverage|reading)|more (stories|news|from|on)|"
    r"read (more|also|next)|see also|also read|you (may|might) (also )?like|recommended( for you)?|"
    r"most (read|popular|viewed)|trending( now)?|further reading|top stories|popular( now)?|"
    r"lesen sie (auch|mehr)|mehr zum thema|ver también|leia também|lire aussi|à lire aussi|leggi anche|"
    r"читайте также|相关(新闻|阅读|文章|报道)|推荐阅读|延伸阅读|热门(文章|新闻)|関連記事|관련 ?기사)\s*:?\s*$",
    re.I,
)
_KEEP_TAGS = {"html", "body", "main", "article"}


def _text_len(el) -> int:
    return len(" ".join(el.itertext()).split()) if el is not None else 0


def _link_density(el) -> float:
    words = _text_len(el)
    return sum(_text_len(a) for a in el.iter("a")) / words if words else 0.0


def clean_tree(tree) -> int:
    """Remove related-story boxes, teasers, banners and widgets from a parsed page.

    Runs on the lxml tree before trafilatura. A block is removed when a class or
    id token says what it is, or when it opens with a "Related stories"-style
    heading; never a block holding half of the page's text or more (that is the
    article, whatever its class says). Returns the number of blocks removed.
    """
    body = tree.find(".//body")
    total = max(1, _text_len(body if body is not None else tree))
    doomed = []
    for el in tree.iter():
        if not isinstance(el.tag, str) or el.tag.lower() in _KEEP_TAGS:
            continue
        names = f"{el.get('class', '')} {el.get('id', '')}".split()
        size = _text_len(el) if any(_BOILER_TOKEN.match(n) for n in names) else None
        if size is not None and size < total / 2 and (size < 200 or _link_density(el) >= 0.4):
            doomed.append(el)
            continue
        if el.tag.lower() in ("h2", "h3", "h4", "h5", "h6", "strong", "b", "p", "div", "span") and len(el) <= 1:
            text = " ".join(el.itertext()).strip()
            if text and len(text) < 60 and _BOILER_HEADING.match(text):
                box = el.getparent()
                # the heading's box: its parent when that is a small block of links, else heading + next list
                if (
                    box is not None
                    and box.tag.lower() not in _KEEP_TAGS
                    and _text_len(box) < min(300, total / 5)
                    and len(box.findall(".//a")) >= 2
                    and _link_density(box) >= 0.25
                ):
                    doomed.append(box)
                else:
                    doomed.append(el)
                    nxt = el.getnext()
                    if nxt is not None and nxt.tag in ("ul", "ol", "div", "section", "aside"):
                        doomed.append(nxt)
    removed = 0
    for el in doomed:
        parent = el.getparent()
        if parent is None:
            continue
        if el.tail and el.tail.strip():  # keep the text that follows the box
            prev = el.getprevious()
            if prev is not None:
                prev.tail = (prev.tail or "") + el.tail
            else:
                parent.text = (parent.text or "") + el.tail
        parent.remove(el)
        removed += 1
    return removed
