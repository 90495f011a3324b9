"""The system of record for raw pages: gzip-per-record WARC files that a reindex can re-extract from.

Layout: ``<root>/pages-<UTC timestamp>-p<pid>-<seq>.warc.gz``. Each file opens
with a ``warcinfo`` record, then one ``resource`` record per page whose block
is the page's raw bytes exactly as ingested (any encoding; a ``.html.gz`` page
stays gzip and is typed ``application/gzip``), with ``WARC-Target-URI`` the
page URL and the newsfold metadata in ``WARC-Newsfold-Id``, ``-Url`` (only
when the URL cannot be the Target-URI), ``-Site``, ``-Lang``, ``-Published``
and ``-Origin`` headers. Every record is its own gzip member, so a record can
be read on its own from ``(path, offset, length)``: an :class:`ArchiveRef`.

Concurrency: a :class:`WarcArchive` writes only files it created itself (the
name carries the pid and the file is opened with ``O_EXCL``), so any number
of processes can archive into the same folder without locking; a forked child
that inherits an archive object opens its own file on its first append. Within
a process, appends are serialised by a lock. Each record is serialised in
memory and written with one ``write`` + ``flush``, so once ``append`` returns,
another process can ``read_ref`` it (pass ``fsync=True`` to also survive a
machine crash). Files rotate before a record would push them past
``max_bytes`` (a single bigger record gets a file of its own).
"""

from __future__ import annotations

import io
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from warcio.warcwriter import WARCWriter

from newsfold.indexer.records import PageFileError, PageRecord, SourceStats
from newsfold.indexer.sources.warc import page_from_item, page_record_bytes
from newsfold.indexer.sources.warc_read import StrictWARCIterator, Window, read_payload
from newsfold.indexer.sources.warc_scan import WarcItem, scan_warc
from newsfold.plugin.errors import NewsfoldError
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES

FILE_PREFIX = "pages-"
FILE_SUFFIX = ".warc.gz"


class ArchiveError(NewsfoldError, OSError):
    """An archive record cannot be read (missing file, bad offset, damaged data)."""


@dataclass(frozen=True)
class ArchiveRef:
    """Where one archived page is: the archive file, the record's byte offset and its length in bytes."""

    path: str
    offset: int
    length: int

    def as_dict(self) -> dict:
        return {"path": self.path, "offset": self.offset, "length": self.length}

    @classmethod
    def from_dict(cls, data: dict) -> ArchiveRef:
        try:
            path, offset, length = data["path"], data["offset"], data["length"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not an archive reference: {data!r}") from exc
        if not isinstance(path, str) or not path:
            raise ValueError(f"archive reference without a path: {data!r}")
        for value in (offset, length):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"archive reference with a bad offset or length: {data!r}")
        return cls(path, offset, length)


class WarcArchive:
    """Appends pages to rotating gzip-per-record WARC files under ``root`` (one writer per process).

    Use as a context manager or call :meth:`close`. ``append`` returns the
    :class:`ArchiveRef` of the written record.
    """

    def __init__(self, root: Path | str, *, max_bytes: int = 1_000_000_000, fsync: bool = False):
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.root = Path(root).resolve()
        self.max_bytes = max_bytes
        self.fsync = fsync
        self._lock = threading.Lock()
        self._fh: io.BufferedWriter | None = None
        self._path: Path | None = None
        self._pid: int | None = None
        self._pages = 0  # page records in the current file
        self._seq = 0

    def __enter__(self) -> WarcArchive:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._close_file()

    def _close_file(self) -> None:
        # in a forked child this closes only the child's copy of the descriptor (the buffer is always
        # empty: every append flushes), so the parent's file is left alone
        if self._fh is not None:
            self._fh.close()
        self._fh, self._path, self._pid, self._pages = None, None, None, 0

    def _open_file(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        pid = os.getpid()
        while True:
            self._seq += 1
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            path = self.root / f"{FILE_PREFIX}{stamp}-p{pid}-{self._seq:05d}{FILE_SUFFIX}"
            try:
                fh = path.open("xb")
            except FileExistsError:
                continue
            break
        self._fh, self._path, self._pid, self._pages = fh, path, pid, 0
        info = {"software": "newsfold", "format": "WARC File Format 1.0", "newsfold-pid": str(pid)}
        buffer = io.BytesIO()
        writer = WARCWriter(buffer, gzip=True)
        writer.write_record(writer.create_warcinfo_record(path.name, info))
        self._write(buffer.getvalue())

    def _write(self, data: bytes) -> int:
        fh = self._fh
        if fh is None:
            raise OSError("no archive file is open")
        offset = fh.tell()
        try:
            fh.write(data)
            fh.flush()
            if self.fsync:
                os.fsync(fh.fileno())
        except OSError:
            try:  # leave no half record behind (e.g. disk full)
                fh.truncate(offset)
                fh.seek(offset)
            except OSError:
                pass
            raise
        return offset

    def append(self, record: PageRecord) -> ArchiveRef:
        """Archive one page (its raw ``html`` bytes and metadata); returns where it was written.

        Raises ValueError for a record without HTML (an error record) and
        OSError when the file cannot be written.
        """
        if record.error is not None or not isinstance(record.html, bytes | bytearray):
            raise ValueError(f"cannot archive a record without HTML bytes ({record.error or 'html is missing'})")
        data = page_record_bytes(record, bytes(record.html))
        with self._lock:
            if self._fh is not None and self._pid != os.getpid():
                self._close_file()  # forked: never write into the parent's file
            if self._fh is not None and self._pages and self._fh.tell() + len(data) > self.max_bytes:
                self._close_file()
            if self._fh is None:
                self._open_file()
            offset = self._write(data)
            self._pages += 1
            return ArchiveRef(str(self._path), offset, len(data))


def _resolve(ref: ArchiveRef, root: Path | str | None) -> Path:
    path = Path(ref.path)
    return Path(root) / path.name if root is not None else path


def read_ref(ref: ArchiveRef, *, root: Path | str | None = None, max_bytes: int = DEFAULT_MAX_PAGE_BYTES) -> PageRecord:
    """Read exactly the one record ``ref`` points to (seek + ArchiveIterator over ``length`` bytes).

    The record's WARC digests are checked. ``root`` reads the file of that name
    under another folder (archives mounted elsewhere on a worker). Raises
    :class:`ArchiveError` (an OSError) when the record cannot be read.
    """
    path = _resolve(ref, root)
    where = f"{path}@{ref.offset}"
    try:
        with path.open("rb") as fh:
            fh.seek(ref.offset)
            it = StrictWARCIterator(Window(fh, ref.length), check_digests=True)
            try:
                record = next(iter(it), None)
                if record is None:
                    raise ArchiveError(f"no WARC record at {where}")
                if record.rec_type not in ("resource", "response"):
                    raise ArchiveError(f"{where} is a {record.rec_type} record, not a page")
                try:
                    html = read_payload(record, max_bytes)
                except PageFileError as exc:
                    raise ArchiveError(f"{where}: {exc.detail}") from None
                it.read_to_end()
                if getattr(record.raw_stream, "limit", 0) > 0:
                    raise ArchiveError(f"truncated WARC record at {where}")
                if record.digest_checker.passed is False:
                    raise ArchiveError(f"damaged WARC record at {where}: {'; '.join(record.digest_checker.problems)}")
            finally:
                it.close()
    except ArchiveError:
        raise
    except OSError as exc:
        raise ArchiveError(f"cannot read {where}: {exc.strerror or exc}") from exc
    except Exception as exc:  # warcio parse errors, corrupt gzip data
        raise ArchiveError(f"damaged WARC record at {where}: {exc}") from exc
    item = WarcItem(
        0,
        ref.offset,
        ref.length,
        rec_type=record.rec_type,
        headers=record.rec_headers,
        http_headers=record.http_headers,
        content_type=record.content_type,
        payload=html,
    )
    return page_from_item(item, f"{path.name}@{ref.offset}")


def archive_files(root: Path | str) -> list[Path]:
    """The archive files under ``root`` in write order (names start with a UTC timestamp)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.name.startswith(FILE_PREFIX) and p.name.endswith(FILE_SUFFIX))


def iter_archive(
    root: Path | str,
    *,
    stats: SourceStats | None = None,
    max_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    headers_only: bool = False,
) -> Iterator[tuple[ArchiveRef, PageRecord]]:
    """Every archived page, file by file in write order and record by record, as ``(ref, record)``.

    For a reindex (``indexer.jobs.reindex_plan`` buckets the records it
    lists). Never raises: damage (e.g. the tail of a file still being written
    by another process) comes as a record with ``error`` set, whose ref points
    at the damaged bytes; reading goes on with the next readable record. With
    ``headers_only`` no page is read: records carry their metadata, ``html`` None.
    """
    pages = ("resource", "response")
    want = (lambda record: False) if headers_only else (lambda record: record.rec_type in pages)
    for path in archive_files(root):
        resolved = str(path.resolve())
        for item in scan_warc(path, want, max_bytes=max_bytes):
            ref = ArchiveRef(resolved, item.offset, item.length)
            if not item.error and item.rec_type not in pages:
                if stats is not None:
                    stats.skipped[item.rec_type or "unknown"] += 1
                continue
            page = page_from_item(item, f"{path.name}@{item.offset}")
            if stats is not None:
                if page.error:
                    stats.errors += 1
                else:
                    stats.pages += 1
            yield ref, page
