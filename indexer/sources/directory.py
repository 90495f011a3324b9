"""Folders of HTML files as an ingest source: every page file under a root, in sorted path order.

A page's metadata comes from the root's optional ``metadata.jsonl`` and from
an optional sidecar ``.json`` next to the page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from newsfold.indexer.records import (
    PageRecord,
    SourceStats,
    checked_at_source,
    counted,
    error_record,
    record_from_file,
    text_field,
)
from newsfold.indexer.sources.jsonl import json_lines, line_limit
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES

#: File names a directory walk treats as pages (compared case-insensitively).
HTML_SUFFIXES = (".html", ".htm", ".xhtml", ".html.gz", ".htm.gz")
#: Name of the optional per-directory metadata file (relative path -> fields).
METADATA_FILE = "metadata.jsonl"


class Folder:
    """The ``Source`` of a directory tree of HTML files (see ``indexer.sources.base``)."""

    described = "a directory"

    def accepts(self, path: Path) -> bool:
        return path.is_dir()

    def read(
        self, path: Path, *, stats: SourceStats | None, max_bytes: int, roots: list[str] | None
    ) -> Iterator[PageRecord]:
        return iter_directory(path, stats=stats, max_bytes=max_bytes, roots=roots)

    def count_hint(self, path: Path) -> int | None:
        """The page files under ``path`` (metadata lines naming no page are not counted)."""
        return sum(1 for _ in _walk(path, PurePosixPath()))


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
        for n, origin, row in json_lines(fh, METADATA_FILE, line_limit(0)):
            if isinstance(row, tuple):
                errors.append(error_record(f"{origin} {row[1]}", origin, reason=row[0]))
                continue
            rel = _norm_rel(row.get("path") or row.get("file") or row.get("html"))
            if rel is None:
                errors.append(error_record(f"{origin} has no path", origin, id=text_field(row.get("id"))))
                continue
            fields = {k: row.get(k) for k in ("id", "url", "site", "lang", "published", "date", "section", "category",
                                              "categories") if k in row}  # fmt: skip
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
    return counted(checked_at_source(_directory(Path(root), max_bytes, roots), max_bytes), stats)


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
        yield record_from_file(path, fields, page_id, url, rel_str, max_bytes, [str(root), *(roots or [])])
    for rel_str, (n, fields) in sorted(metadata.items(), key=lambda item: item[1][0]):
        yield error_record(
            f"{METADATA_FILE}:{n} names {rel_str}, which is not an HTML file under {root}",
            f"{METADATA_FILE}:{n}",
            id=text_field(fields.get("id")),
            url=text_field(fields.get("url")),
        )
