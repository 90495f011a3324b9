"""Page records: what every input reader yields, and the one guarded read of a page file.

A :class:`PageRecord` is one page from an input, or (``error`` set) the
reason an input item is unusable; readers never raise for bad input.
:func:`read_page_file` is how a page file is read anywhere (a page list's
``html`` path, a worker's ``html_path``): regular files only, under the
allowed roots, never more than the size limit. The sources build their
records with :func:`record_from_fields` and :func:`record_from_file`.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from newsfold.plugin.errors import NewsfoldError
from newsfold.plugin.ids import BAD_ID, id_problem, shown
from newsfold.plugin.page_limits import inflate_capped


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
    section: str | None = None  # a section given with the page (a feed's category): see section_field

    def meta(self) -> dict:
        """``{"id", "url", "site", "lang", "published", "section"}``: the task-payload fields besides the HTML."""
        return {"id": self.id, "url": self.url, "site": self.site, "lang": self.lang, "published": self.published,
                "section": self.section}  # fmt: skip

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


def error_record(
    message: str, origin: str, *, id: str | None = None, url: str | None = None, reason: str = "unreadable"
) -> PageRecord:
    return PageRecord(
        id=id, url=url, site=None, lang=None, published=None, html=None, error=message, origin=origin, reason=reason
    )


class PageFileError(NewsfoldError):
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


def counted(records: Iterator[PageRecord], stats: SourceStats | None) -> Iterator[PageRecord]:
    for record in records:
        if stats is not None:
            if record.error:
                stats.errors += 1
            else:
                stats.pages += 1
        yield record


def text_field(value) -> str | None:
    """A metadata value as a non-empty string, or None."""
    if value is None or isinstance(value, dict | list):
        return None
    value = str(value)
    return value if value.strip() else None


def published_field(fields: dict) -> str | None:
    return text_field(fields.get("published")) or text_field(fields.get("date"))


def section_field(fields: dict) -> str | None:
    """The section given with a page: ``section``, ``category``, or the first of a feed item's ``categories``
    (the page's own markup wins over it at extraction: plugin/extract/section.py)."""
    categories = fields.get("categories")
    first = categories[0] if isinstance(categories, list) and categories else None
    return text_field(fields.get("section")) or text_field(fields.get("category")) or text_field(first)


def oversize(html: bytes, max_bytes: int) -> str | None:
    """Why a page's bytes are over the page limit, or None: more than ``max_bytes``, or gzip bytes inflating
    to more (inflated in a stream and stopped at the limit, so a bomb costs at most the limit).

    Readers check this at the source, so no page over the limit is ever sent to a worker.
    """
    if len(html) > max_bytes:
        return f"the page has {len(html)} bytes, more than the limit of {max_bytes}"
    if html[:2] == b"\x1f\x8b":
        try:
            if inflate_capped(html, max_bytes, keep=False) is None:
                return f"the page inflates to more than {max_bytes} bytes"
        except (zlib.error, EOFError):
            return None  # broken gzip: the extractor's ``undecodable``
    return None


def checked_at_source(records: Iterator[PageRecord], max_bytes: int) -> Iterator[PageRecord]:
    """The records, a page whose id is outside the grammar (``plugin.ids``) turned into a ``bad_id`` error record
    and a page over the limit (see :func:`oversize`) into a ``too_large`` one: neither is sent to a worker, where
    one bad id failed the whole batch."""
    for record in records:
        if record.error:
            yield record
            continue
        id_wrong = id_problem(record.id) if record.id else None  # an empty id is none: the page gets one
        problem = None if record.html is None else oversize(record.html, max_bytes)
        if id_wrong:
            message = f"{BAD_ID}: the id {id_wrong}: {shown(record.id or '')}"
            yield error_record(message, record.origin, id=record.id, url=record.url, reason=BAD_ID)
        elif problem:
            yield error_record(f"too_large: {problem}", record.origin, id=record.id, url=record.url, reason="too_large")
        else:
            yield record


def record_from_file(
    path: Path,
    fields: dict,
    page_id: str | None,
    url: str | None,
    origin: str,
    max_bytes: int,
    roots: list[str] | None = None,
) -> PageRecord:
    """A record for an HTML file and its metadata fields, or an error record (with its reason) when it cannot be
    read: missing, a link loop, not a file, outside ``roots`` after following links, over the limit."""
    try:
        html = read_page_file(path, max_bytes=max_bytes, roots=roots)
    except PageFileError as exc:
        return error_record(exc.detail, origin, id=page_id, url=url, reason=exc.reason)
    return record_from_fields(fields, page_id, url, origin, html=html)


def record_from_fields(
    fields: dict, page_id: str | None, url: str | None, origin: str, *, html: bytes | None, html_path: str | None = None
) -> PageRecord:
    """A page's record from its metadata fields, with its bytes, or with the path a worker reads them from."""
    return PageRecord(
        id=page_id,
        url=url,
        site=text_field(fields.get("site")),
        lang=text_field(fields.get("lang")),
        published=published_field(fields),
        section=section_field(fields),
        html=html,
        origin=origin,
        html_path=html_path,
    )
