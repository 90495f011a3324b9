"""From page bytes to a parsed tree: decoding (charsets, gzip, binary files) and parsing as browsers would."""

from __future__ import annotations

import codecs
import gzip
import io
import re
import zlib

from lxml import etree

from newsfold.plugin.extract_result import Rejection

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

    Markup trafilatura's loader refuses (no ``html`` near the start and a
    single wrapper element) is parsed leniently by lxml.

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
        tree = None
    if tree is None or len(tree) < 1 or (is_dubious_html(beginning) and len(tree) < 2):
        return _parse_leniently(html)
    _adopt_stray_roots(tree)
    return tree


def _adopt_stray_roots(tree) -> None:
    """Move markup libxml2 left beside the root (content after ``</html>``) into the body, as browsers show it."""
    strays = [el for el in tree.itersiblings() if isinstance(el.tag, str)]
    if not strays:
        return
    body = tree.find("body")
    target = tree if body is None else body
    for stray in strays:
        target.extend(list(stray) if stray.tag == "html" else [stray])


def _parse_leniently(html: str):
    """Parse markup trafilatura's loader refuses: no ``html`` near the start and a single wrapper element."""
    from lxml import html as lxml_html

    try:
        tree = lxml_html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return None
    return tree if tree.find(".//body") is not None else None
