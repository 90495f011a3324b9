"""From page bytes to a parsed tree: decoding (charsets, gzip, binary files) and parsing as browsers would."""

from __future__ import annotations

import codecs
import gzip
import io
import re
import zlib
from typing import TYPE_CHECKING

from lxml import etree

from newsfold.plugin.extract.result import Rejection

if TYPE_CHECKING:
    from lxml.html import HtmlElement

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
    "windows-874": "cp874",
    "x-mac-cyrillic": "mac-cyrillic",
}
# Python names of the other encodings of the WHATWG encoding standard (ISO-8859-x and windows-125x by prefix)
_WEB_CODECS = frozenset(
    "utf-8 cp866 koi8-r koi8-u mac-roman mac-cyrillic cp874 tis-620 gbk gb18030 big5 big5hkscs euc_jp iso2022_jp "
    "shift_jis cp932 euc_kr cp949".split()
)


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
            unpacked = _gunzip(data, max_bytes)
        except (OSError, EOFError, zlib.error) as exc:
            return Rejection("undecodable", f"broken gzip data ({exc})")
        if unpacked is None:
            return Rejection("too_large", f"the page unpacks to more than {max_bytes} bytes")
        data = unpacked
    if len(data) > max_bytes:
        return Rejection("too_large", f"the page has {len(data)} bytes, the limit is {max_bytes}")
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            return Rejection("not_html", f"the bytes are {what}, not an HTML page")
    text = _decode(data)
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


def _decode(data: bytes) -> str:
    codec: str | None
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
    for declared in (_DECLARED.search(head), _XML_DECL.search(head)):
        codec = declared and _web_codec(declared.group(1).decode("ascii", "ignore"))
        if not codec:
            continue  # a label no browser knows (a damaged declaration): the next clue decides
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            # a few broken bytes in a page of the declared charset: a statistical
            # guess over the rest is far more likely to be wrong than the declaration
            text = data.decode(codec, errors="replace")
            if text.count("\ufffd") > len(text) // 1000:
                continue
        if _TAG.search(text[:200_000]):
            return text
    from charset_normalizer import from_bytes

    best = from_bytes(data[:200_000]).best()
    codec = _web_codec(best.encoding) if best is not None else None
    if codec:
        text = data.decode(codec, errors="replace")
        if _TAG.search(text[:200_000]):
            return text
    # what a browser falls back to for a page it cannot tell: windows-1252 decodes every byte
    return data.decode("cp1252", errors="replace")


def _web_codec(label: str) -> str | None:
    """The Python codec for an encoding label as a browser reads it, or None when browsers know no such encoding.

    Python accepts labels no browser does (``undefined``, ``idna``, ``rot13``,
    EBCDIC...), some of which raise or turn a page into noise; a declared
    UTF-16 or UTF-32 in ASCII-compatible markup is UTF-8 to a browser.
    """
    label = label.strip().lower()
    label = _WIDER.get(label, label)
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    wider = _WIDER.get(name) or _WIDER.get(name.replace("_", "-"))  # an alias of a narrower encoding
    if wider:
        name = codecs.lookup(wider).name
    if name.startswith(("utf-16", "utf-32")):
        return "utf-8"
    return name if name in _WEB_CODECS or name.startswith(("iso8859-", "cp125")) else None


def html_lang(html: str) -> str | None:
    """The primary language subtag of ``<html lang>``, lower-cased."""
    m = _HTML_LANG.search(html[:20_000])
    return m.group(1).lower() if m else None


_HEAD_CHARS = 4096  # the doctype and <html> fixes of trafilatura's loader look no further
# characters XML forbids, which libxml2 chokes on: C0 controls but tab/LF/CR, U+FFFE, U+FFFF (as UTF-8)
_C0 = bytes(range(9)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))
_INVALID_XML = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]|\xef\xbf[\xbe\xbf]")


def parse_html(html: str) -> HtmlElement | None:
    """Parse a page as trafilatura's loader does, from UTF-8 bytes and with one scan for forbidden characters.

    trafilatura's ``load_html`` runs a regex substitution over the whole page
    and may parse twice; here its repairs run on the first lines only (where
    they apply) and the rest is checked for characters XML forbids with a
    byte translation, which costs a fraction of the regex pass.

    Markup trafilatura's loader refuses (no ``html`` near the start and a
    single wrapper element) is parsed leniently by lxml. When neither yields
    a body, the top of the page is repaired as a browser reads it
    (:func:`_repair_cut_tags`: a tag cut off inside an attribute value, a
    self-closed ``<html/>``) and parsed again.

    Returns:
        The lxml tree, or None when the markup is not HTML.
    """
    tree = _parse(html)
    if tree is None or not _has_body(tree):
        repaired = _repair_cut_tags(html)
        if repaired != html:
            second = _parse(repaired)
            tree = tree if second is None else second
    return tree


def _has_body(tree: HtmlElement) -> bool:
    body = tree.find("body")
    return body is not None and (len(body) > 0 or bool((body.text or "").strip()))


# a quoted attribute value that runs into the next tag: the tag was cut off there
_CUT_VALUE = re.compile(r"""(=\s*(["'])(?:(?!\2)[^<>])*?)\s*(?=<(?:!--|[!/?]?[A-Za-z]))""")
# libxml2 ends the document at a self-closed <html/>, <head/> or <body/>; browsers ignore the slash
_SELF_CLOSED = re.compile(r"(<(?:html|head|body)\b[^<>]*?)\s*/>", re.I)


def _repair_cut_tags(html: str) -> str:
    """Close, near the top of the page, tags cut off in the middle of an attribute value.

    A crawler's damaged copy (a truncated line, a bad splice) can leave
    ``<html lang="en-`` followed by the next tag; the open quote then swallows
    the markup after it, up to a stray quote, and a self-closing ``/>`` there
    ends the document for libxml2, while a browser shows the page. The value
    is closed where the next tag starts.
    """
    head, rest = html[:_HEAD_CHARS], html[_HEAD_CHARS:]
    head = _SELF_CLOSED.sub(r"\1>", _CUT_VALUE.sub(r"\1\2>", head))
    return head + rest


def _parse(html: str) -> HtmlElement | None:
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
        tree = None
    if tree is None or len(tree) < 1 or (is_dubious_html(beginning) and len(tree) < 2):
        return _parse_leniently(html)
    _adopt_stray_roots(tree)
    return tree


def _adopt_stray_roots(tree: HtmlElement) -> None:
    """Move markup libxml2 left beside the root (content after ``</html>``) into the body, as browsers show it."""
    strays = [el for el in tree.itersiblings() if isinstance(el.tag, str)]
    if not strays:
        return
    body = tree.find("body")
    target = tree if body is None else body
    for stray in strays:
        target.extend(list(stray) if stray.tag == "html" else [stray])


def _parse_leniently(html: str) -> HtmlElement | None:
    """Parse markup trafilatura's loader refuses: no ``html`` near the start and a single wrapper element."""
    from lxml import html as lxml_html

    try:
        tree = lxml_html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    return tree if tree.find(".//body") is not None else None
