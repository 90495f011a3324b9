"""Article extraction: page bytes in, an ``Article`` or a ``Rejection`` out.

A pure function at the per-page boundary: it never raises for bad input, it
returns a ``Rejection`` whose ``reason`` is a short code and whose ``detail``
says what was wrong, so one bad page never stops a batch.
"""

from __future__ import annotations

import bisect
import codecs
import gzip
import io
import logging
import re
import zlib
from dataclasses import dataclass

from lxml import etree

from newsfold.plugin.text import cjk_share, tokenize

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
# an encoding attribute on the first tag: <?xml ... encoding="..."?>, or a wrapper such as <text encoding="...">
_XML_DECL = re.compile(rb"""^\s*<[?!]?[\w:-]+[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9_.:-]+)""", re.I)
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
        except LookupError:
            pass
        except UnicodeDecodeError:
            # a few broken bytes in a page of the declared charset: a statistical
            # guess over the rest is far more likely to be wrong than the declaration
            text = data.decode(label, errors="replace")
            if text.count("\ufffd") <= len(text) // 1000:
                return text
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

    Steps: decode; parse (leniently when trafilatura's loader refuses the
    markup); turn page-sized aside/header/footer wrappers into plain blocks
    (:func:`unwrap_page_wrappers`); remove teaser boxes and banners
    (:func:`clean_tree`); trafilatura in its fast mode, and its full cascade
    (readability, justext) only when the fast result covers little of the
    page's prose or is mostly not prose (:func:`_needs_second_opinion`); add
    back the paragraphs, lists and tables it dropped inside the article's container
    (:func:`recover_dropped_blocks`); drop a first line that only repeats the
    headline (:func:`drop_headline`).

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

        tree = parse_html(html)
        if tree is None:
            tree = _parse_leniently(html)
        if tree is None:
            return Rejection("not_html", "the HTML could not be parsed")
        # Title and date from the head are cheap; trafilatura's full metadata
        # pass (htmldate, authors, ...) costs as much as the extraction itself.
        title, published = page_title(tree), published_date(tree, html)
        body_words = _body_words(tree)  # unwrapping renames tags only: one count serves both passes
        unwrap_page_wrappers(tree, body_words=body_words)
        drop_furniture(tree)
        if cleanup:
            clean_tree(tree, body_words=body_words)
        runs = _text_runs(tree)  # the page's text blocks: the second-opinion test and the recovery pass share them
        doc = trafilatura.bare_extraction(tree, url=url, include_comments=False, with_metadata=False, fast=True)
        if _needs_second_opinion((doc.text or "") if doc is not None else "", runs):
            second = trafilatura.bare_extraction(tree, url=url, include_comments=False, with_metadata=False)
            doc = second if second is not None else doc
        if doc is not None and doc.text:
            doc.text = drop_headline(recover_dropped_blocks(tree, doc.text, runs=runs), tree, title)
    except Exception as exc:  # the per-page boundary: any parser failure is a rejection
        log.warning("extraction failed for %s: %s", url, exc)
        return Rejection("extraction_failed", f"{type(exc).__name__}: {exc}")
    text = (getattr(doc, "text", None) or "").strip() if doc is not None else ""
    if not text:
        return Rejection("no_article", "no article text found in the page")
    # the opening is enough to reach min_tokens and to tell CJK text; the whole text only when it is short
    tokens = tokenize(text[:_SAMPLE_CHARS])
    if len(tokens) < min_tokens and len(text) > _SAMPLE_CHARS:
        tokens = tokenize(text)
    if len(tokens) < min_tokens:
        return Rejection("too_short", f"the article has {len(tokens)} tokens, fewer than {min_tokens}")
    lang = lang or html_lang(html) or getattr(doc, "language", None)
    if not lang and cjk_share(tokens) >= 0.5:
        lang = "ja" if re.search("[\u3040-\u30ff]", text) else "zh"
    return Article(title=title, text=text, lang=lang, published=published)


_SAMPLE_CHARS = 2000  # characters tokenised to check the length and the script of an extracted text
_HEAD_CHARS = 4096  # the doctype and <html> fixes of trafilatura's loader look no further
# characters XML forbids, which libxml2 chokes on: C0 controls but tab/LF/CR, U+FFFE, U+FFFF (as UTF-8)
_C0 = bytes(range(9)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))
_INVALID_XML = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")


def parse_html(html: str):
    """Parse a page as trafilatura's loader does, from UTF-8 bytes and with one scan for forbidden characters.

    trafilatura's ``load_html`` runs a regex substitution over the whole page
    and may parse twice; here its repairs run on the first lines only (where
    they apply) and the rest is checked for characters XML forbids with a
    byte translation, which costs a fraction of the regex pass.

    Returns:
        The lxml tree, or None when the markup is not HTML.
    """
    from lxml import html as lxml_html
    from trafilatura.utils import HTML_PARSER, is_dubious_html, repair_faulty_html

    head, rest = html[:_HEAD_CHARS], html[_HEAD_CHARS:]
    beginning = head[:50].lower()
    data = repair_faulty_html(head, beginning).encode("utf-8", "replace")
    tail = rest.encode("utf-8", "replace")
    if len(tail.translate(None, _C0)) != len(tail) or b"\xef\xbf\xbe" in tail or b"\xef\xbf\xbf" in tail:
        tail = _INVALID_XML.sub(b"", tail)
    try:
        tree = lxml_html.fromstring(data + tail, parser=HTML_PARSER)
    except (etree.ParserError, ValueError):
        return None
    if tree is None or len(tree) < 1 or (is_dubious_html(beginning) and len(tree) < 2):
        return None
    return tree


def _parse_leniently(html: str):
    """Parse markup trafilatura's loader refuses: no ``html`` near the start and a single wrapper element."""
    from lxml import html as lxml_html

    try:
        tree = lxml_html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    return tree if tree.find(".//body") is not None else None


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
    """The publication date (YYYY-MM-DD) from common meta tags or JSON-LD, if any.

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
            return m.group(0)
    for value in _JSONLD_DATE.findall(html[:300_000]):
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
    r"читайте также|相关(新闻|阅读|文章|报道)|推荐阅读|延伸阅读|热门(文章|新闻)|関連記事|관련 ?기사)\s*[:：]?\s*$",
    re.I,
)
_KEEP_TAGS = {"html", "body", "main", "article"}
# the same tokens at the start of any class/id name; searched once over all the page's class and id
# values joined by newlines (one C-level scan instead of a regex call per element)
# (lower-cased first: a case-insensitive pattern costs twice as much)
_BOILER_ATTR = re.compile(r"(?<!\S)(?:" + _BOILER_TOKEN.pattern[2:-1] + ")")
_CLASS_ID_VALUES = etree.XPath("//@class|//@id")
# blocks that can hold a one-line "Related stories" heading
_HEADING_TAGS = ("h2", "h3", "h4", "h5", "h6", "strong", "b", "p", "div", "span")
_HEADING_CHARS = 60  # longer text is not a heading


def _boiler_named(tree) -> list:
    """Elements whose class or id starts a name with a :data:`_BOILER_TOKEN`, in document order."""
    values = _CLASS_ID_VALUES(tree)
    if not values:
        return []
    names = [value.lower() for value in values]
    lowered = "\n".join(names)
    starts, offset = [], 0
    for name in names:
        starts.append(offset)
        offset += len(name) + 1
    found: dict = {}
    for m in _BOILER_ATTR.finditer(lowered):
        found.setdefault(values[bisect.bisect_right(starts, m.start()) - 1].getparent(), None)
    return list(found)


def _short_block_text(el) -> str | None:
    """The text of a block with at most one child element, when under :data:`_HEADING_CHARS` characters.

    Reads the text lazily, so a one-child wrapper around the whole page costs a few text nodes, not the page.
    """
    if len(el) > 1:
        return None
    if len(el) == 0:
        text = el.text
        return text if text and 0 < len(" ".join(text.split())) < _HEADING_CHARS else None
    parts, size = [], 0
    for part in el.itertext():
        words = part.split()
        if words:
            size += sum(map(len, words)) + len(words)
            if size > _HEADING_CHARS:
                return None
        parts.append(part)
    return " ".join(parts) if size else None


def _body_words(tree) -> int:
    body = tree.find(".//body")
    return _text_len(body if body is not None else tree)


def _text_len(el) -> int:
    """Words of an element's text (serialised in C: this runs on whole pages)."""
    if el is None:
        return 0
    return len(etree.tostring(el, method="text", encoding="unicode", with_tail=False).split())


def _link_density(el) -> float:
    words = _text_len(el)
    return sum(_text_len(a) for a in el.iter("a")) / words if words else 0.0


def clean_tree(tree, *, body_words: int | None = None) -> int:
    """Remove related-story boxes, teasers, banners and widgets from a parsed page.

    Runs on the lxml tree before trafilatura. A block is removed when a class or
    id token says what it is, or when it opens with a "Related stories"-style
    heading; never a block holding half of the page's text or more (that is the
    article, whatever its class says). ``body_words`` is the page's word count
    when the caller has it. Returns the number of blocks removed.
    """
    total = max(1, _body_words(tree) if body_words is None else body_words)
    doomed = []
    boxes = set()
    for el in _boiler_named(tree):
        if el.tag in _KEEP_TAGS:
            continue
        size = _text_len(el)
        if size < total / 2 and (size < 200 or _link_density(el) >= 0.4):
            doomed.append(el)
            boxes.add(el)
    for el in tree.iter(_HEADING_TAGS):
        if el in boxes:
            continue
        text = _short_block_text(el)
        if not text or not _BOILER_HEADING.match(text):
            continue
        box = el.getparent()
        # the heading's box: its parent when that is a small block of links, else heading + next list
        if (
            box is not None
            and box.tag not in _KEEP_TAGS
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
        if el.getparent() is not None:
            _remove(el)
            removed += 1
    return removed


# Elements that hold no article text by what they are (scripts, media, controls, navigation, asides,
# footers) and that trafilatura deletes with their subtree anyway: deleted once, right after parsing,
# so that no later walk (cleanup, text runs, trafilatura's copies and XPath passes) visits them.
# JSON-LD scripts stay (trafilatura reads them), and so does the head's <title>.
_FURNITURE_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "iframe",
    "object",
    "embed",
    "canvas",
    "video",
    "audio",
    "picture",
    "map",
    "select",
    "textarea",
    "button",
    "input",
    "nav",
    "aside",
    "footer",
    "menu",
    "dialog",
    "fieldset",
    "label",
)
_JSON_LD = "application/ld+json"


def drop_furniture(tree) -> int:
    """Delete scripts, styles, media, form controls, navigation, asides and footers (tails kept).

    Run after :func:`unwrap_page_wrappers` (a page-sized aside is the page,
    not furniture) and after the title and date are read from the head.

    Returns:
        The number of elements deleted.
    """
    doomed = [el for el in tree.iter(_FURNITURE_TAGS) if el.tag != "script" or el.get("type") != _JSON_LD]
    head = tree.find("head")
    if head is not None:
        doomed += [el for el in head if el.tag not in ("title", "script")]
    for el in doomed:
        _remove(el)
    return len(doomed)


def _remove(el) -> None:
    """Delete an element and its subtree, keeping the text that follows it."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


# ---------------------------------------------------------------- broken page wrappers
# Tags trafilatura deletes with their whole subtree.
_PAGE_FURNITURE = ("aside", "header", "footer", "nav", "button", "menu", "label", "dialog", "fieldset", "figure")


def unwrap_page_wrappers(tree, *, body_words: int | None = None) -> int:
    """Turn an aside/header/footer/nav/button... holding half of the page's text into a plain ``div``.

    Broken markup (a popup ``<aside>`` or a menu ``<button>`` that is never
    closed) can put the whole article inside an element that trafilatura
    deletes by its tag, leaving nothing. Such an element is the page, not
    furniture: it loses its tag and its class/id (which name the popup).

    Args:
        tree: the parsed page (lxml), changed in place.
        body_words: the page's word count, when the caller has it.

    Returns:
        The number of elements turned into plain blocks.
    """
    candidates = list(tree.iter(*_PAGE_FURNITURE))
    if not candidates:
        return 0
    total = _body_words(tree) if body_words is None else body_words
    changed = 0
    for el in candidates:
        if total and _text_len(el) * 2 >= total:
            el.tag = "div"
            el.attrib.pop("class", None)
            el.attrib.pop("id", None)
            changed += 1
    return changed


# ---------------------------------------------------------------- second pass on the article's container
# trafilatura drops paragraphs inside the right container when a wrapper's class
# looks like boilerplate to it ("widget", "embed", "meta", "button"...): whole
# tables, the second half of an article, the sections of a page builder. This
# pass finds the container from what trafilatura kept and adds back the dropped
# text runs that look like the article's own blocks.

_INLINE_TAGS = frozenset(
    "a abbr acronym b bdi bdo big br cite code data del dfn em font i img ins kbd mark nobr q s samp small "
    "span strike strong sub sup time tt u var wbr".split()
)
# never recovered: not prose (code, forms, media) or page furniture by tag
_NOT_PROSE = frozenset(
    "script style noscript template svg math head title iframe object embed canvas video audio picture map "
    "select option textarea button input label form nav aside footer figure figcaption menu dialog fieldset "
    "pre".split()
)
# blocks recovered on their tag alone; other blocks only when they repeat a kept sibling's tag and class
_CONTENT_TAGS = frozenset(("p", "li", "h2", "h3", "h4", "h5", "h6", "td", "th", "blockquote"))
# class/id words of furniture that lives inside article containers
_FURNITURE_WORDS = frozenset(
    "comment comments share sharing social newsletter subscribe subscription signup related recommended promo "
    "sponsor sponsored advert advertisement ad ads author bio byline breadcrumb breadcrumbs nav navigation menu "
    "cookie consent tags sidebar popup modal footer caption credit credits".split()
)
# a text run this long (and not mostly links) reads as a paragraph; counted in UTF-8 bytes, so that a
# CJK character, which carries about as much as a short Latin word, weighs three Latin letters
_PROSE_BYTES = 80
_MIN_PROSE_SHARE = 0.25  # a fast result shorter than this share of the page's prose gets a second opinion
_MAX_PROSE_MULTIPLE = 3  # ... and so does one this many times longer than the prose
_CONTAINER_SHARE = 0.8  # the container holds this share of the kept text
_ANCHOR_CHARS = 20  # kept runs shorter than this may match by accident: not used to place the container
_MAX_LINK_SHARE = 0.5  # link-dense runs are menus and teasers
# a teaser's cut-off lede, or a "Loading..." placeholder
_TRUNCATED = re.compile(r"(?:\.\.\.|…)\]?\s*$")
_VISIBLE_TEXT = etree.XPath(".//text()[normalize-space()]")
_NONWORD = re.compile(r"[\W_]+")
_ATTR_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")


def _match_key(text: str) -> str:
    """Letters and digits only: the same text whatever spacing and punctuation trafilatura gave it."""
    return _NONWORD.sub("", text).casefold()


def _text_runs(tree) -> list[list]:
    """The page's visible text in document order, as runs ``[owner, text nodes, link chars]``.

    A run's owner is its nearest non-inline ancestor, so a run is the text one
    block shows between two nested blocks: the unit trafilatura keeps or drops.
    """
    info: dict = {}  # element -> (owner, inside a link); owner None when not prose

    def lookup(el):
        hit = info.get(el)
        if hit is not None:
            return hit
        path = []
        cur = el
        while cur is not None and cur not in info:
            path.append(cur)
            cur = cur.getparent()
        owner, link = info[cur] if cur is not None else (el, False)
        for e in reversed(path):
            tag = e.tag if isinstance(e.tag, str) else ""
            if owner is None or not tag or tag in _NOT_PROSE:
                owner, link = None, False
            elif tag in _INLINE_TAGS:
                link = link or tag == "a"
            else:
                owner, link = e, False
            info[e] = (owner, link)
        return info[el]

    body = tree.find(".//body")
    runs: list[list] = []
    last = None
    for node in _VISIBLE_TEXT(tree if body is None else body):
        el = node.getparent()
        if node.is_tail:
            el = el.getparent()
            if el is None:
                continue
        owner, link = info.get(el) or lookup(el)
        if owner is None:
            continue
        if last is not None and last[0] is owner:
            last[1].append(node)
            last[2] += len(node) if link else 0
        else:
            last = [owner, [node], len(node) if link else 0]
            runs.append(last)
    return runs


class _Attrs:
    """Cached class/id words of elements (``sectionIntro`` -> section, intro)."""

    def __init__(self):
        self.cache: dict = {}

    def __call__(self, el) -> frozenset:
        words = self.cache.get(el)
        if words is None:
            value = f"{el.get('class') or ''} {el.get('id') or ''}"
            words = frozenset(w.casefold() for w in _ATTR_WORD.findall(_CAMEL.sub(" ", value)))
            self.cache[el] = words
        return words


def _needs_second_opinion(text: str, runs: list[list]) -> bool:
    """Whether trafilatura's fast result is doubtful enough to pay for its full cascade.

    The page's prose is the text of its blocks that read as paragraphs: long
    runs (:data:`_PROSE_BYTES`) that are not mostly links. A result covering
    less than a quarter of it has probably missed the article (trafilatura
    settled on a teaser or a lede); one three times longer is mostly
    not prose (lists of links, short lines, a whole-page dump). Only then do
    readability and justext get a say, as in trafilatura's default mode;
    elsewhere they rarely change the text and cost a third of the time.
    """
    prose = 0
    for _owner, nodes, link_chars in runs:
        run = " ".join(" ".join(nodes).split())
        if link_chars * 2 < len(run) and (size := len(run.encode())) >= _PROSE_BYTES:
            prose += size
    size = len(text.encode())
    return size < prose * _MIN_PROSE_SHARE or size > prose * _MAX_PROSE_MULTIPLE


def recover_dropped_blocks(tree, text: str, *, runs: list[list] | None = None) -> str:
    """Add back the article blocks trafilatura dropped inside the article's container.

    The container is the deepest element holding 80% of the text trafilatura
    kept. Inside it, every text run trafilatura dropped is added back when it
    is not link-dense (menus, teasers), not a cut-off lede ending in an
    ellipsis, not inside an element whose class/id names furniture (comments,
    share bars, author boxes, captions...) or non-prose (code, forms,
    figures), and is either a paragraph, list item,
    subheading, table cell or quote, or a block with the same tag and class as
    a sibling whose text was kept (the sections of a page builder). Runs are
    added once, after the extracted text.

    Args:
        tree: the parsed page trafilatura extracted from (after cleanup).
        text: trafilatura's text.
        runs: the page's :func:`_text_runs`, when the caller has them.

    Returns:
        The text with the recovered runs appended, one per line.
    """
    extracted = _match_key(text)
    if not extracted:
        return text
    scored = []
    for owner, nodes, link_chars in _text_runs(tree) if runs is None else runs:
        run = " ".join(nodes)
        key = _match_key(run)
        if key:
            scored.append((owner, run, key, key in extracted, link_chars / len(run)))
    weight: dict = {}  # element -> kept characters below it
    depth: dict = {}
    total = 0
    for owner, _run, key, kept, _ in scored:
        if kept and len(key) >= _ANCHOR_CHARS:
            total += len(key)
            chain = [owner, *owner.iterancestors()]
            for i, el in enumerate(chain):
                weight[el] = weight.get(el, 0) + len(key)
                depth[el] = len(chain) - i
    if not total:
        return text
    container = max((el for el, w in weight.items() if w >= _CONTAINER_SHARE * total), key=depth.__getitem__)
    attrs = _Attrs()
    kept_children: dict = {}  # parent -> [(tag, class words)] of its children holding kept text
    added, seen = [], set()
    for owner, run, key, kept, link_share in scored:
        if kept or link_share >= _MAX_LINK_SHARE or key in seen:
            continue
        chain = []
        for el in (owner, *owner.iterancestors()):
            if el is container:
                break
            chain.append(el)
        else:
            continue  # outside the container
        if _TRUNCATED.search(run) or any(attrs(el) & _FURNITURE_WORDS for el in chain):
            continue
        if owner.tag not in _CONTENT_TAGS and not _like_kept_sibling(chain, weight, attrs, kept_children):
            continue
        seen.add(key)
        added.append(" ".join(run.split()))
    return text + "\n" + "\n".join(added) if added else text


def _like_kept_sibling(chain: list, weight: dict, attrs: _Attrs, kept_children: dict) -> bool:
    """Whether an element on ``chain`` (up to the first one holding kept text) repeats a kept sibling."""
    for el in chain:
        if el in weight:
            return False
        parent = el.getparent()
        if parent is None:
            return False
        siblings = kept_children.get(parent)
        if siblings is None:
            siblings = kept_children[parent] = [(c.tag, attrs(c)) for c in parent if c in weight]
        words = attrs(el)
        for tag, other in siblings:
            if tag == el.tag and (other == words or (words and 2 * len(other & words) >= len(other | words))):
                return True
    return False


def drop_headline(text: str, tree, title: str) -> str:
    """Drop a first line that only repeats the headline (it is ``Article.title``, not body text).

    Args:
        text: the extracted text.
        tree: the parsed page, for its ``<h1>`` headings.
        title: the page title found in the head.

    Returns:
        The text without that line; unchanged when it is the only line.
    """
    first, sep, rest = text.partition("\n")
    key = _match_key(first)
    if not sep or not key or not rest.strip():
        return text
    if key == _match_key(title) or any(key == _match_key(" ".join(h.itertext())) for h in tree.iter("h1")):
        return rest.lstrip("\n")
    return text
