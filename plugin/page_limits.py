"""The bounds on one page, in one place: its bytes, its inflated bytes and the complexity of its markup.

A page is checked before anything expensive happens to it. Its bytes, and
the bytes it inflates to (gzip, deflate), are counted while they stream, so
a compression bomb costs at most the limit plus one chunk
(:func:`inflate_capped`). Its markup is scanned once before libxml2 parses
it (:func:`guard_markup`): libxml2 checks an element's attributes for
duplicates in quadratic time and cannot be interrupted by the page timeout
(the alarm only fires between Python bytecodes), so a page with too many
attributes on one element, too many elements or too deep a nesting is
rejected as ``too_complex`` instead. The scan also drops character
references to control characters (``&#1;``), which libxml2 refuses.

Pure: no I/O; the limits come from :class:`~newsfold.plugin.settings.Settings`.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

from newsfold.plugin.errors import InputError

#: ``NEWSFOLD_MAX_PAGE_BYTES``'s default: the one page-size limit (raw bytes, and bytes after inflating)
DEFAULT_MAX_PAGE_BYTES = 10 * 1024 * 1024
#: bytes inflated per step: what a bomb can cost above the limit
INFLATE_CHUNK = 1 << 16


@dataclass(frozen=True)
class MarkupLimits:
    """How complex a page's markup may be before it is parsed (``NEWSFOLD_MAX_ATTRIBUTES`` and the others).

    Attributes:
        max_attributes: attributes on one element. libxml2's duplicate check costs the square of
            this per element: 200,000 distinct attributes on one element take about a minute.
        max_depth: elements open inside each other. libxml2 reads 256 levels and silently drops
            everything deeper, so a deeper page would lose its end without a word.
        max_elements: elements in the page.
        max_attribute_chars: characters of one attribute value. A longer value is emptied before
            parsing (the page is kept): libxml2, lxml and trafilatura copy a value several times,
            and one 9 MB attribute cost a worker about 80 MB. No article text lives in an
            attribute; an inline ``data:`` picture or a framework's JSON props may be long.
    """

    max_attributes: int = 200
    max_depth: int = 256
    max_elements: int = 200_000
    max_attribute_chars: int = 65_536

    def __post_init__(self) -> None:
        for name in ("max_attributes", "max_depth", "max_elements", "max_attribute_chars"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be >= 1, got {getattr(self, name)}")


class TooComplex(ValueError):
    """The markup is over one of the :class:`MarkupLimits`; the message says which and where."""


# ------------------------------------------------------------------ bytes


def inflate_capped(data: bytes, max_bytes: int, *, keep: bool = True) -> bytes | None:
    """Gzip ``data`` inflated (every member), or None as soon as it passes ``max_bytes``.

    At most ``max_bytes`` plus one chunk is ever held, whatever the
    compression ratio; with ``keep=False`` nothing is kept (the size is
    checked, ``b""`` returned when within the limit).

    Raises:
        zlib.error: the data is not valid gzip data.
        EOFError: the data ends inside a gzip member.
    """
    out = bytearray()
    total = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pending = rest
        while pending:
            piece = inflater.decompress(pending, INFLATE_CHUNK)
            total += len(piece)
            if total > max_bytes:
                return None
            if keep:
                out += piece
            pending = inflater.unconsumed_tail
        if not inflater.eof:
            raise EOFError("the gzip data ends inside a member")
        rest = inflater.unused_data
        if not rest.startswith(b"\x1f\x8b"):  # padding after the last member
            break
    return bytes(out)


class CappedInflater:
    """A stream of compressed chunks inflated with a hard cap: :meth:`feed` returns what it gave, or raises.

    For a reader that gets its compressed bytes piece by piece (an HTTP body
    in a WARC record). ``encoding`` is an HTTP ``Content-Encoding``
    (``gzip``, ``x-gzip`` or ``deflate``, raw or zlib-wrapped).
    """

    ENCODINGS = ("gzip", "x-gzip", "deflate")

    def __init__(self, encoding: str, max_bytes: int) -> None:
        encoding = encoding.strip().lower()
        self.encoding = encoding
        if encoding not in self.ENCODINGS:
            raise InputError(f"encoding must be one of {', '.join(self.ENCODINGS)}, got {encoding!r}")
        # gzip or zlib header detected (32 + MAX_WBITS); raw deflate is tried when that fails on the first bytes
        self._wbits = 32 + zlib.MAX_WBITS
        self._inflater = zlib.decompressobj(self._wbits)
        self._raw_tried = encoding != "deflate"
        self._started = False
        self.max_bytes = max_bytes
        self.total = 0

    def feed(self, chunk: bytes) -> bytes:
        """The inflated bytes of ``chunk``.

        Raises:
            OverflowError: the inflated total passed ``max_bytes`` (nothing more is inflated).
            zlib.error: the data is not valid compressed data.
        """
        out = bytearray()
        pending = chunk
        while pending:
            if self._inflater.eof:  # a second gzip member, or trailing bytes after the stream
                rest = self._inflater.unused_data + pending
                if not rest.startswith(b"\x1f\x8b"):
                    break
                self._inflater = zlib.decompressobj(self._wbits)
                pending = rest
            try:
                piece = self._inflater.decompress(pending, INFLATE_CHUNK)
            except zlib.error:
                if self._started or self._raw_tried:
                    raise
                self._raw_tried = True  # "deflate" sent without its zlib header, as some servers do
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                continue
            self._started = True
            self.total += len(piece)
            if self.total > self.max_bytes:
                raise OverflowError(f"inflates to more than {self.max_bytes} bytes")
            out += piece
            pending = self._inflater.unconsumed_tail
        return bytes(out)


# ------------------------------------------------------------------ markup

#: a comment, or a start or end tag with its attributes (a value quoted after ``=`` may hold ``>``; an unclosed
#: quote or tag runs to the end of the page, as browsers read it); linear, and possessive (``*+``) so a tag of a
#: million attributes keeps no backtracking state (a plain ``*`` held 700 MB for a 10 MB tag)
_TAG = re.compile(r"""<(?:!--|(/?)([A-Za-z][^\s/>]*)((?:[^>=]+|=\s*"[^"]*(?:"|\Z)|=\s*'[^']*(?:'|\Z)|=)*+)(?:>|\Z))""")
#: an attribute: a name, then maybe ``=`` and a value (quotes count only right after ``=``, as in browsers)
_ATTRIBUTE = re.compile(r"""[^\s/>=]+(?:\s*=\s*(?:"[^"]*"?|'[^']*'?|[^\s>]*))?""")
#: an attribute's value with its quotes, if any (group 1)
_VALUE = re.compile(r"""=\s*("[^"]*"?|'[^']*'?|[^\s>"']+)""")
#: elements never opened as a parent: void elements, and those whose end tag may be left out (the parser
#: closes them itself), so an unclosed ``<p>`` or ``<li>`` does not count as a level
_NO_LEVEL = frozenset(
    "area base basefont bgsound br col embed frame hr img input keygen link meta param source track wbr "
    "p li dt dd option optgroup tr td th thead tbody tfoot colgroup rb rt rp rtc html head body".split()
)
#: elements whose content is text, not markup (tags inside are not elements)
_RAW_TEXT = frozenset("script style textarea title xmp iframe noembed noframes plaintext".split())
#: numeric character references to characters XML forbids (C0 controls but tab/LF/CR, surrogates,
#: U+FFFE/U+FFFF, beyond U+10FFFF): libxml2 stops reading the page at one
_CHAR_REF = re.compile(r"&#(?:[xX]0*([0-9a-fA-F]{1,8})|0*([0-9]{1,10}));?")


def _forbidden(code: int) -> bool:
    controls = code < 0x20 and code not in (0x09, 0x0A, 0x0D)
    return controls or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF) or code > 0x10FFFF


def _drop_forbidden_ref(match: re.Match[str]) -> str:
    hex_digits, digits = match.groups()
    code = int(hex_digits, 16) if hex_digits else int(digits)
    return "" if _forbidden(code) else match.group(0)


def _count_attributes(body: str, name: str, element: int, limit: int) -> None:
    """Count a tag's attributes up to ``limit`` + 1 (never all of a million).

    Raises:
        TooComplex: more than ``limit``.
    """
    for count, _ in enumerate(_ATTRIBUTE.finditer(body), 1):
        if count > limit:
            raise TooComplex(
                f"element {element:,} (<{name[:40]}>) has more than {limit:,} attributes (NEWSFOLD_MAX_ATTRIBUTES)"
            )


def _long_values(body: str, start: int, limit: int) -> list[tuple[int, int]]:
    """Where the page holds this tag's attribute values (quotes included) of more than ``limit`` characters;
    ``start``: where ``body`` begins in the page."""
    return [(start + m.start(1), start + m.end(1)) for m in _VALUE.finditer(body) if m.end(1) - m.start(1) > limit]


def _blank_values(html: str, spans: list[tuple[int, int]]) -> str:
    """The page with each span (an attribute value, quotes included) made an empty quoted value."""
    pieces, last = [], 0
    for start, end in spans:
        pieces += [html[last:start], '""']
        last = end
    pieces.append(html[last:])
    return "".join(pieces)


def _check_start_tag(body: str, name: str, element: int, limits: MarkupLimits, *, start: int) -> list[tuple[int, int]]:
    """A long start tag checked (the page's ``element``-th): its attributes; its long values
    (:func:`_long_values`).

    Raises:
        TooComplex: over ``max_attributes``.
    """
    if len(body) > 2 * limits.max_attributes:  # shorter, it cannot hold more (each takes 2 characters)
        _count_attributes(body, name, element, limits.max_attributes)
    if len(body) <= limits.max_attribute_chars:
        return []
    return _long_values(body, start, limits.max_attribute_chars)


def _close(name: str, open_names: list[str], open_count: dict[str, int]) -> None:
    """An end tag of an open element: it closes that element and those still open inside it."""
    while open_names:
        top = open_names.pop()
        open_count[top] -= 1
        if top == name:
            return


def check_markup(html: str, limits: MarkupLimits) -> list[tuple[int, int]]:
    """Scan the markup once, stopping at the first limit passed.

    The scan reads tags as an HTML parser does, approximately: comments and
    the text of ``script``/``style``/``title``... hold no elements; void
    elements, ``<x/>`` and elements whose end tag may be left out open no
    level; an end tag closes the open element it names and those inside it.
    The regular expression finds the tags; Python looks only at what each
    one changes (a start tag shorter than any limit is counted, not read).

    Returns:
        Where the attribute values longer than ``limits.max_attribute_chars`` lie (start, end), in order.

    Raises:
        TooComplex: naming the limit and the setting that sets it.
    """
    lower: str | None = None
    long_values: list[tuple[int, int]] = []
    open_names: list[str] = []
    open_count: dict[str, int] = {}
    elements = 0
    max_elements, max_depth = limits.max_elements, limits.max_depth
    short = min(2 * limits.max_attributes, limits.max_attribute_chars)  # a body this long is over no limit
    n = len(html)
    pos = 0
    while pos < n:
        for match in _TAG.finditer(html, pos):
            closing, name, body = match.groups()
            if name is None:  # a comment: the scan goes on after its end
                end = html.find("-->", match.end())
                pos = n if end < 0 else end + 3
                break
            name = name.lower()
            if closing:
                if open_count.get(name):
                    _close(name, open_names, open_count)
                continue
            elements += 1
            if elements > max_elements:
                raise TooComplex(f"the page has more than {max_elements:,} elements (NEWSFOLD_MAX_ELEMENTS)")
            if len(body) > short:
                long_values += _check_start_tag(body, name, elements, limits, start=match.start(3))
            if name in _RAW_TEXT:  # its text holds no tags: the scan goes on at its end tag
                if lower is None:
                    lower = html.lower()
                end = lower.find("</" + name, match.end())
                pos = n if end < 0 else end
                break
            if name in _NO_LEVEL or body.rstrip().endswith("/"):
                continue
            open_names.append(name)
            open_count[name] = open_count.get(name, 0) + 1
            if len(open_names) > max_depth:
                raise TooComplex(
                    f"the page nests elements more than {max_depth:,} deep (NEWSFOLD_MAX_DEPTH); "
                    "the parser would drop everything below that"
                )
        else:  # no tag left
            break
    return long_values


def guard_markup(html: str, limits: MarkupLimits) -> str:
    """The page's markup made safe to parse: checked against ``limits``, attribute values over
    ``limits.max_attribute_chars`` emptied, references to forbidden characters dropped.

    Raises:
        TooComplex: see :func:`check_markup`.
    """
    long_values = check_markup(html, limits)
    if long_values:
        html = _blank_values(html, long_values)
    if "&#" in html:
        html = _CHAR_REF.sub(_drop_forbidden_ref, html)
    return html
