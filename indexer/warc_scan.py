"""Reading WARC files that may be damaged: every record that parses, and a readable note for the rest.

After damage the scanner yields one error item describing it and
resynchronises on the next record that parses (the next gzip member, or the
next ``WARC/1.x`` line in an uncompressed file); a file cut short yields
everything before the cut. Each item carries its byte offset, so a record can
be read again on its own (``Window``). What a record means as a page is
``indexer.warc``.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from warcio.archiveiterator import WARCIterator
from warcio.bufferedreaders import ChunkedDataReader, DecompressingBufferedReader
from warcio.limitreader import LimitReader
from warcio.utils import BUFF_SIZE

if TYPE_CHECKING:
    from warcio.recordloader import ArcWarcRecord
    from warcio.statusandheaders import StatusAndHeaders

from newsfold.indexer.records import PageFileError
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES, CappedInflater

GZIP_MAGIC = b"\x1f\x8b"
_SCAN_CHUNK = 1 << 20
#: the longest WARC or HTTP header line read: a longer one (a few KB of gzip can hold 500 MB of one line) is
#: damage, reported and passed over, never a string of that size
MAX_HEADER_LINE = 64 * 1024
#: the most bytes of header lines read in a row (a record's WARC and HTTP headers): millions of short lines
#: are damage too, not millions of parsed headers
MAX_HEADER_BYTES = 1024 * 1024


class _DamagedData(Exception):
    """Raised instead of warcio's print-and-continue on corrupt compressed data."""


class _StrictReader(DecompressingBufferedReader):
    """warcio's reader, but corrupt gzip data inside a member raises instead of printing to stderr, and a line
    longer than :data:`MAX_HEADER_LINE`, or more than :data:`MAX_HEADER_BYTES` of lines in a row, raises instead of
    being read whole (warcio reads headers by lines, bodies by blocks)."""

    _header_bytes = 0  # read by lines since the last read of a body: one record's header block

    def readline(self, length=None):
        cap = MAX_HEADER_LINE + 1
        line = super().readline(cap if length is None or length < 0 else min(length, cap))
        if len(line) > MAX_HEADER_LINE and not line.endswith(b"\n"):
            raise _DamagedData(f"a header line longer than {MAX_HEADER_LINE} bytes")
        self._header_bytes += len(line)
        if self._header_bytes > MAX_HEADER_BYTES:
            raise _DamagedData(f"a header block longer than {MAX_HEADER_BYTES} bytes")
        return line

    def read(self, length=None):
        self._header_bytes = 0
        return super().read(length)

    def _decompress(self, data):
        if self.decompressor is not None and data and getattr(self, "num_block_read", 0) > 0:
            try:
                return self.decompressor.decompress(data)
            except zlib.error as exc:
                raise _DamagedData(f"corrupt gzip data ({exc})") from exc
        # first block of a member: warcio's own logic (falls back to "not compressed")
        return super()._decompress(data)


class StrictWARCIterator(WARCIterator):
    """A WARC-only ArchiveIterator that reports damage to the caller instead of stderr."""

    INC_RECORD = ""  # warcio writes this warning to stderr; we read ``err_count`` instead

    def __init__(self, fileobj, **kwargs):
        super().__init__(fileobj, **kwargs)
        self.reader = _StrictReader(self.fh, block_size=BUFF_SIZE)


class _Gunzip:
    """A whole-file (single-stream) gzip WARC as a plain stream.

    Damage (stream cut short, corrupt data) ends the stream and is kept in
    ``problem``: raising would lose the records warcio has already read ahead.
    """

    def __init__(self, fh):
        self._gz = gzip.GzipFile(fileobj=fh, mode="rb")
        self._pos = 0
        self.problem: str | None = None

    def read(self, size=-1):
        if self.problem:
            return b""
        try:
            data = self._gz.read1(size)  # read() would drop what it decompressed before an EOFError
        except EOFError as exc:
            self.problem, data = f"gzip stream cut short ({exc})", b""
        except (OSError, zlib.error) as exc:
            self.problem, data = f"corrupt gzip data ({exc})", b""
        self._pos += len(data)
        return data

    def tell(self):
        return self._pos


class Window:
    """At most ``length`` bytes of ``fh`` from its current position, as a stream with its own ``tell``."""

    def __init__(self, fh, length: int):
        self._fh = fh
        self._left = max(0, length)
        self._pos = fh.tell()

    def read(self, size=-1):
        if size is None or size < 0 or size > self._left:
            size = self._left
        data = self._fh.read(size) if size else b""
        self._left -= len(data)
        self._pos += len(data)
        return data

    def tell(self):
        return self._pos


@dataclass
class WarcItem:
    """One WARC record as read by :func:`scan_warc`; ``error`` set for damage or an unreadable page."""

    number: int
    offset: int
    length: int
    rec_type: str | None = None
    headers: StatusAndHeaders | None = None  # WARC headers
    http_headers: StatusAndHeaders | None = None  # HTTP headers, or None
    content_type: str | None = None  # WARC Content-Type
    payload: bytes | None = None
    error: str | None = None
    reason: str = "unreadable"  # the rejection reason of ``error`` when it is not damage (``too_large``)
    damage: bool = False  # the error is damage to the file (not just an oversize page)
    uncompressed: bool = False  # offsets count uncompressed bytes (a whole-file gzip read as one stream)

    def header(self, name: str) -> str | None:
        return self.headers.get_header(name) if self.headers is not None else None


def _short(value, limit: int = 80) -> str:
    text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _DamagedData):
        return str(exc)
    message = str(exc).strip() or type(exc).__name__
    if "first line:" in message:  # warcio's "Invalid WARC record, first line: ..." may carry binary junk
        head, _, line = message.partition("first line:")
        message = f"{head.strip()} first line: {_short(repr(line.strip()), 60)}"
    return _short(message, 200)


def _damage_message(fh, offset: int, compressed: bool, exc: BaseException) -> str:
    if compressed and not isinstance(exc, _DamagedData):
        try:
            fh.seek(offset)
            if fh.read(2) == GZIP_MAGIC:  # a gzip member that zlib rejects from its first block
                return f"corrupt gzip member at byte {offset}: cannot be decompressed"
        except OSError:
            pass
    prefix = "corrupt" if isinstance(exc, _DamagedData) else "malformed"
    return f"{prefix} WARC record at byte {offset}: {_describe(exc)}"


def _read_stream(stream, max_bytes: int, inflater: CappedInflater | None = None) -> bytes:
    """At most ``max_bytes`` of ``stream`` (inflated through ``inflater`` when given).

    Raises:
        PageFileError: ``too_large`` past ``max_bytes``, ``undecodable`` for corrupt compressed data.
    """
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(BUFF_SIZE if inflater is not None else min(BUFF_SIZE, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks)
        if inflater is not None:
            try:
                chunk = inflater.feed(chunk)
            except OverflowError:
                raise PageFileError("too_large", f"page inflates to more than {max_bytes} bytes") from None
            except zlib.error as exc:
                raise PageFileError("undecodable", f"corrupt {inflater.encoding} data in the body ({exc})") from None
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            raise PageFileError("too_large", f"page is larger than {max_bytes} bytes")


def read_payload(record, max_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> bytes:
    """A warcio record's payload: HTTP body (de-chunked, content-decoded) for responses, raw block otherwise.

    The body is inflated here, never by warcio, with a hard cap: a record
    whose ``Content-Encoding`` inflates past ``max_bytes`` is refused after
    ``max_bytes`` plus one chunk, whatever its compression ratio. Encodings
    other than gzip and deflate are kept as they are (the extractor refuses
    what it cannot read).

    Raises:
        PageFileError: ``too_large`` or ``undecodable`` (see :func:`_read_stream`).
    """
    if record.rec_type not in ("response", "revisit") or record.http_headers is None:
        return _read_stream(record.raw_stream, max_bytes)
    headers = record.http_headers
    stream = record.raw_stream
    if (headers.get_header("Transfer-Encoding") or "").strip().lower() == "chunked":
        stream = ChunkedDataReader(stream)  # de-chunking only: no decompressor
    encoding = (headers.get_header("Content-Encoding") or "").strip().lower()
    inflater = CappedInflater(encoding, max_bytes) if encoding in CappedInflater.ENCODINGS else None
    return _read_stream(stream, max_bytes, inflater)


def _header_problem(record) -> str | None:
    if not record.rec_type:
        return "record has no WARC-Type"
    length = record.rec_headers.get_header("Content-Length")
    if length is None:
        return "record has no Content-Length"
    if not length.strip().isdigit():
        return f"record has an invalid Content-Length {_short(length)!r}"
    return None


def _find_resync(fh, start: int, compressed: bool) -> int | None:
    """Offset of the next possible record start at or after ``start`` (gzip member or ``WARC/1.x`` line)."""
    needle, shift = (b"\x1f\x8b\x08", 0) if compressed else (b"\nWARC/1.", 1)
    pos = max(0, start - shift)
    fh.seek(pos)
    tail = b""
    while True:
        chunk = fh.read(_SCAN_CHUNK)
        if not chunk:
            return None
        buf = tail + chunk
        base = pos - len(tail)
        i = buf.find(needle)
        while i != -1:
            if base + i + shift >= start:
                return base + i + shift
            i = buf.find(needle, i + 1)
        pos += len(chunk)
        tail = buf[-(len(needle) - 1) :]


def scan_warc(
    path: Path | str,
    want: Callable[[ArcWarcRecord], bool],
    *,
    max_bytes: int = DEFAULT_MAX_PAGE_BYTES,
) -> Iterator[WarcItem]:
    """Every record of a WARC file in order, never raising.

    ``want(record)`` (a warcio record, headers parsed) says whether to read its
    payload into ``WarcItem.payload``. Damage (a record that does not parse, is
    cut short, is not followed by the record separator, or corrupt gzip data)
    becomes one ``WarcItem`` with ``damage=True``; reading resumes at the next
    record that parses and the message says how many bytes were skipped.
    A whole-file gzip (not one member per record) is read as one stream.
    """
    path = Path(path)
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield WarcItem(0, 0, 0, error=f"cannot read {path}: {exc.strerror or exc}", damage=True)
        return
    with fh:
        size = os.fstat(fh.fileno()).st_size
        compressed = fh.read(2) == GZIP_MAGIC
        yield from _scan(fh, size, compressed, want, max_bytes)


def _scan(fh, size: int, compressed: bool, want, max_bytes: int) -> Iterator[WarcItem]:
    number = 0
    pending: WarcItem | None = None  # damage reported once the extent of the damaged region is known
    pos: int | None = 0
    while pos is not None:

        def clamp(offset: int, start: int = pos) -> int:
            # warcio's offsets are exact only at gzip member boundaries; damage inside a member can give
            # nonsense, so keep them in [start, size]: each resync then moves strictly forward
            return min(max(offset, start), size)

        fh.seek(pos)
        it = StrictWARCIterator(fh)
        damage: WarcItem | None = None
        taking = False  # an exception while True belongs to the record already counted
        try:
            for record in it:
                number += 1
                taking = True
                item = _take(it, record, number, want, max_bytes, clamp(it.offset))
                taking = False
                if item.damage:
                    damage = item
                    break
                if compressed and pos == 0 and number == 1 and it.next_line:
                    # the next record starts inside the same gzip member: a whole-file gzip, not one member
                    # per record; such a file cannot be entered at an offset, so read it as one stream
                    yield item
                    yield from _scan_stream(fh, number, want, max_bytes)
                    return
                if pending is not None:
                    pending.error = (
                        pending.error or ""
                    ) + f" (skipped {item.offset - pending.offset} bytes; resumed at byte {item.offset})"
                    yield pending
                    pending = None
                yield item
            else:
                end = clamp(it.offset)
                if end < size:
                    number += 1
                    damage = WarcItem(
                        number,
                        end,
                        size - end,
                        error=f"truncated WARC at byte {end}: the file ends inside a record",
                        damage=True,
                    )
        except Exception as exc:  # the reader's boundary: damage is reported, never raised
            if "non-chunked gzip" in str(exc) and pos == 0 and pending is None:
                yield from _scan_stream(fh, number, want, max_bytes)
                return
            number += 0 if taking else 1
            where = clamp(it.offset)
            damage = WarcItem(number, where, 0, error=_damage_message(fh, where, compressed, exc), damage=True)
        finally:
            it.close()
        if damage is None:
            break
        if pending is None:
            pending = damage
        else:  # a resync candidate that did not parse: still the damage already pending
            number = pending.number
        pos = _find_resync(fh, damage.offset + 1, compressed)
    if pending is not None:
        pending.error = (pending.error or "") + " (no readable record after it)"
        yield pending


def _take(it, record, number: int, want, max_bytes: int, offset: int) -> WarcItem:
    """Read one record to its end and check it; damage is returned as an item, not raised."""
    item = WarcItem(
        number,
        offset,
        0,
        rec_type=record.rec_type,
        headers=record.rec_headers,
        http_headers=record.http_headers,
        content_type=record.content_type,
    )
    problem = _header_problem(record)
    if problem:
        if record.rec_headers.get_header("Content-Length") is None and not record.raw_stream.read(1):
            # nothing after the headers: the file (or gzip member) ends inside the record's header block
            item.error = f"truncated WARC at byte {offset}: the file ends inside the record headers"
        else:
            item.error = f"malformed WARC record at byte {offset}: {problem}"
        item.damage = True
        it.read_to_end()
        return item
    if want(record):
        try:
            item.payload = read_payload(record, max_bytes)
        except PageFileError as exc:  # the page is refused, the file goes on
            item.error, item.reason = exc.detail, exc.reason
    errors_before = it.err_count
    it.read_to_end()
    item.length = it.member_info[1] if it.member_info else 0
    stream = record.raw_stream
    if isinstance(stream, LimitReader) and stream.limit > 0:
        expected = int(record.rec_headers.get_header("Content-Length"))
        item.payload = None
        item.error = f"truncated WARC at byte {offset}: record ends after {expected - stream.limit} of {expected} bytes"
        item.damage = True
    elif it.err_count > errors_before:
        item.payload = None
        item.error = (
            f"malformed WARC record at byte {offset}: not followed by the record separator (wrong Content-Length?)"
        )
        item.damage = True
    return item


def _scan_stream(fh, skip: int, want, max_bytes: int) -> Iterator[WarcItem]:
    """A whole-file gzip WARC: one forward pass (offsets are uncompressed), stops at the first damage."""
    fh.seek(0)
    stream = _Gunzip(fh)
    it = StrictWARCIterator(stream)
    number = 0
    damage: WarcItem | None = None
    try:
        for record in it:
            number += 1
            if number <= skip:  # already read by the per-member pass
                it.read_to_end()
                continue
            item = _take(it, record, number, want, max_bytes, it.offset)
            item.uncompressed = True
            if item.damage:
                damage = item
                break
            yield item
    except Exception as exc:  # the reader's boundary
        damage = WarcItem(
            number + 1,
            it.offset,
            0,
            error=f"malformed WARC record at uncompressed byte {it.offset}: {_describe(exc)}",
            damage=True,
            uncompressed=True,
        )
    finally:
        it.close()
    if stream.problem:  # the real cause of a record cut short or of a quiet end
        number = damage.number if damage else number + 1
        damage = WarcItem(
            number,
            it.offset,
            0,
            error=f"truncated or corrupt WARC after uncompressed byte {it.offset}: {stream.problem}",
            damage=True,
            uncompressed=True,
        )
    if damage is not None:
        damage.error = (damage.error or "") + " (whole-file gzip: nothing after it can be read)"
        yield damage
