"""Reading WARC files that may be damaged: every record that parses, and a readable note for the rest.

After damage the scanner yields one error item describing it and
resynchronises on the next record that parses (the next gzip member, or the
next ``WARC/1.x`` line in an uncompressed file); a file cut short yields
everything before the cut. Each item carries its byte offset, so a record can
be read again on its own (``warc_read.Window``). What a record means as a page is
``indexer.sources.warc``.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from warcio.limitreader import LimitReader

if TYPE_CHECKING:
    from warcio.recordloader import ArcWarcRecord
    from warcio.statusandheaders import StatusAndHeaders

from newsfold.indexer.records import PageFileError
from newsfold.indexer.sources.warc_read import GZIP_MAGIC, StrictWARCIterator, WarcDamage, read_payload
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES

_SCAN_CHUNK = 1 << 20


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
    if isinstance(exc, WarcDamage):
        return str(exc)
    message = str(exc).strip() or type(exc).__name__
    if "first line:" in message:  # warcio's "Invalid WARC record, first line: ..." may carry binary junk
        head, _, line = message.partition("first line:")
        message = f"{head.strip()} first line: {_short(repr(line.strip()), 60)}"
    return _short(message, 200)


def _damage_message(fh, offset: int, compressed: bool, exc: BaseException) -> str:
    if compressed and not isinstance(exc, WarcDamage):
        try:
            fh.seek(offset)
            if fh.read(2) == GZIP_MAGIC:  # a gzip member that zlib rejects from its first block
                return f"corrupt gzip member at byte {offset}: cannot be decompressed"
        except OSError:
            pass
    prefix = "corrupt" if isinstance(exc, WarcDamage) else "malformed"
    return f"{prefix} WARC record at byte {offset}: {_describe(exc)}"


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
        yield from _Scan(fh, size, compressed, want, max_bytes).items()


class _Scan:
    """One file's scan: passes from record starts, each until damage, then a resync past the damage."""

    def __init__(self, fh, size: int, compressed: bool, want, max_bytes: int) -> None:
        self.fh, self.size, self.compressed, self.want, self.max_bytes = fh, size, compressed, want, max_bytes
        self.number = 0
        self.pending: WarcItem | None = None  # damage reported once the extent of the damaged region is known

    def items(self) -> Iterator[WarcItem]:
        pos: int | None = 0
        while pos is not None:
            damage = yield from self._pass(pos)
            if damage is None or damage is True:  # a clean end, or the rest read as one gzip stream
                break
            if self.pending is None:
                self.pending = damage
            else:  # a resync candidate that did not parse: still the damage already pending
                self.number = self.pending.number
            pos = _find_resync(self.fh, damage.offset + 1, self.compressed)
        if damage is not True and self.pending is not None:
            self.pending.error = (self.pending.error or "") + " (no readable record after it)"
            yield self.pending

    def _clamp(self, offset: int, start: int) -> int:
        # warcio's offsets are exact only at gzip member boundaries; damage inside a member can give
        # nonsense, so keep them in [start, size]: each resync then moves strictly forward
        return min(max(offset, start), self.size)

    def _pass(self, pos: int) -> Generator[WarcItem, None, WarcItem | Literal[True] | None]:
        """Items from ``pos`` on; returns the damage that ended the pass, None at the end of the file, or True
        when the file turned out to be a whole-file gzip and was read to its end as one stream."""
        self.fh.seek(pos)
        it = StrictWARCIterator(self.fh)
        taking = False  # an exception while True belongs to the record already counted
        try:
            for record in it:
                self.number += 1
                taking = True
                item = _take(it, record, self.number, self.want, self.max_bytes, self._clamp(it.offset, pos))
                taking = False
                if item.damage:
                    return item
                if self.compressed and pos == 0 and self.number == 1 and it.next_line:
                    # the next record starts inside the same gzip member: a whole-file gzip, not one member
                    # per record; such a file cannot be entered at an offset, so read it as one stream
                    yield item
                    yield from _scan_stream(self.fh, self.number, self.want, self.max_bytes)
                    return True
                yield from self._after_damage(item)
            return self._truncation(self._clamp(it.offset, pos))
        except Exception as exc:  # the reader's boundary: damage is reported, never raised
            if "non-chunked gzip" in str(exc) and pos == 0 and self.pending is None:
                yield from _scan_stream(self.fh, self.number, self.want, self.max_bytes)
                return True
            self.number += 0 if taking else 1
            where = self._clamp(it.offset, pos)
            message = _damage_message(self.fh, where, self.compressed, exc)
            return WarcItem(self.number, where, 0, error=message, damage=True)
        finally:
            it.close()

    def _after_damage(self, item: WarcItem) -> Iterator[WarcItem]:
        """A readable record; first the damage pending before it, now that its extent is known."""
        if self.pending is not None:
            skipped = f" (skipped {item.offset - self.pending.offset} bytes; resumed at byte {item.offset})"
            self.pending.error = (self.pending.error or "") + skipped
            yield self.pending
            self.pending = None
        yield item

    def _truncation(self, end: int) -> WarcItem | None:
        """Damage when the records ended before the file did: it ends inside a record."""
        if end >= self.size:
            return None
        self.number += 1
        error = f"truncated WARC at byte {end}: the file ends inside a record"
        return WarcItem(self.number, end, self.size - end, error=error, damage=True)


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
