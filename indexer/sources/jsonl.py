"""PAGES.jsonl page lists as an ingest source: one page per line, its HTML in a file beside the list.

Also the bounded reading of JSON lines that a folder's ``metadata.jsonl``
shares (``indexer.sources.directory``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from newsfold.indexer.records import (
    PageRecord,
    SourceStats,
    checked_at_source,
    counted,
    error_record,
    record_from_fields,
    record_from_file,
    text_field,
)
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES

#: bytes a JSONL line may hold besides a page: its metadata (a line is read up to the page limit plus this)
LINE_METADATA_BYTES = 64 * 1024


class PageList:
    """The ``Source`` of a ``.jsonl`` page list (see ``indexer.sources.base``)."""

    described = "a .jsonl file"

    def accepts(self, path: Path) -> bool:
        return path.name.lower().endswith(".jsonl")

    def read(
        self, path: Path, *, stats: SourceStats | None, max_bytes: int, roots: list[str] | None
    ) -> Iterator[PageRecord]:
        return iter_jsonl(path, stats=stats, max_bytes=max_bytes)

    def count_hint(self, path: Path) -> int | None:
        """The non-blank lines: one page (or one error record) each."""
        with path.open("rb") as fh:
            return _non_blank_lines(fh)


def iter_jsonl(
    path: Path | str,
    *,
    stats: SourceStats | None = None,
    max_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    read_html: bool = True,
    allow_outside: bool = False,
):
    """Yield one record per non-blank line of PAGES.jsonl.

    Lines are ``{"id", "url", "site", "lang", "html"}`` (plus optional
    ``published`` or ``date``, and ``section``, ``category`` or a feed's
    ``categories``) with ``html`` a path relative to the JSONL file
    (``.html`` or ``.html.gz``, read as raw bytes). The id defaults to
    ``line-N``. With ``read_html=False`` ("paths only") no page file is opened:
    each record carries the resolved ``html_path`` for a worker to read, and
    a missing file is that worker's ``unreadable`` rejection.

    An ``html`` path must stay inside the JSONL file's folder (``../`` and
    absolute paths elsewhere are an ``outside_folder`` error) unless
    ``allow_outside``; a line repeating an earlier line's id is a
    ``duplicate_id`` error (the first line wins). A path that cannot be
    resolved (a link loop, a NUL byte) is an ``unreadable`` error; a line
    longer than ``max_bytes`` plus :data:`LINE_METADATA_BYTES` is a
    ``too_large`` error, read no further than that.
    """
    return counted(checked_at_source(_jsonl(Path(path), max_bytes, read_html, allow_outside), max_bytes), stats)


def _lines(fh, limit: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, line)`` of a binary file; None for a line longer than ``limit`` bytes (skipped unread)."""
    n = 0
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        n += 1
        if len(line) > limit and not line.endswith(b"\n"):
            while True:  # the rest of the long line, a bounded piece at a time
                rest = fh.readline(1 << 16)
                if not rest or rest.endswith(b"\n"):
                    break
            yield n, None
            continue
        yield n, line


def json_lines(fh, name: str, limit: int) -> Iterator[tuple[int, str, dict | tuple[str, str]]]:
    """``(line number, origin, object)`` per non-blank JSON line; ``(reason, problem)`` for a bad line."""
    for n, raw in _lines(fh, limit):
        if raw is None:
            yield n, f"{name}:{n}", ("too_large", f"is longer than {limit} bytes (the page limit plus its metadata)")
            continue
        line = raw.decode("utf-8", errors="replace")
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            yield n, f"{name}:{n}", ("unreadable", f"is not valid JSON: {exc.msg}")
            continue
        except RecursionError:
            yield n, f"{name}:{n}", ("unreadable", "is JSON nested too deeply to read")
            continue
        yield n, f"{name}:{n}", row if isinstance(row, dict) else ("unreadable", "is not a JSON object")


def line_limit(max_bytes: int) -> int:
    return max_bytes + LINE_METADATA_BYTES


def _inside(base: Path, relative: str) -> tuple[Path | None, str | None]:
    """``base / relative`` with links followed, or why it cannot be (a link loop, a NUL byte)."""
    try:
        return (base / relative).resolve(), None
    except (OSError, RuntimeError, ValueError) as exc:
        return None, f"cannot resolve {relative[:200]!r}: {getattr(exc, 'strerror', None) or exc}"


def _jsonl(path: Path, max_bytes: int, read_html: bool = True, allow_outside: bool = False) -> Iterator[PageRecord]:
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield error_record(f"cannot read {path}: {exc.strerror or exc}", str(path))
        return
    base = path.resolve().parent
    seen: dict[str, int] = {}
    with fh:
        for n, origin, row in json_lines(fh, path.name, line_limit(max_bytes)):
            if isinstance(row, tuple):
                reason, problem = row
                prefix = "" if reason == "unreadable" else f"{reason}: "  # as the other reasons' messages start
                yield error_record(f"{prefix}line {n} {problem}", origin, reason=reason)
                continue
            page_id = text_field(row.get("id")) or f"line-{n}"
            url = text_field(row.get("url"))
            html_path = row.get("html")
            if not isinstance(html_path, str) or not html_path.strip():
                yield error_record(f"line {n} has no html path", origin, id=page_id, url=url)
                continue
            if page_id in seen:
                first = seen[page_id]
                message = f"duplicate_id: line {n} repeats the id {page_id!r} of line {first} (the first is kept)"
                yield error_record(message, origin, id=page_id, url=url, reason="duplicate_id")
                continue
            seen[page_id] = n
            resolved, unreadable = _inside(base, html_path)
            if unreadable or resolved is None:
                yield error_record(f"unreadable: line {n}: {unreadable}", origin, id=page_id, url=url)
                continue
            if not allow_outside and not resolved.is_relative_to(base):
                message = (
                    f"outside_folder: line {n}: the html path {html_path[:200]!r} leads outside the page list's "
                    f"folder {base} (allow it with --allow-outside-paths)"
                )
                yield error_record(message, origin, id=page_id, url=url, reason="outside_folder")
                continue
            if not read_html:
                yield record_from_fields(row, page_id, url, origin, html=None, html_path=str(base / html_path))
                continue
            yield record_from_file(base / html_path, row, page_id, url, origin, max_bytes)


def _non_blank_lines(fh) -> int:
    """Lines holding more than white space, read a bounded piece at a time (a line may be huge)."""
    count, blank = 0, True
    while chunk := fh.read(1 << 20):
        for k, piece in enumerate(chunk.split(b"\n")):
            if k:  # a line ended before this piece
                count += not blank
                blank = True
            blank = blank and not piece.strip()
    return count + (not blank)
