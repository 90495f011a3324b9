"""A corpus of hostile pages and archives, built by code (nothing binary is committed).

Each builder writes or returns one hostile input of the second security audit
(issue 24): compression bombs in WARC records, ``.html.gz`` files and JSONL
lines; link loops and links out of a folder; pages whose markup makes
libxml2 work for minutes. Sizes are parameters: the tests use small ones
with a small page limit, ``benchmarks/hostile_bench.py`` the audit's own.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.pages import page, story

MB = 1024 * 1024


def good_pages(count: int = 2, *, seed: int = 240) -> list[tuple[str, str]]:
    """``(url, html)`` of ordinary article pages, each a different story."""
    return [(f"https://good{n}.test/story", page(f"Good story {n}", story(seed + n), site=f"good{n}.test"))
            for n in range(count)]  # fmt: skip


def bomb_body(inflated: int, *, encoding: str = "gzip") -> bytes:
    """Compressed bytes inflating to ``inflated`` bytes of markup (``gzip`` or ``deflate``), built in pieces."""
    chunk = b"<p>" + b"a" * 1021
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS)
    out = [comp.compress(b"<html><body>")]
    for _ in range(inflated // len(chunk)):
        out.append(comp.compress(chunk))
    out.append(comp.flush())
    return b"".join(out)


def bomb_warc(path: Path, *, bombs: int = 8, inflated: int = 60 * MB, good: int = 2, chunked: bool = False) -> Path:
    """A gzip WARC of ``bombs`` responses whose ``Content-Encoding: gzip`` body inflates to ``inflated`` bytes,
    with ``good`` ordinary pages between them (the audit's file: 8 bombs of 60 MB, 2 good pages)."""
    body = bomb_body(inflated)
    pages = good_pages(good)
    records: list[tuple[str, bytes, list[tuple[str, str]]]] = []
    for n in range(max(bombs, len(pages))):
        if n < len(pages):
            url, html = pages[n]
            records.append((url, html.encode(), [("Content-Type", "text/html; charset=utf-8")]))
        if n < bombs:
            headers = [("Content-Type", "text/html"), ("Content-Encoding", "gzip")]
            payload = body
            if chunked:
                headers.append(("Transfer-Encoding", "chunked"))
                pieces = [body[i : i + 65536] for i in range(0, len(body), 65536)]
                payload = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
            records.append((f"https://bomb.test/{n}", payload, headers))
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url, payload, headers in records:
            http = StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1")
            rec = writer.create_warc_record(url, "response", payload=io.BytesIO(payload), length=len(payload),
                                            http_headers=http)  # fmt: skip
            writer.write_record(rec)
    return path


def bomb_folder(folder: Path, *, inflated: int = 60 * MB, good: int = 2) -> Path:
    """A folder of ``.html.gz`` pages: one inflating to ``inflated`` bytes, ``good`` ordinary ones."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bomb.html.gz").write_bytes(bomb_body(inflated))
    for n, (url, html) in enumerate(good_pages(good)):
        (folder / f"good{n}.html.gz").write_bytes(gzip.compress(html.encode()))
        (folder / f"good{n}.json").write_text(json.dumps({"url": url}))
    return folder


def long_line_jsonl(folder: Path, *, line_bytes: int = 200 * MB, good: int = 2) -> Path:
    """A page list whose second line is ``line_bytes`` long (one JSON string), around ``good`` ordinary lines."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, (url, html) in enumerate(good_pages(good)):
        (folder / f"good{n}.html").write_text(html, encoding="utf-8")
        lines.append(json.dumps({"id": f"good{n}", "url": url, "html": f"good{n}.html"}).encode())
    path = folder / "pages.jsonl"
    with open(path, "wb") as fh:
        fh.write(lines[0] + b"\n")
        fh.write(b'{"id": "long", "html": "good0.html", "note": "')
        piece = b"x" * MB
        left = line_bytes
        while left > 0:
            fh.write(piece[: min(left, len(piece))])
            left -= len(piece)
        fh.write(b'"}\n')
        for line in lines[1:]:
            fh.write(line + b"\n")
    return path


def long_attribute_jsonl(folder: Path, *, pages: int = 4, chars: int = 9 * MB, good: int = 2) -> Path:
    """A page list of ``pages`` articles each with a ``chars``-character attribute (files beside it), then ``good``."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in range(pages):
        html = long_attribute_page(chars).replace("Long attribute", f"Long attribute {n}", 1)
        (folder / f"long{n}.html").write_text(html, encoding="utf-8")
        rows.append({"id": f"long{n}", "url": f"https://hostile.example/long/{n}", "html": f"long{n}.html"})
    for n, (url, html) in enumerate(good_pages(good)):
        (folder / f"good{n}.html").write_text(html, encoding="utf-8")
        rows.append({"id": f"good{n}", "url": url, "html": f"good{n}.html"})
    path = folder / "pages.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def link_loop_jsonl(folder: Path, *, good: int = 2) -> Path:
    """A page list with a line naming a link that points to itself, between ``good`` ordinary lines."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loop.html").symlink_to(folder / "loop.html")
    rows = []
    for n, (url, html) in enumerate(good_pages(good)):
        (folder / f"good{n}.html").write_text(html, encoding="utf-8")
        rows.append({"id": f"good{n}", "url": url, "html": f"good{n}.html"})
    rows.insert(1, {"id": "loop", "html": "loop.html"})
    rows.insert(2, {"id": "nul", "html": "a\u0000b.html"})
    path = folder / "pages.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def escaping_folder(folder: Path, secret: Path) -> Path:
    """An ingest folder with a good page, a link to ``secret`` (a page outside it) and a link loop."""
    folder.mkdir(parents=True, exist_ok=True)
    url, html = good_pages(1)[0]
    (folder / "good.html").write_text(html, encoding="utf-8")
    (folder / "escape.html").symlink_to(secret)
    (folder / "loop.html").symlink_to(folder / "loop.html")
    return folder


def attributes_page(count: int = 200_000) -> str:
    """The audit's page: ``count`` distinct attributes on one element (2.4 MB at 200,000)."""
    return page("Attributes", story(250), extra="<div " + " ".join(f"data-a{i}=x" for i in range(count)) + "></div>")


def hostile_pages(scale: float = 1.0) -> dict[str, str]:
    """Pages whose markup makes a parser work hard, by name; ``scale`` 1 is the audit's size."""
    n = max(1, int(scale * 200_000))
    return {
        "attributes": attributes_page(n),
        # the same attributes behind quoted '>' signs, which a naive tag scanner takes for the tag's end
        "attributes_quoted": page("Quoted", story(251), extra="<div " + " ".join(f'a{i}=">"' for i in range(n)) + ">"),
        # many elements each just over the attribute limit
        "attributes_spread": page(
            "Spread", story(252), extra=("<i " + " ".join(f"a{i}" for i in range(201)) + "></i>") * max(1, n // 200)
        ),  # fmt: skip
        "deep": page("Deep", story(253), extra="<div>" * max(300, n // 10)),
        "elements": page("Elements", story(254), extra="<b></b>" * max(200_001, n + 1)),
        "comment_tags": page("Commented", story(255), extra="<!--" + "<div>" * max(300, n // 10) + "-->"),
    }


def long_attribute_page(chars: int = 9 * MB) -> str:
    """A good article with one attribute value of ``chars`` characters (the demo's 9 MB one cost a worker 120 MB)."""
    return page("Long attribute", story(257), extra=f'<div data-blob="{"x" * chars}"></div>')


def control_title_page() -> str:
    """A page whose title holds ``&#1;`` (libxml2 stops reading at it)."""
    return page("Harbour &#1;strike ends", story(256))
