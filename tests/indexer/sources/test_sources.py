"""Streaming input readers: JSONL, directory trees and WARC files, including damaged ones."""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from newsfold.indexer.records import PageRecord, SourceStats
from newsfold.indexer.sources.base import count_hint, iter_source
from newsfold.indexer.sources.directory import iter_directory
from newsfold.indexer.sources.jsonl import iter_jsonl
from newsfold.indexer.sources.warc import iter_warc

ARTICLE = "<html><head><title>Flood</title></head><body><p>The river rose {n} metres overnight.</p></body></html>"


def page(n: int) -> bytes:
    return ARTICLE.format(n=n).encode()


# --------------------------------------------------------------------------- WARC building


def http_response(url: str, body: bytes, *, content_type="text/html; charset=utf-8", status="200 OK", extra=()):
    """A (uri, type, kwargs) spec of an HTTP response record."""
    headers = [("Content-Type", content_type), *extra] if content_type else list(extra)
    return url, "response", {"payload": body, "http_headers": StatusAndHeaders(status, headers, protocol="HTTP/1.1")}


def write_warc(path: Path, specs, *, compress: bool) -> list[int]:
    """Write records (specs from ``http_response`` or ``(uri, type, {"payload", "content_type"})``).

    Returns the byte offset of every record, plus the file length at the end.
    """
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=compress)
    offsets = []
    for uri, rec_type, spec in specs:
        offsets.append(buffer.tell())
        if rec_type == "warcinfo":
            record = writer.create_warcinfo_record(path.name, {"software": "tests"})
        else:
            body = spec["payload"]
            record = writer.create_warc_record(
                uri,
                rec_type,
                payload=io.BytesIO(body),
                length=len(body),
                http_headers=spec.get("http_headers"),
                warc_content_type=spec.get("content_type", ""),
                warc_headers_dict={"WARC-Date": spec.get("date", "2024-03-05T10:20:30Z")},
            )
        writer.write_record(record)
    offsets.append(buffer.tell())
    path.write_bytes(buffer.getvalue())
    return offsets


def mixed_specs():
    """warcinfo, 2 HTML responses, a request, a PNG, a 404 page, an HTML resource, a metadata record."""
    request_headers = StatusAndHeaders("GET /a HTTP/1.1", [("Host", "news.example")], protocol="HTTP/1.1")
    return [
        ("", "warcinfo", {}),
        http_response("https://news.example/a", page(1)),
        ("https://news.example/a", "request", {"payload": b"", "http_headers": request_headers}),
        http_response("https://news.example/logo.png", b"\x89PNG\r\n\x1a\nxxxx", content_type="image/png"),
        http_response("https://news.example/gone", page(99), status="404 Not Found"),
        ("https://news.example/b", "resource", {"payload": page(2), "content_type": "text/html"}),
        (
            "https://news.example/a",
            "metadata",
            {"payload": b"outlink: x\r\n", "content_type": "application/warc-fields"},
        ),
        http_response("https://news.example/c", page(3), content_type="application/xhtml+xml"),
    ]


def ok(records: list[PageRecord]) -> list[PageRecord]:
    return [r for r in records if r.error is None]


def errors(records: list[PageRecord]) -> list[PageRecord]:
    return [r for r in records if r.error is not None]


# --------------------------------------------------------------------------- JSONL


def test_jsonl_reads_pages_and_reports_bad_lines_without_stopping(tmp_path):
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "a.html").write_bytes(page(1))
    gz_bytes = gzip.compress(page(2))
    (tmp_path / "html" / "b.html.gz").write_bytes(gz_bytes)
    latin = "<html><body>caf\xe9</body></html>".encode("latin-1")
    (tmp_path / "c.html").write_bytes(latin)
    lines = [
        json.dumps({"id": "a", "url": "https://x.example/a", "site": "x", "lang": "en", "html": "html/a.html"}),
        "{not json",
        "",
        json.dumps({"id": "b", "html": "html/b.html.gz", "date": "2024-01-02"}),
        json.dumps({"id": "missing", "url": "https://x.example/m", "html": "html/nope.html"}),
        json.dumps(["a", "list"]),
        json.dumps({"id": 7, "html": "c.html", "published": "2023-12-31", "lang": None}),
        json.dumps({"id": "nohtml", "url": "https://x.example/n"}),
        json.dumps({"html": "html/a.html"}),
    ]
    src = tmp_path / "pages.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stats = SourceStats()

    records = list(iter_jsonl(src, stats=stats))

    assert [r.id for r in records] == ["a", None, "b", "missing", None, "7", "nohtml", "line-9"]
    assert [r.origin for r in records] == [f"pages.jsonl:{n}" for n in (1, 2, 4, 5, 6, 7, 8, 9)]
    a, bad, b, missing, not_object, seven, nohtml, default_id = records
    assert (a.url, a.site, a.lang, a.html, a.error) == ("https://x.example/a", "x", "en", page(1), None)
    assert "line 2 is not valid JSON" in bad.error and bad.html is None
    assert b.html == gz_bytes  # kept gzip: the extractor handles it
    assert b.published == "2024-01-02"
    assert missing.error.startswith("cannot read") and "nope.html" in missing.error
    assert missing.url == "https://x.example/m" and missing.html is None
    assert "not a JSON object" in not_object.error
    assert seven.html == latin and seven.published == "2023-12-31" and seven.lang is None
    assert "no html path" in nohtml.error
    assert default_id.html == page(1)
    assert (stats.pages, stats.errors) == (4, 4)
    assert count_hint(src) == 8


def test_jsonl_paths_only_mode_reads_no_page_file(tmp_path):
    (tmp_path / "html").mkdir()
    (tmp_path / "html" / "a.html").write_bytes(page(1))
    lines = [
        json.dumps({"id": "a", "url": "https://x.example/a", "site": "x", "html": "html/a.html", "date": "2024-01-02"}),
        json.dumps({"id": "gone", "html": "html/nope.html"}),
        "{broken",
        json.dumps({"id": "nohtml"}),
    ]
    src = tmp_path / "pages.jsonl"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    stats = SourceStats()

    a, gone, broken, nohtml = iter_jsonl(src, stats=stats, read_html=False)

    assert a.html is None and a.html_path == str((tmp_path / "html" / "a.html").resolve())
    assert a.path_payload() == {
        "id": "a",
        "url": "https://x.example/a",
        "site": "x",
        "lang": None,
        "published": "2024-01-02",
        "section": None,
        "html_path": a.html_path,
    }
    assert gone.error is None and gone.html_path.endswith("nope.html")  # the worker reports it unreadable
    assert "line 3 is not valid JSON" in broken.error and broken.id is None
    assert "no html path" in nohtml.error and nohtml.id == "nohtml"
    assert (stats.pages, stats.errors) == (2, 2)


def test_jsonl_missing_file_is_one_error_record(tmp_path):
    records = list(iter_jsonl(tmp_path / "absent.jsonl"))
    assert len(records) == 1
    assert records[0].error.startswith("cannot read") and records[0].html is None


def test_jsonl_page_over_the_size_limit_is_an_error_and_the_rest_goes_on(tmp_path):
    (tmp_path / "big.html").write_bytes(b"<html>" + b"x" * 5000 + b"</html>")
    (tmp_path / "small.html").write_bytes(page(1))
    src = tmp_path / "p.jsonl"
    src.write_text(
        json.dumps({"id": "big", "html": "big.html"}) + "\n" + json.dumps({"id": "small", "html": "small.html"}) + "\n"
    )
    big, small = iter_jsonl(src, max_bytes=1000)
    assert big.id == "big" and "larger than 1000 bytes" in big.error and big.html is None
    assert small.error is None and small.html == page(1)


# --------------------------------------------------------------------------- directory


def make_tree(root: Path) -> None:
    (root / "world" / "europe").mkdir(parents=True)
    (root / "sport").mkdir()
    (root / ".cache").mkdir()
    (root / "world" / "a.html").write_bytes(page(1))
    (root / "world" / "a.json").write_text(json.dumps({"url": "https://w.example/a", "lang": "en"}))
    (root / "world" / "europe" / "b.htm").write_bytes(page(2))
    (root / "world" / "europe" / "b.htm.json").write_text(json.dumps({"id": "B", "site": "sidecar-site"}))
    (root / "world" / "europe" / "b.json").write_text(json.dumps({"id": "ignored: the .htm.json sidecar wins"}))
    (root / "sport" / "c.html.gz").write_bytes(gzip.compress(page(3)))
    (root / "sport" / "d.html").write_bytes(page(4))
    (root / "sport" / "d.json").write_text("{broken")
    (root / "sport" / "notes.txt").write_text("not a page")
    (root / "sport" / "photo.jpg").write_bytes(b"\xff\xd8\xff")
    (root / ".cache" / "x.html").write_bytes(page(5))
    (root / ".hidden.html").write_bytes(page(6))
    (root / "z.HTML").write_bytes(page(7))
    meta = [
        {"path": "sport/c.html.gz", "url": "https://s.example/c", "site": "s", "date": "2024-02-03", "id": "C"},
        {"path": "./world/europe/b.htm", "url": "https://w.example/b", "site": "meta-site", "lang": "de"},
        "not an object",
        {"path": "sport/gone.html", "id": "GONE"},
        {"path": "sport/notes.txt", "id": "TXT"},
    ]
    lines = [json.dumps(m) for m in meta]
    lines.insert(2, "{oops")
    (root / "metadata.jsonl").write_text("\n".join(lines) + "\n")


def test_directory_walk_with_sidecars_and_metadata_jsonl(tmp_path):
    make_tree(tmp_path)
    stats = SourceStats()

    records = list(iter_directory(tmp_path, stats=stats))

    head = records[:2]  # bad metadata.jsonl lines come first
    assert [r.origin for r in head] == ["metadata.jsonl:3", "metadata.jsonl:4"]
    assert "not valid JSON" in head[0].error and "not a JSON object" in head[1].error
    pages = records[2:6]
    assert [r.origin for r in pages] == ["sport/c.html.gz", "sport/d.html", "world/a.html", "world/europe/b.htm"]
    c, d, a, b = pages
    assert (c.id, c.url, c.site, c.published, c.error) == ("C", "https://s.example/c", "s", "2024-02-03", None)
    assert c.html == (tmp_path / "sport" / "c.html.gz").read_bytes()
    assert d.id == "sport/d.html" and "sidecar d.json is not valid JSON" in d.error and d.html is None
    assert (a.id, a.url, a.lang, a.site, a.html) == ("world/a.html", "https://w.example/a", "en", None, page(1))
    # metadata.jsonl gives url and lang, the sidecar overrides site and id
    assert (b.id, b.url, b.lang, b.site) == ("B", "https://w.example/b", "de", "sidecar-site")
    z = records[6]
    assert (z.origin, z.id, z.html) == ("z.HTML", "z.HTML", page(7))
    tail = records[7:]
    assert [(r.id, r.origin) for r in tail] == [("GONE", "metadata.jsonl:5"), ("TXT", "metadata.jsonl:6")]
    assert all("not an HTML file" in r.error for r in tail)
    assert (stats.pages, stats.errors) == (4, 5)
    assert count_hint(tmp_path) == 5
    assert not any(".cache" in r.origin or "hidden" in r.origin for r in records)


def test_directory_order_is_deterministic(tmp_path):
    make_tree(tmp_path)
    first = [(r.origin, r.id) for r in iter_directory(tmp_path)]
    second = [(r.origin, r.id) for r in iter_directory(tmp_path)]
    assert first == second


def test_directory_that_does_not_exist(tmp_path):
    (record,) = iter_directory(tmp_path / "nope")
    assert "not a directory" in record.error


# --------------------------------------------------------------------------- WARC


@pytest.mark.parametrize("compress", [False, True])
def test_warc_yields_html_responses_and_resources_and_counts_the_rest(tmp_path, compress):
    path = tmp_path / ("crawl.warc.gz" if compress else "crawl.warc")
    write_warc(path, mixed_specs(), compress=compress)
    stats = SourceStats()

    records = list(iter_warc(path, stats=stats))

    assert [r.url for r in records] == ["https://news.example/a", "https://news.example/b", "https://news.example/c"]
    assert [r.html for r in records] == [page(1), page(2), page(3)]
    assert all(r.error is None for r in records)
    assert all(r.published == "2024-03-05" for r in records)
    for r in records:  # <urn:uuid:...> stripped to the uuid
        assert len(r.id) == 36 and r.id.count("-") == 4 and not r.id.startswith(("<", "urn"))
    assert len({r.id for r in records}) == 3
    assert records[0].origin.startswith(f"{path.name}#record 2 (byte ")
    assert dict(stats.skipped) == {"warcinfo": 1, "request": 1, "not-html": 1, "http-status": 1, "metadata": 1}
    assert (stats.pages, stats.errors, stats.skipped_total) == (3, 0, 5)
    assert count_hint(path) is None


def test_warc_payload_is_dechunked_and_content_decoded(tmp_path):
    body = page(8)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    gzipped = gzip.compress(page(9))
    specs = [
        http_response("https://n.example/chunked", chunked, extra=[("Transfer-Encoding", "chunked")]),
        http_response("https://n.example/gz", gzipped, extra=[("Content-Encoding", "gzip")]),
        http_response("https://n.example/untyped", b"\n  <!DOCTYPE html><html><p>x</p></html>", content_type=None),
        http_response("https://n.example/data", b'{"json": true}', content_type=None),
    ]
    path = tmp_path / "enc.warc.gz"
    write_warc(path, specs, compress=True)
    stats = SourceStats()
    records = list(iter_warc(path, stats=stats))
    assert [r.url for r in records] == [
        "https://n.example/chunked",
        "https://n.example/gz",
        "https://n.example/untyped",
    ]
    assert records[0].html == body
    assert records[1].html == page(9)
    assert records[2].html.lstrip().startswith(b"<!DOCTYPE html>")
    assert stats.skipped["not-html"] == 1  # the untyped JSON body was sniffed


def test_warc_oversize_page_is_an_error_and_reading_goes_on(tmp_path):
    specs = [
        http_response("https://n.example/big", b"<html>" + b"x" * 5000),
        http_response("https://n.example/ok", page(1)),
    ]
    path = tmp_path / "big.warc"
    write_warc(path, specs, compress=False)
    big, small = iter_warc(path, max_bytes=1000)
    assert big.url == "https://n.example/big" and "larger than 1000 bytes" in big.error
    assert small.html == page(1) and small.error is None


def five_pages():
    return [http_response(f"https://n.example/{n}", page(n) * 20) for n in range(5)]


@pytest.mark.parametrize("compress", [False, True])
def test_warc_garbage_record_header_yields_one_error_and_resyncs(tmp_path, compress):
    clean = tmp_path / "clean.warc"
    offsets = write_warc(clean, five_pages(), compress=compress)
    data = clean.read_bytes()
    garbage = b"THIS IS NOT A WARC HEADER\r\nFoo: bar\r\n\r\nsome junk\r\n\r\n"
    damaged = data[: offsets[2]] + garbage + data[offsets[3] :]  # record 3 replaced by garbage
    path = tmp_path / ("bad.warc.gz" if compress else "bad.warc")
    path.write_bytes(damaged)

    records = list(iter_warc(path))

    assert [r.url for r in ok(records)] == [f"https://n.example/{n}" for n in (0, 1, 3, 4)]
    assert [r.html for r in ok(records)] == [page(n) * 20 for n in (0, 1, 3, 4)]
    (error,) = errors(records)
    assert records.index(error) == 2  # in place of the damaged record
    assert error.error.startswith(f"malformed WARC record at byte {offsets[2]}")
    assert "THIS IS NOT A WARC HEADER" in error.error
    assert f"skipped {len(garbage)} bytes" in error.error


@pytest.mark.parametrize("compress", [False, True])
def test_warc_wrong_content_length_is_damage(tmp_path, compress):
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False)
    offsets = []
    for uri, rec_type, spec in five_pages():
        offsets.append(buffer.tell())
        body = spec["payload"]
        headers = spec["http_headers"]
        record = writer.create_warc_record(
            uri, rec_type, payload=io.BytesIO(body), length=len(body), http_headers=headers
        )
        writer.write_record(record)
    offsets.append(buffer.tell())
    raw = bytearray(buffer.getvalue())
    record = bytes(raw[offsets[1] : offsets[2]])
    length = record.split(b"Content-Length: ")[1].split(b"\r\n")[0]
    shorter = record.replace(b"Content-Length: " + length, b"Content-Length: " + str(int(length) - 40).encode(), 1)
    members = [bytes(raw[offsets[i] : offsets[i + 1]]) for i in range(5)]
    members[1] = shorter
    if compress:
        members = [gzip.compress(m) for m in members]
    path = tmp_path / ("cl.warc.gz" if compress else "cl.warc")
    path.write_bytes(b"".join(members))

    records = list(iter_warc(path))

    assert [r.url for r in ok(records)] == [f"https://n.example/{n}" for n in (0, 2, 3, 4)]
    (error,) = errors(records)
    assert "not followed by the record separator" in error.error
    assert error.url == "https://n.example/1"


def test_corrupt_data_inside_a_gzip_member_is_reported_not_printed(tmp_path, capsys):
    bodies = [b"<html>" + os.urandom(60_000) + b"</html>" for _ in range(3)]  # incompressible: stored deflate blocks
    specs = [http_response(f"https://n.example/{n}", body) for n, body in enumerate(bodies)]
    path = tmp_path / "flip.warc.gz"
    offsets = write_warc(path, specs, compress=True)
    data = bytearray(path.read_bytes())
    data[(offsets[1] + offsets[2]) // 2] ^= 0xFF  # the gzip CRC of record 2 no longer matches
    path.write_bytes(bytes(data))

    records = list(iter_warc(path))

    assert [r.html for r in ok(records)] == [bodies[0], bodies[2]]
    (error,) = errors(records)
    assert error.error.startswith(f"corrupt WARC record at byte {offsets[1]}: corrupt gzip data")
    assert f"resumed at byte {offsets[2]}" in error.error
    assert capsys.readouterr().err == ""


def test_truncated_warc_gz_yields_everything_before_the_cut_and_one_error(tmp_path):
    clean = tmp_path / "clean.warc.gz"
    offsets = write_warc(clean, five_pages(), compress=True)
    data = clean.read_bytes()
    cut = offsets[3] + (offsets[4] - offsets[3]) // 2  # in the middle of the 4th record's gzip member
    path = tmp_path / "cut.warc.gz"
    path.write_bytes(data[:cut])

    records = list(iter_warc(path))

    assert [r.html for r in ok(records)] == [page(n) * 20 for n in range(3)]
    (error,) = errors(records)
    assert records[-1] is error
    assert error.error.startswith(f"truncated WARC at byte {offsets[3]}")
    assert "no readable record after it" in error.error


def test_truncated_uncompressed_warc_names_the_cut_record(tmp_path):
    clean = tmp_path / "clean.warc"
    offsets = write_warc(clean, five_pages(), compress=False)
    path = tmp_path / "cut.warc"
    path.write_bytes(clean.read_bytes()[: offsets[2] + 600])

    records = list(iter_warc(path))

    assert len(ok(records)) == 2
    (error,) = errors(records)
    assert error.url == "https://n.example/2"
    assert error.error.startswith(f"truncated WARC at byte {offsets[2]}: record ends after")


def test_every_cut_of_a_warc_gz_is_handled(tmp_path):
    clean = tmp_path / "clean.warc.gz"
    offsets = write_warc(clean, five_pages()[:3], compress=True)
    data = clean.read_bytes()
    path = tmp_path / "cut.warc.gz"
    for cut in range(0, len(data), 11):
        path.write_bytes(data[:cut])
        records = list(iter_warc(path))  # never raises
        complete = sum(1 for end in offsets[1:] if end <= cut)
        assert len(ok(records)) in (complete, complete + 1)  # +1: only the gzip trailer of a member is missing
        assert len(errors(records)) <= 1
        if cut not in offsets and len(ok(records)) == complete:
            assert len(errors(records)) == 1, cut


def test_whole_file_gzip_warc_is_read_as_one_stream(tmp_path):
    plain = tmp_path / "plain.warc"
    write_warc(plain, five_pages(), compress=False)
    path = tmp_path / "whole.warc.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()))
    assert [r.html for r in iter_warc(path)] == [page(n) * 20 for n in range(5)]

    path.write_bytes(gzip.compress(plain.read_bytes())[:-60])  # cut short
    records = list(iter_warc(path))
    assert 1 <= len(ok(records)) < 5
    (error,) = errors(records)
    assert "gzip stream cut short" in error.error


def test_not_a_warc_at_all(tmp_path):
    path = tmp_path / "text.warc"
    path.write_text("hello, this is plain text\n" * 50)
    (record,) = iter_warc(path)
    assert "malformed WARC record at byte 0" in record.error


# --------------------------------------------------------------------------- dispatch


def test_iter_source_dispatches_on_the_path(tmp_path):
    make_tree(tmp_path / "tree")
    (tmp_path / "a.html").write_bytes(page(1))
    (tmp_path / "p.jsonl").write_text(json.dumps({"id": "a", "html": "a.html"}) + "\n")
    write_warc(tmp_path / "c.warc.gz", mixed_specs(), compress=True)
    write_warc(tmp_path / "c.warc", mixed_specs(), compress=False)

    assert [r.id for r in iter_source(tmp_path / "p.jsonl")] == ["a"]
    assert len(ok(list(iter_source(tmp_path / "tree")))) == 4
    assert len(list(iter_source(tmp_path / "c.warc.gz"))) == 3
    assert len(list(iter_source(str(tmp_path / "c.warc")))) == 3

    stats = SourceStats()
    (unsupported,) = iter_source(tmp_path / "a.html", stats=stats)
    assert "unsupported input" in unsupported.error and "a.html" in unsupported.error
    assert stats.errors == 1
    (missing,) = iter_source(tmp_path / "nothing.jsonl")
    assert "no such file" in missing.error.lower()
    assert count_hint(tmp_path / "p.jsonl") == 1 and count_hint(tmp_path / "a.html") is None


def test_readers_stream_lazily(tmp_path):
    """Generators: nothing is read before iteration starts, and stopping early is fine."""
    src = tmp_path / "p.jsonl"
    src.write_text("\n".join(json.dumps({"id": str(n), "html": f"{n}.html"}) for n in range(3)) + "\n")
    (tmp_path / "0.html").write_bytes(page(0))
    records = iter_source(src)
    (tmp_path / "1.html").write_bytes(page(1))  # created after the reader was made, before it got there
    assert next(records).html == page(0)
    assert next(records).html == page(1)
    records.close()


def test_every_source_keeps_the_protocol_and_is_named_in_the_unsupported_message(tmp_path):
    from newsfold.indexer.sources.base import SOURCES, Source

    assert all(isinstance(source, Source) for source in SOURCES)
    (tmp_path / "a.html").write_text("<html></html>")
    (record,) = iter_source(tmp_path / "a.html")
    assert record.error.endswith("expected a directory, a .jsonl file or a .warc / .warc.gz file")


def test_a_folder_named_like_a_page_list_is_read_as_a_folder(tmp_path):
    folder = tmp_path / "pages.jsonl"
    folder.mkdir()
    (folder / "a.html").write_text("<html><p>a page</p></html>")
    assert [r.id for r in iter_source(folder)] == ["a.html"]
    assert count_hint(folder) == 1


# --------------------------------------------------------------------------- a section given with a page


def test_a_section_given_with_a_page_travels_from_every_source_to_the_worker(tmp_path):
    """A page list's ``section``, ``category`` or first of ``categories`` (a feed's), a folder's metadata, and the
    archive's WARC header: each reaches the task payload and the ``Page`` a worker signs."""
    from newsfold.indexer.pages import page_from_payload
    from newsfold.indexer.sources.warc import page_record_bytes

    (tmp_path / "a.html").write_bytes(page(1))
    rows = [{"id": "s", "html": "a.html", "section": "Politics"}, {"id": "c", "html": "a.html", "category": "Sport"},
            {"id": "f", "html": "a.html", "categories": ["Arts", "Music"]}, {"id": "n", "html": "a.html"},
            {"id": "bad", "html": "a.html", "categories": [{"term": "x"}]}]  # fmt: skip
    (tmp_path / "pages.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    records = list(iter_jsonl(tmp_path / "pages.jsonl"))
    assert [r.section for r in records] == ["Politics", "Sport", "Arts", None, None]
    assert page_from_payload({**records[0].meta(), "html": "<p>x</p>"}).section == "Politics"
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "b.html").write_bytes(page(2))
    (folder / "metadata.jsonl").write_text(json.dumps({"path": "b.html", "id": "b", "category": "Weather"}) + "\n")
    assert [r.section for r in iter_directory(folder)] == ["Weather"]
    warc = tmp_path / "archive.warc.gz"
    warc.write_bytes(page_record_bytes(records[2], page(3)))
    assert [r.section for r in iter_warc(warc)] == ["Arts"]
