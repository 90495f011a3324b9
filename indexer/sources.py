"""Streaming readers that turn operator inputs into page records.

An input is a PAGES.jsonl file, a directory tree of HTML files, or a WARC file
(``.warc`` / ``.warc.gz``, read by ``indexer.warc``). Every reader is a
generator that holds one page at a time: nothing reads a whole input into
memory (the one exception is a directory's ``metadata.jsonl``, whose fields
are kept in a dict keyed by path).

Readers never raise for bad input. Anything unusable becomes a
:class:`~newsfold.indexer.records.PageRecord` with ``error`` set (and ``id``
when known) and the iteration goes on: a bad JSONL line, a missing or
unreadable file, a broken sidecar, a malformed or truncated WARC record.

The source contract (what ``newsfold ingest`` and its ``--resume`` rely on;
a new kind of source, an RSS feed or a queue, must promise the same or
bring its own checkpoint):

- **A source is named by a local path** (a job stores the paths it was
  started with), and :func:`iter_source` reads it by that path alone.
- **It can be read again, and gives the same records in the same order.**
  ``indexer.ingest_job`` cuts the records into batches numbered in input
  order (by the batch size and byte limit stored with the job), and the
  job counts each batch under its number.
  A resumed run reads every source again from the start and skips the
  batches already counted *by number*, so a source that changed, or gives
  another order, would skip pages never sent and send others twice. Error
  records are recorded under their ``origin``, which must be stable too.
- **It is read once, one page at a time**: a reader is a generator that
  never holds the whole input, so a source of any size streams.
- **It never raises for bad input**: see above.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from newsfold.indexer.records import (
    PageFileError,
    PageRecord,
    SourceStats,
    checked_size,
    counted,
    error_record,
    published_field,
    read_page_file,
    text_field,
)
from newsfold.indexer.warc import iter_warc
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES

#: File names a directory walk treats as pages (compared case-insensitively).
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
#: Name of the optional per-directory metadata file (relative path -> fields).
METADATA_FILE = "metadata.jsonl"
#: bytes a JSONL line may hold besides a page: its metadata (a line is read up to the page limit plus this)
LINE_METADATA_BYTES = 64 * 1024


# --------------------------------------------------------------------------- JSONL


def _file_record(
    path: Path,
    fields: dict,
    page_id: str | None,
    url: str | None,
    origin: str,
    max_bytes: int,
    roots: list[str] | None = None,
):
    """A record for an HTML file and its metadata fields, or an error record (with its reason) when it cannot be
    read: missing, a link loop, not a file, outside ``roots`` after following links, over the limit."""
    try:
        html = read_page_file(path, max_bytes=max_bytes, roots=roots)
    except PageFileError as exc:
        return error_record(exc.detail, origin, id=page_id, url=url, reason=exc.reason)
    return _page_record(fields, page_id, url, origin, html=html)


def _page_record(
    fields: dict, page_id: str | None, url: str | None, origin: str, *, html: bytes | None, html_path: str | None = None
) -> PageRecord:
    """A page's record from its metadata fields, with its bytes, or with the path a worker reads them from."""
    return PageRecord(
        id=page_id,
        url=url,
        site=text_field(fields.get("site")),
        lang=text_field(fields.get("lang")),
        published=published_field(fields),
        html=html,
        origin=origin,
        html_path=html_path,
    )


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
    ``published`` or ``date``) with ``html`` a path relative to the JSONL file
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
    return counted(checked_size(_jsonl(Path(path), max_bytes, read_html, allow_outside), max_bytes), stats)


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


def _json_objects(fh, name: str, limit: int) -> Iterator[tuple[int, str, dict | tuple[str, str]]]:
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


def _line_limit(max_bytes: int) -> int:
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
        for n, origin, row in _json_objects(fh, path.name, _line_limit(max_bytes)):
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
                yield _page_record(row, page_id, url, origin, html=None, html_path=str(base / html_path))
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
    """HTML files under ``folder`` in sorted path order; hidden entries and symlinked folders are skipped.

    A link with a page's name is yielded whatever it points to (a loop, a folder, a file outside the
    tree): reading it is refused with a reason rather than passing over it in silence.
    """
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
            elif (entry.is_symlink() or entry.is_file()) and _html_suffix(entry.name):
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
        return mapping, [error_record(f"cannot read {meta_path}: {exc.strerror or exc}", METADATA_FILE)]
    with fh:
        for n, origin, row in _json_objects(fh, METADATA_FILE, _line_limit(0)):
            if isinstance(row, tuple):
                errors.append(error_record(f"{origin} {row[1]}", origin, reason=row[0]))
                continue
            rel = _norm_rel(row.get("path") or row.get("file") or row.get("html"))
            if rel is None:
                errors.append(error_record(f"{origin} has no path", origin, id=text_field(row.get("id"))))
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


def iter_directory(
    root: Path | str,
    *,
    stats: SourceStats | None = None,
    max_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    roots: list[str] | None = None,
):
    """Yield one record per ``.html``/``.htm``/``.xhtml``/``.html.gz`` file under ``root``, in sorted path order.

    Metadata (``id``, ``url``, ``site``, ``lang``, ``published``/``date``) comes
    from an optional ``metadata.jsonl`` at the root (lines with ``path`` relative
    to the root plus fields) and from an optional sidecar next to each page
    (``a/b.html.json`` or ``a/b.json``), the sidecar winning field by field. The
    id defaults to the relative path (``a/b.html``). Bad ``metadata.jsonl`` lines
    come first as error records; entries naming no page under the root come last.
    Hidden files and folders and symlinked folders are skipped. Every page
    path is resolved (links followed) and read only inside ``root`` or one of
    ``roots`` (``NEWSFOLD_READ_ROOTS``): a link leading elsewhere is an
    ``outside_roots`` error, a link loop an ``unreadable`` one.
    """
    return counted(checked_size(_directory(Path(root), max_bytes, roots), max_bytes), stats)


def _directory(root: Path, max_bytes: int, roots: list[str] | None = None) -> Iterator[PageRecord]:
    if not root.is_dir():
        yield error_record(f"{root} is not a directory", str(root))
        return
    metadata, bad_lines = _load_metadata(root)
    yield from bad_lines
    for path, rel in _walk(root, PurePosixPath()):
        rel_str = rel.as_posix()
        fields = dict(metadata.pop(rel_str, (0, {}))[1])
        side, problem = _sidecar(path, _html_suffix(path.name) or "")
        fields.update(side)
        page_id = text_field(fields.get("id")) or rel_str
        url = text_field(fields.get("url"))
        if problem:
            yield error_record(problem, rel_str, id=page_id, url=url)
            continue
        yield _file_record(path, fields, page_id, url, rel_str, max_bytes, [str(root), *(roots or [])])
    for rel_str, (n, fields) in sorted(metadata.items(), key=lambda item: item[1][0]):
        yield error_record(
            f"{METADATA_FILE}:{n} names {rel_str}, which is not an HTML file under {root}",
            f"{METADATA_FILE}:{n}",
            id=text_field(fields.get("id")),
            url=text_field(fields.get("url")),
        )


# --------------------------------------------------------------------------- WARC


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


def iter_source(
    path: Path | str,
    *,
    stats: SourceStats | None = None,
    max_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    roots: list[str] | None = None,
):
    """Records of any supported input: a directory, a ``.jsonl`` file, or a ``.warc`` / ``.warc.gz`` file.

    Sizes are checked here, at the source: a page over ``max_bytes``, or
    gzip bytes inflating past it, is a ``too_large`` error record, so no page
    over the limit ever reaches a worker. ``roots`` are the folders besides a
    directory input that its links may lead into (``NEWSFOLD_READ_ROOTS``).
    A missing or unsupported input yields a single error record naming it.
    Reading the same path again gives the same records in the same order
    (the source contract in the module docstring; ``--resume`` relies on it).
    """
    path = Path(path)
    kind = _kind(path)
    if kind == "directory":
        return iter_directory(path, stats=stats, max_bytes=max_bytes, roots=roots)
    if kind == "jsonl":
        return iter_jsonl(path, stats=stats, max_bytes=max_bytes)
    if kind == "warc":
        return iter_warc(path, stats=stats, max_bytes=max_bytes)
    if not path.exists():
        message = f"{path}: no such file or directory"
    else:
        message = f"unsupported input {path}: expected a directory, a .jsonl file or a .warc / .warc.gz file"
    return counted(iter([error_record(message, str(path))]), stats)


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


def count_hint(path: Path | str) -> int | None:
    """A cheap total for a progress bar: JSONL non-blank lines, HTML files of a directory; None for WARC/unknown."""
    path = Path(path)
    kind = _kind(path)
    try:
        if kind == "jsonl":
            with path.open("rb") as fh:
                return _non_blank_lines(fh)
        if kind == "directory":
            return sum(1 for _ in _walk(path, PurePosixPath()))
    except OSError:
        return None
    return None
