"""Streaming readers that turn operator inputs into page records.

An input is a PAGES.jsonl file, a directory tree of HTML files, or a WARC file
(``.warc`` / ``.warc.gz``). Every reader is a generator that holds one page at
a time: nothing reads a whole input into memory (the one exception is a
directory's ``metadata.jsonl``, whose fields are kept in a dict keyed by path).

Readers never raise for bad input. Anything unusable becomes a
:class:`PageRecord` with ``error`` set (and ``id`` when known) and the
iteration goes on: a bad JSONL line, a missing or unreadable file, a broken
sidecar, a malformed or truncated WARC record. After damage in a WARC file the
reader yields one error record describing it and resynchronises on the next
record that parses (next gzip member, or next ``WARC/1.x`` line in an
uncompressed file); a file cut short yields everything before the cut.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from warcio.archiveiterator import WARCIterator
from warcio.bufferedreaders import DecompressingBufferedReader
from warcio.limitreader import LimitReader
from warcio.utils import BUFF_SIZE

#: File names a directory walk treats as pages (compared case-insensitively).
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
#: Media types of WARC payloads that are pages.
HTML_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml"})
#: Memory guard: a page larger than this becomes an error record instead of being read.
#: Deliberately above ``NEWSFOLD_MAX_PAGE_BYTES`` (10 MiB), so ordinary oversize pages
#: still reach the extractor and are rejected there as ``too_large``.
MAX_HTML_BYTES = 64 * 1024 * 1024
#: Name of the optional per-directory metadata file (relative path -> fields).
METADATA_FILE = "metadata.jsonl"

#: WARC headers in which newsfold keeps page metadata (written by ``indexer.archive``,
#: honoured by ``iter_warc`` so an archive can be ingested again as a source).
NEWSFOLD_HEADERS = {
    "id": "WARC-Newsfold-Id",
    "url": "WARC-Newsfold-Url",
    "site": "WARC-Newsfold-Site",
    "lang": "WARC-Newsfold-Lang",
    "published": "WARC-Newsfold-Published",
    "origin": "WARC-Newsfold-Origin",
}
#: WARC-Target-URI written for a page that has no URL (read back as ``url=None``).
NO_URL = "urn:newsfold:no-url"

_GZIP_MAGIC = b"\x1f\x8b"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SCAN_CHUNK = 1 << 20


@dataclass
class PageRecord:
    """One page from an input, or (``error`` set) the reason an input item is unusable.

    ``html`` holds the raw bytes exactly as found (a ``.html.gz`` file stays gzip:
    the extractor handles it). ``origin`` is a human-readable location such as
    ``pages.jsonl:7``, ``site/a.html`` or ``crawl.warc.gz#record 12 (byte 40960)``.
    A JSONL reader in "paths only" mode leaves ``html`` None and sets
    ``html_path`` instead, for workers that read the files themselves.
    """

    id: str | None
    url: str | None
    site: str | None
    lang: str | None
    published: str | None
    html: bytes | None
    error: str | None = None
    origin: str = ""
    html_path: str | None = None
    reason: str = "unreadable"  # the rejection reason of an error record

    def meta(self) -> dict:
        """``{"id", "url", "site", "lang", "published"}``: the task-payload fields besides the HTML."""
        return {"id": self.id, "url": self.url, "site": self.site, "lang": self.lang, "published": self.published}

    def path_payload(self) -> dict:
        """The task payload of a "paths only" record: the metadata and ``html_path`` (the worker reads the file)."""
        return {**self.meta(), "html_path": self.html_path}


@dataclass
class SourceStats:
    """Counts filled in while a reader runs (pass one in as ``stats=``)."""

    pages: int = 0
    errors: int = 0
    #: WARC records passed over on purpose, by reason: ``warcinfo``, ``request``, ``metadata``,
    #: ``revisit`` (record types), ``not-html`` (content type), ``http-status`` (non-2xx response).
    skipped: Counter = field(default_factory=Counter)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def _error(
    message: str, origin: str, *, id: str | None = None, url: str | None = None, reason: str = "unreadable"
) -> PageRecord:
    return PageRecord(
        id=id, url=url, site=None, lang=None, published=None, html=None, error=message, origin=origin, reason=reason
    )


class PageFileError(Exception):
    """A page file that may not or cannot be read: ``reason`` is the rejection reason, ``detail`` says why."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def read_page_file(path: Path | str, *, max_bytes: int, roots: list[str] | None = None) -> bytes:
    """The raw bytes of a page file, read safely.

    At most ``max_bytes + 1`` bytes are read, so ``/dev/zero`` costs nothing;
    only regular files are read (a FIFO, a device or a folder is refused
    without blocking); with ``roots``, only files inside one of those folders
    (after following links) are read.

    Raises:
        PageFileError: ``unreadable``, ``not_a_file``, ``outside_roots`` or ``too_large``.
    """
    try:
        real = Path(path).resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise PageFileError("unreadable", f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if roots is not None and not any(real.is_relative_to(Path(root).resolve()) for root in roots):
        allowed = ", ".join(roots) or "none configured (NEWSFOLD_READ_ROOTS)"
        raise PageFileError("outside_roots", f"{path} is outside the folders pages may be read from: {allowed}")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise PageFileError("unreadable", f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PageFileError("not_a_file", f"{path} is not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise PageFileError("unreadable", f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise PageFileError("too_large", f"{path} is larger than {max_bytes} bytes")
    return data


def _counted(records: Iterator[PageRecord], stats: SourceStats | None) -> Iterator[PageRecord]:
    for record in records:
        if stats is not None:
            if record.error:
                stats.errors += 1
            else:
                stats.pages += 1
        yield record


def _text(value) -> str | None:
    """A metadata value as a non-empty string, or None."""
    if value is None or isinstance(value, dict | list):
        return None
    value = str(value)
    return value if value.strip() else None


def _published(fields: dict) -> str | None:
    return _text(fields.get("published")) or _text(fields.get("date"))


def _read_html(path: Path, max_bytes: int) -> tuple[bytes | None, str | None]:
    """The file's raw bytes, or an error message."""
    try:
        return read_page_file(path, max_bytes=max_bytes), None
    except PageFileError as exc:
        return None, exc.detail


# --------------------------------------------------------------------------- JSONL


def _file_record(path: Path, fields: dict, page_id: str | None, url: str | None, origin: str, max_bytes: int):
    """A record for an HTML file and its metadata fields, or an error record when it cannot be read."""
    html, problem = _read_html(path, max_bytes)
    if problem:
        return _error(problem, origin, id=page_id, url=url)
    return PageRecord(
        id=page_id,
        url=url,
        site=_text(fields.get("site")),
        lang=_text(fields.get("lang")),
        published=_published(fields),
        html=html,
        origin=origin,
    )


def iter_jsonl(
    path: Path | str,
    *,
    stats: SourceStats | None = None,
    max_bytes: int = MAX_HTML_BYTES,
    read_html: bool = True,
    allow_outside: bool = False,
):
    """Yield one record per non-blank line of PAGES.jsonl.

    Lines are ``{"id", "url", "site", "lang", "html"}`` (plus optional
    ``published`` or ``date``) with ``html`` a path relative to the JSONL file
    (``.html`` or ``.html.gz``, read as raw bytes). The id defaults to
    ``line-N``. With ``read_html=False`` ("paths only") no page file is opened:
    each record carries the resolved ``html_path`` for a worker to read, and
    a missing file is that worker's ``unreadable`` rejection.

    An ``html`` path must stay inside the JSONL file's folder (``../`` and
    absolute paths elsewhere are an ``outside_folder`` error) unless
    ``allow_outside``; a line repeating an earlier line's id is a
    ``duplicate_id`` error (the first line wins).
    """
    return _counted(_jsonl(Path(path), max_bytes, read_html, allow_outside), stats)


def _json_objects(fh, name: str) -> Iterator[tuple[int, str, dict | str]]:
    """``(line number, origin, object)`` per non-blank JSON line; a problem string instead of a bad line's object."""
    for n, raw in enumerate(fh, 1):
        line = raw.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield n, f"{name}:{n}", f"is not valid JSON: {exc.msg}"
            continue
        yield n, f"{name}:{n}", row if isinstance(row, dict) else "is not a JSON object"


def _jsonl(path: Path, max_bytes: int, read_html: bool = True, allow_outside: bool = False) -> Iterator[PageRecord]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield _error(f"cannot read {path}: {exc.strerror or exc}", str(path))
        return
    base = path.resolve().parent
    seen: dict[str, int] = {}
    with fh:
        for n, origin, row in _json_objects(fh, path.name):
            if isinstance(row, str):
                yield _error(f"line {n} {row}", origin)
                continue
            page_id = _text(row.get("id")) or f"line-{n}"
            url = _text(row.get("url"))
            html_path = row.get("html")
            if not isinstance(html_path, str) or not html_path.strip():
                yield _error(f"line {n} has no html path", origin, id=page_id, url=url)
                continue
            if page_id in seen:
                first = seen[page_id]
                message = f"duplicate_id: line {n} repeats the id {page_id!r} of line {first} (the first is kept)"
                yield _error(message, origin, id=page_id, url=url, reason="duplicate_id")
                continue
            seen[page_id] = n
            if not allow_outside and not (base / html_path).resolve().is_relative_to(base):
                message = (
                    f"outside_folder: line {n}: the html path {html_path[:200]!r} leads outside the page list's "
                    f"folder {base} (allow it with --allow-outside-paths)"
                )
                yield _error(message, origin, id=page_id, url=url, reason="outside_folder")
                continue
            if not read_html:
                yield PageRecord(
                    id=page_id,
                    url=url,
                    site=_text(row.get("site")),
                    lang=_text(row.get("lang")),
                    published=_published(row),
                    html=None,
                    origin=origin,
                    html_path=str(base / html_path),
                )
                continue
            yield _file_record(base / html_path, row, page_id, url, origin, max_bytes)


# --------------------------------------------------------------------------- directory


def _html_suffix(name: str) -> str | None:
    lower = name.lower()
    # longest first, so "a.html.gz" is ".html.gz", not ".gz"
    for suffix in sorted(HTML_SUFFIXES, key=len, reverse=True):
        if lower.endswith(suffix) and len(name) > len(suffix):
            return suffix
    return None


def _walk(folder: Path, rel: PurePosixPath) -> Iterator[tuple[Path, PurePosixPath]]:
    """HTML files under ``folder`` in sorted path order; hidden entries and symlinked folders are skipped."""
    try:
        with os.scandir(folder) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(Path(entry.path), rel / entry.name)
            elif entry.is_file() and _html_suffix(entry.name):
                yield Path(entry.path), rel / entry.name
        except OSError:
            continue


def _norm_rel(value) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    parts = [p for p in PurePosixPath(value.strip().replace("\\", "/")).parts if p not in (".", "/")]
    return "/".join(parts) or None


def _load_metadata(root: Path) -> tuple[dict[str, tuple[int, dict]], list[PageRecord]]:
    """``metadata.jsonl`` as {relative path: (line, fields)}, plus error records for its bad lines."""
    meta_path = root / METADATA_FILE
    mapping: dict[str, tuple[int, dict]] = {}
    errors: list[PageRecord] = []
    if not meta_path.is_file():
        return mapping, errors
    try:
        fh = meta_path.open("rb")
    except OSError as exc:
        return mapping, [_error(f"cannot read {meta_path}: {exc.strerror or exc}", METADATA_FILE)]
    with fh:
        for n, origin, row in _json_objects(fh, METADATA_FILE):
            if isinstance(row, str):
                errors.append(_error(f"{origin} {row}", origin))
                continue
            rel = _norm_rel(row.get("path") or row.get("file") or row.get("html"))
            if rel is None:
                errors.append(_error(f"{origin} has no path", origin, id=_text(row.get("id"))))
                continue
            fields = {k: row.get(k) for k in ("id", "url", "site", "lang", "published", "date") if k in row}
            mapping[rel] = (n, fields)
    return mapping, errors


def _sidecar(path: Path, suffix: str) -> tuple[dict, str | None]:
    """Fields of ``b.html.json`` or ``b.json`` next to ``b.html`` (first found), or an error."""
    stem = path.name[: -len(suffix)]
    names = [path.name + ".json"]
    if path.name.lower().endswith(".gz"):
        names.append(path.name[:-3] + ".json")
    names.append(stem + ".json")
    for name in names:
        candidate = path.with_name(name)
        if not candidate.is_file():
            continue
        try:
            with candidate.open("rb") as fh:
                fields = json.loads(fh.read(1 << 20).decode("utf-8", errors="replace"))
        except OSError as exc:
            return {}, f"cannot read sidecar {candidate.name}: {exc.strerror or exc}"
        except json.JSONDecodeError as exc:
            return {}, f"sidecar {candidate.name} is not valid JSON: {exc.msg}"
        if not isinstance(fields, dict):
            return {}, f"sidecar {candidate.name} is not a JSON object"
        return fields, None
    return {}, None


def iter_directory(root: Path | str, *, stats: SourceStats | None = None, max_bytes: int = MAX_HTML_BYTES):
    """Yield one record per ``.html``/``.htm``/``.xhtml``/``.html.gz`` file under ``root``, in sorted path order.

    Metadata (``id``, ``url``, ``site``, ``lang``, ``published``/``date``) comes
    from an optional ``metadata.jsonl`` at the root (lines with ``path`` relative
    to the root plus fields) and from an optional sidecar next to each page
    (``a/b.html.json`` or ``a/b.json``), the sidecar winning field by field. The
    id defaults to the relative path (``a/b.html``). Bad ``metadata.jsonl`` lines
    come first as error records; entries naming no page under the root come last.
    Hidden files and folders and symlinked folders are skipped.
    """
    return _counted(_directory(Path(root), max_bytes), stats)


def _directory(root: Path, max_bytes: int) -> Iterator[PageRecord]:
    if not root.is_dir():
        yield _error(f"{root} is not a directory", str(root))
        return
    metadata, bad_lines = _load_metadata(root)
    yield from bad_lines
    for path, rel in _walk(root, PurePosixPath()):
        rel_str = rel.as_posix()
        fields = dict(metadata.pop(rel_str, (0, {}))[1])
        side, problem = _sidecar(path, _html_suffix(path.name) or "")
        fields.update(side)
        page_id = _text(fields.get("id")) or rel_str
        url = _text(fields.get("url"))
        if problem:
            yield _error(problem, rel_str, id=page_id, url=url)
            continue
        yield _file_record(path, fields, page_id, url, rel_str, max_bytes)
    for rel_str, (n, fields) in sorted(metadata.items(), key=lambda item: item[1][0]):
        yield _error(
            f"{METADATA_FILE}:{n} names {rel_str}, which is not an HTML file under {root}",
            f"{METADATA_FILE}:{n}",
            id=_text(fields.get("id")),
            url=_text(fields.get("url")),
        )


# --------------------------------------------------------------------------- WARC


class _DamagedData(Exception):
    """Raised instead of warcio's print-and-continue on corrupt compressed data."""


class _StrictReader(DecompressingBufferedReader):
    """warcio's reader, but corrupt gzip data inside a member raises instead of printing to stderr."""

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
    headers: object = None  # warcio StatusAndHeaders (WARC headers)
    http_headers: object = None  # warcio StatusAndHeaders (HTTP headers) or None
    content_type: str | None = None  # WARC Content-Type
    payload: bytes | None = None
    error: str | None = None
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
            if fh.read(2) == _GZIP_MAGIC:  # a gzip member that zlib rejects from its first block
                return f"corrupt gzip member at byte {offset}: cannot be decompressed"
        except OSError:
            pass
    prefix = "corrupt" if isinstance(exc, _DamagedData) else "malformed"
    return f"{prefix} WARC record at byte {offset}: {_describe(exc)}"


def _read_stream(stream, max_bytes: int) -> tuple[bytes | None, str | None]:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(BUFF_SIZE, max_bytes + 1 - total))
        if not chunk:
            return b"".join(chunks), None
        chunks.append(chunk)
        total += len(chunk)
        if total > max_bytes:
            return None, f"page is larger than {max_bytes} bytes"


def read_payload(record, max_bytes: int = MAX_HTML_BYTES) -> tuple[bytes | None, str | None]:
    """A warcio record's payload: HTTP body (de-chunked, content-decoded) for responses, raw block otherwise."""
    has_http = record.rec_type in ("response", "revisit") and record.http_headers is not None
    stream = record.content_stream() if has_http else record.raw_stream
    return _read_stream(stream, max_bytes)


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
    want: Callable[[object], bool],
    *,
    max_bytes: int = MAX_HTML_BYTES,
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
        compressed = fh.read(2) == _GZIP_MAGIC
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
                    pending.error += f" (skipped {item.offset - pending.offset} bytes; resumed at byte {item.offset})"
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
        pending.error += " (no readable record after it)"
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
        item.payload, item.error = read_payload(record, max_bytes)
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
        damage.error += " (whole-file gzip: nothing after it can be read)"
        yield damage


def record_id(headers) -> str | None:
    """WARC-Record-ID without its wrapping: ``<urn:uuid:X>`` -> ``X``."""
    value = headers.get_header("WARC-Record-ID") if headers is not None else None
    if not value:
        return None
    value = value.strip().strip("<>")
    return value[len("urn:uuid:") :] if value.lower().startswith("urn:uuid:") else value


def decode_header_value(value: str | None) -> str | None:
    """Inverse of ``encode_header_value``: JSON string literals are decoded, other values kept."""
    if value is None:
        return None
    if value.startswith('"'):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return value
        return decoded if isinstance(decoded, str) else value
    return value


def encode_header_value(value: str) -> str:
    """A value that survives a WARC header unchanged: plain if safe, else a JSON string literal (ASCII)."""
    safe = value and value == value.strip() and value.isprintable() and value.isascii() and not value.startswith('"')
    return value if safe else json.dumps(value)


def _media_type(value: str | None) -> str:
    return value.split(";", 1)[0].strip().lower() if value else ""


def _looks_like_html(data: bytes) -> bool:
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head


def _page_type(rec_type, headers, http_headers, content_type) -> tuple[str | None, str | None]:
    """(skip reason, media type) of a record: reason None means "a page candidate"."""
    if rec_type == "response":
        if http_headers is None:
            media = _media_type(content_type)
        else:
            if not http_headers.get_statuscode().startswith("2"):
                return "http-status", None
            media = _media_type(http_headers.get_header("Content-Type"))
            if not media:
                media = _media_type(headers.get_header("WARC-Identified-Payload-Type"))
    elif rec_type == "resource":
        if headers.get_header(NEWSFOLD_HEADERS["id"]) is not None:
            return None, "text/html"  # newsfold's own archive record (may hold gzip bytes)
        media = _media_type(content_type)
    else:
        return rec_type or "unknown", None
    if media and media not in HTML_CONTENT_TYPES:
        return "not-html", media
    return None, media


def _date_part(value: str | None) -> str | None:
    if not value:
        return None
    match = _DATE.match(value.strip())
    return match.group(0) if match else None


def page_from_item(item: WarcItem, origin: str) -> PageRecord:
    """A PageRecord from a read WARC item (newsfold headers win over standard WARC ones)."""

    def newsfold(key: str) -> str | None:
        return decode_header_value(item.header(NEWSFOLD_HEADERS[key]))

    url = newsfold("url")
    if url is None:
        target = item.header("WARC-Target-URI")
        url = None if not target or target == NO_URL else target
    page_id = newsfold("id")
    if page_id is None:
        page_id = record_id(item.headers)
    published = newsfold("published")
    if published is None and item.header(NEWSFOLD_HEADERS["id"]) is None:
        # a crawl record: the capture date; newsfold's own archive records keep "no date" as None
        published = _date_part(item.header("WARC-Date"))
    if item.error:
        return _error(item.error, origin, id=page_id, url=url)
    return PageRecord(
        id=page_id,
        url=url,
        site=newsfold("site"),
        lang=newsfold("lang"),
        published=published,
        html=item.payload,
        origin=origin,
    )


def iter_warc(path: Path | str, *, stats: SourceStats | None = None, max_bytes: int = MAX_HTML_BYTES):
    """Yield the HTML pages of a ``.warc`` / ``.warc.gz`` file, streamed record by record.

    Pages are ``response`` records with a 2xx HTTP status and an HTML content
    type (``text/html``, ``application/xhtml+xml``; a missing type is sniffed),
    and ``resource`` records with an HTML content type. ``html`` is the HTTP
    payload as warcio decodes it (de-chunked, content-encoding removed); id is
    the WARC-Record-ID's uuid, url the WARC-Target-URI, published the date part
    of WARC-Date (newsfold's own ``WARC-Newsfold-*`` headers win when present).
    Other records are skipped and counted in ``stats.skipped``. Damage yields
    one error record and reading resumes at the next readable record.
    """
    return _counted(_warc(Path(path), stats, max_bytes), stats)


def _warc(path: Path, stats: SourceStats | None, max_bytes: int) -> Iterator[PageRecord]:
    def want(record) -> bool:
        reason, _ = _page_type(record.rec_type, record.rec_headers, record.http_headers, record.content_type)
        return reason is None

    for item in scan_warc(path, want, max_bytes=max_bytes):
        origin = f"{path.name}#record {item.number} ({'uncompressed ' if item.uncompressed else ''}byte {item.offset})"
        if item.error:
            yield page_from_item(item, origin)
            continue
        reason, media = _page_type(item.rec_type, item.headers, item.http_headers, item.content_type)
        if reason is None and not media and not _looks_like_html(item.payload or b""):
            reason = "not-html"
        if reason is not None:
            if stats is not None:
                stats.skipped[reason] += 1
            continue
        yield page_from_item(item, origin)


# --------------------------------------------------------------------------- dispatch


def _kind(path: Path) -> str | None:
    name = path.name.lower()
    if path.is_dir():
        return "directory"
    if name.endswith(".jsonl"):
        return "jsonl"
    if name.endswith((".warc", ".warc.gz")):
        return "warc"
    return None


def iter_source(path: Path | str, *, stats: SourceStats | None = None, max_bytes: int = MAX_HTML_BYTES):
    """Records of any supported input: a directory, a ``.jsonl`` file, or a ``.warc`` / ``.warc.gz`` file.

    A missing or unsupported input yields a single error record naming it.
    """
    path = Path(path)
    kind = _kind(path)
    if kind == "directory":
        return iter_directory(path, stats=stats, max_bytes=max_bytes)
    if kind == "jsonl":
        return iter_jsonl(path, stats=stats, max_bytes=max_bytes)
    if kind == "warc":
        return iter_warc(path, stats=stats, max_bytes=max_bytes)
    if not path.exists():
        message = f"{path}: no such file or directory"
    else:
        message = f"unsupported input {path}: expected a directory, a .jsonl file or a .warc / .warc.gz file"
    return _counted(iter([_error(message, str(path))]), stats)


def count_hint(path: Path | str) -> int | None:
    """A cheap total for a progress bar: JSONL non-blank lines, HTML files of a directory; None for WARC/unknown."""
    path = Path(path)
    kind = _kind(path)
    try:
        if kind == "jsonl":
            with path.open("rb") as fh:
                return sum(1 for line in fh if line.strip())
        if kind == "directory":
            return sum(1 for _ in _walk(path, PurePosixPath()))
    except OSError:
        return None
    return None
