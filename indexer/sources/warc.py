"""Pages as WARC records: how newsfold writes a page into a WARC file and reads one back.

The archive (``indexer.jobs.archive``) writes each page as a ``resource`` record
with its metadata in ``WARC-Newsfold-*`` headers (:func:`page_record_bytes`);
a WARC file given as an ingest source, a crawler's or newsfold's own archive,
is read back into page records by :func:`iter_warc` (which keeps ``response``
and ``resource`` records holding HTML and counts the rest as skipped), the
ingest source :class:`WarcFile`. Robust scanning of damaged files is
``indexer.sources.warc_scan``.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

from warcio.warcwriter import WARCWriter

from newsfold.indexer.records import PageRecord, SourceStats, checked_at_source, counted, error_record
from newsfold.indexer.sources.warc_read import GZIP_MAGIC
from newsfold.indexer.sources.warc_scan import WarcItem, scan_warc
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES

#: WARC headers in which newsfold keeps page metadata (written by ``indexer.jobs.archive``,
#: honoured by ``iter_warc`` so an archive can be ingested again as a source).
NEWSFOLD_HEADERS = {
    "id": "WARC-Newsfold-Id",
    "url": "WARC-Newsfold-Url",
    "site": "WARC-Newsfold-Site",
    "lang": "WARC-Newsfold-Lang",
    "published": "WARC-Newsfold-Published",
    "section": "WARC-Newsfold-Section",
    "origin": "WARC-Newsfold-Origin",
}
#: WARC-Target-URI written for a page that has no URL (read back as ``url=None``).
NO_URL = "urn:newsfold:no-url"
#: Media types of WARC payloads that are pages.
HTML_CONTENT_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class WarcFile:
    """The ``Source`` of a ``.warc`` / ``.warc.gz`` file (see ``indexer.sources.base``)."""

    described = "a .warc / .warc.gz file"

    def accepts(self, path: Path) -> bool:
        return path.name.lower().endswith((".warc", ".warc.gz"))

    def read(
        self, path: Path, *, stats: SourceStats | None, max_bytes: int, roots: list[str] | None
    ) -> Iterator[PageRecord]:
        return iter_warc(path, stats=stats, max_bytes=max_bytes)

    def count_hint(self, path: Path) -> int | None:
        """None: only reading the whole file would tell how many records are pages."""
        return None


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
        return error_record(item.error, origin, id=page_id, url=url, reason=item.reason)
    return PageRecord(
        id=page_id,
        url=url,
        site=newsfold("site"),
        lang=newsfold("lang"),
        published=published,
        section=newsfold("section"),
        html=item.payload,
        origin=origin,
    )


def iter_warc(path: Path | str, *, stats: SourceStats | None = None, max_bytes: int = DEFAULT_MAX_PAGE_BYTES):
    """Yield the HTML pages of a ``.warc`` / ``.warc.gz`` file, streamed record by record.

    Pages are ``response`` records with a 2xx HTTP status and an HTML content
    type (``text/html``, ``application/xhtml+xml``; a missing type is sniffed),
    and ``resource`` records with an HTML content type. ``html`` is the HTTP
    payload, de-chunked and with its gzip or deflate content-encoding removed; id is
    the WARC-Record-ID's uuid, url the WARC-Target-URI, published the date part
    of WARC-Date (newsfold's own ``WARC-Newsfold-*`` headers win when present).
    Other records are skipped and counted in ``stats.skipped``. Damage yields
    one error record and reading resumes at the next readable record. A
    body is inflated with a hard cap (``warc_scan.read_payload``): a page
    over ``max_bytes``, or inflating past it, is a ``too_large`` error record.
    """
    return counted(checked_at_source(_warc(Path(path), stats, max_bytes), max_bytes), stats)


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


def _is_uri(url: str) -> bool:
    """Whether ``url`` survives as a WARC-Target-URI unchanged (warcio rewrites spaces and ``<...>``)."""
    return url.isascii() and url.isprintable() and " " not in url and not url.startswith("<") and url != NO_URL


def page_record_bytes(record: PageRecord, html: bytes) -> bytes:
    """One page as a gzip-compressed WARC ``resource`` record, its metadata in the newsfold headers."""
    headers = {}
    for key in ("id", "site", "lang", "published", "section", "origin"):
        value = getattr(record, key) if key != "origin" else (record.origin or None)
        if value is not None:
            headers[NEWSFOLD_HEADERS[key]] = encode_header_value(str(value))
    url = record.url
    if url is not None and not _is_uri(url):
        headers[NEWSFOLD_HEADERS["url"]] = encode_header_value(url)
    target = url if url is not None and _is_uri(url) else NO_URL
    content_type = "application/gzip" if html.startswith(GZIP_MAGIC) else "text/html"
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    warc = writer.create_warc_record(
        target,
        "resource",
        payload=io.BytesIO(html),
        length=len(html),
        warc_content_type=content_type,
        warc_headers_dict=headers,
    )
    writer.write_record(warc)
    return buffer.getvalue()
