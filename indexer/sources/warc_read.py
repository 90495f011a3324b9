"""Reading one WARC record strictly: damage raised to the caller, header lines capped, payloads inflated with a cap.

warcio prints corrupt gzip data to stderr and reads a header line of any
length; these readers raise :class:`WarcDamage` instead, so the scanner
(``indexer.sources.warc_scan``) can report it and read on. :class:`Window`
reads one record on its own from its offset and length (the raw-page archive).
"""

from __future__ import annotations

import zlib

from warcio.archiveiterator import WARCIterator
from warcio.bufferedreaders import ChunkedDataReader, DecompressingBufferedReader
from warcio.utils import BUFF_SIZE

from newsfold.indexer.records import PageFileError
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES, CappedInflater

GZIP_MAGIC = b"\x1f\x8b"
#: the longest WARC or HTTP header line read: a longer one (a few KB of gzip can hold 500 MB of one line) is
#: damage, reported and passed over, never a string of that size
MAX_HEADER_LINE = 64 * 1024
#: the most bytes of header lines read in a row (a record's WARC and HTTP headers): millions of short lines
#: are damage too, not millions of parsed headers
MAX_HEADER_BYTES = 1024 * 1024


class WarcDamage(Exception):
    """Damage to a WARC file found while reading: corrupt compressed data, an over-long header."""


class _StrictReader(DecompressingBufferedReader):
    """warcio's reader, but corrupt gzip data inside a member raises instead of printing to stderr, and a line
    longer than :data:`MAX_HEADER_LINE`, or more than :data:`MAX_HEADER_BYTES` of lines in a row, raises instead of
    being read whole (warcio reads headers by lines, bodies by blocks)."""

    _header_bytes = 0  # read by lines since the last read of a body: one record's header block

    def readline(self, length=None):
        cap = MAX_HEADER_LINE + 1
        line = super().readline(cap if length is None or length < 0 else min(length, cap))
        if len(line) > MAX_HEADER_LINE and not line.endswith(b"\n"):
            raise WarcDamage(f"a header line longer than {MAX_HEADER_LINE} bytes")
        self._header_bytes += len(line)
        if self._header_bytes > MAX_HEADER_BYTES:
            raise WarcDamage(f"a header block longer than {MAX_HEADER_BYTES} bytes")
        return line

    def read(self, length=None):
        self._header_bytes = 0
        return super().read(length)

    def _decompress(self, data):
        if self.decompressor is not None and data and getattr(self, "num_block_read", 0) > 0:
            try:
                return self.decompressor.decompress(data)
            except zlib.error as exc:
                raise WarcDamage(f"corrupt gzip data ({exc})") from exc
        # first block of a member: warcio's own logic (falls back to "not compressed")
        return super()._decompress(data)


class StrictWARCIterator(WARCIterator):
    """A WARC-only ArchiveIterator that reports damage to the caller instead of stderr."""

    INC_RECORD = ""  # warcio writes this warning to stderr; we read ``err_count`` instead

    def __init__(self, fileobj, **kwargs):
        super().__init__(fileobj, **kwargs)
        self.reader = _StrictReader(self.fh, block_size=BUFF_SIZE)


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
