"""The raw-page archive: gzip-per-record WARC files, references, rotation, reading across processes."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from newsfold.indexer.jobs.archive import ArchiveError, ArchiveRef, WarcArchive, archive_files, iter_archive, read_ref
from newsfold.indexer.records import PageRecord, SourceStats
from newsfold.indexer.sources.warc import iter_warc
from newsfold.plugin.ids import is_page_id
from tests.paths import REPO_ROOT

REPO = REPO_ROOT


def record(n: int, **fields) -> PageRecord:
    values = {
        "id": f"page-{n}",
        "url": f"https://news.example/story/{n}",
        "site": "news.example",
        "lang": "en",
        "published": "2024-05-06",
        "html": f"<html><body><p>Story number {n} about the harbour.</p></body></html>".encode(),
        "origin": f"pages.jsonl:{n}",
    }
    values.update(fields)
    return PageRecord(**values)


def same_page(a: PageRecord, b: PageRecord) -> bool:
    return (a.id, a.url, a.site, a.lang, a.published, a.html) == (b.id, b.url, b.site, b.lang, b.published, b.html)


AWKWARD = [
    record(1),
    # bytes that are not UTF-8, and a gzip page (kept gzip, exactly)
    record(2, html=b"<html><body>caf\xe9 \xff\xfe</body></html>"),
    record(3, html=gzip.compress(b"<html><body>zipped</body></html>")),
    # metadata that cannot go into a header as-is
    record(4, id="multi\nline\r\nid", site='"quoted"', lang=" padded ", published=None, url=None),
    record(5, id="caf\u00e9 \u4e2d\u6587", url="https://news.example/a path with spaces", site=None, lang=None),
    record(6, url="<https://news.example/angle>", id=""),
    record(7, html=b""),
]


def test_append_and_read_ref_round_trip(tmp_path):
    with WarcArchive(tmp_path / "archive") as archive:
        refs = [archive.append(r) for r in AWKWARD]

    for ref, original in zip(refs, AWKWARD, strict=True):
        again = ArchiveRef.from_dict(json.loads(json.dumps(ref.as_dict())))
        assert again == ref
        got = read_ref(again)
        assert got.html == original.html  # byte for byte
        assert same_page(got, original), (got, original)
        assert got.error is None
        assert got.origin == f"{Path(ref.path).name}@{ref.offset}"
    assert refs[1].offset == refs[0].offset + refs[0].length  # records are contiguous gzip members
    (only,) = archive_files(tmp_path / "archive")
    assert f"-p{os.getpid()}-" in only.name and only.name.startswith("pages-") and only.name.endswith(".warc.gz")


def test_archive_is_a_standard_warc_that_sources_can_read(tmp_path):
    with WarcArchive(tmp_path) as archive:
        for r in AWKWARD:
            archive.append(r)
    (path,) = archive_files(tmp_path)
    stats = SourceStats()
    pages = list(iter_warc(path, stats=stats))
    assert [p.id for p in pages] == [r.id for r in AWKWARD]
    for p, r in zip(pages, AWKWARD, strict=True):  # the archive keeps any id; a source refuses a bad one to workers
        assert same_page(p, r) if not r.id or is_page_id(r.id) else (p.reason, p.html) == ("bad_id", None)
    assert stats.skipped["warcinfo"] == 1
    with gzip.open(path, "rb") as fh:  # one gzip member per record, readable by any gzip reader
        text = fh.read()
    assert text.count(b"WARC/1.0\r\n") == len(AWKWARD) + 1
    assert b"WARC-Newsfold-Id: page-1\r\n" in text and b"WARC-Target-URI: https://news.example/story/1\r\n" in text


def test_append_refuses_records_without_html(tmp_path):
    with WarcArchive(tmp_path) as archive:
        with pytest.raises(ValueError):
            archive.append(PageRecord("x", None, None, None, None, None, error="cannot read x"))
        with pytest.raises(ValueError):
            archive.append(record(1, html=None))
    assert archive_files(tmp_path) == []  # nothing was opened for them


def test_rotation_keeps_files_under_max_bytes_and_iter_archive_keeps_order(tmp_path):
    pages = [record(n, html=os.urandom(700)) for n in range(12)]  # incompressible: ~1 kB per record
    with WarcArchive(tmp_path, max_bytes=3000) as archive:
        refs = [archive.append(p) for p in pages]
        big = archive.append(record(99, html=os.urandom(5000)))  # bigger than max_bytes: a file of its own

    files = archive_files(tmp_path)
    assert len(files) >= 5
    assert len({ref.path for ref in refs}) == len(files) - 1
    assert Path(big.path) == files[-1] and big.path not in {ref.path for ref in refs}
    assert all(f.stat().st_size <= 3000 for f in files[:-1])
    assert [Path(ref.path) for ref in refs] == sorted(Path(ref.path) for ref in refs)  # names sort in write order

    listed = list(iter_archive(tmp_path))
    assert [ref for ref, _ in listed] == [*refs, big]
    assert [page.html for _, page in listed] == [p.html for p in pages] + [big_html(big)]
    assert all(page.error is None for _, page in listed)


def test_iter_archive_headers_only_lists_the_same_records_without_reading_pages(tmp_path):
    with WarcArchive(tmp_path) as archive:
        refs = [archive.append(record(n)) for n in range(3)]
    listed = list(iter_archive(tmp_path, headers_only=True))
    assert [ref for ref, _ in listed] == refs
    expected = [(record(n).id, record(n).url, None) for n in range(3)]
    assert [(page.id, page.url, page.html) for _, page in listed] == expected


def big_html(ref: ArchiveRef) -> bytes:
    return read_ref(ref).html


def test_read_ref_errors(tmp_path):
    with WarcArchive(tmp_path / "a") as archive:
        first = archive.append(record(1))
        second = archive.append(record(2))

    with pytest.raises(ArchiveError):
        read_ref(ArchiveRef(first.path, first.offset + 1, first.length))  # not a record start
    with pytest.raises(ArchiveError, match="no WARC record"):
        read_ref(ArchiveRef(second.path, second.offset + second.length, 100))  # past the last record
    with pytest.raises(OSError):  # ArchiveError is an OSError
        read_ref(ArchiveRef(str(tmp_path / "nope.warc.gz"), 0, 10))
    with pytest.raises(ArchiveError, match="not a page"):
        read_ref(ArchiveRef(first.path, 0, first.offset))  # the warcinfo record

    # the archive moved: read it under its new folder
    (tmp_path / "a").rename(tmp_path / "b")
    assert read_ref(second, root=tmp_path / "b").html == record(2).html
    with pytest.raises(ArchiveError):
        read_ref(second)


def test_read_ref_detects_a_damaged_record(tmp_path):
    # stored, not compressed, so a flipped byte lands in the page and only the WARC digest can tell
    with WarcArchive(tmp_path) as archive:
        ref = archive.append(record(1, html=os.urandom(2000)))
    path = Path(ref.path)
    data = bytearray(path.read_bytes())
    data[ref.offset + ref.length - 300] ^= 0x55
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match="damaged"):
        read_ref(ref)


def test_ref_from_dict_validates():
    ref = ArchiveRef("/x/pages.warc.gz", 10, 20)
    assert ArchiveRef.from_dict(ref.as_dict()) == ref
    for bad in ({}, {"path": "", "offset": 0, "length": 1}, {"path": "p", "offset": -1, "length": 1}, None):
        with pytest.raises(ValueError):
            ArchiveRef.from_dict(bad)
    with pytest.raises(ValueError):
        ArchiveRef.from_dict({"path": "p", "offset": "3", "length": 1})


def test_iter_archive_reports_a_torn_tail_and_goes_on(tmp_path):
    with WarcArchive(tmp_path) as archive:
        refs = [archive.append(record(n)) for n in range(3)]
    path = Path(refs[0].path)
    path.write_bytes(path.read_bytes()[: refs[2].offset + refs[2].length // 2])  # last record half written
    with WarcArchive(tmp_path) as archive:  # a later file is still read
        later = archive.append(record(9))

    listed = list(iter_archive(tmp_path))

    assert [ref for ref, page in listed if page.error is None] == [refs[0], refs[1], later]
    ((damaged_ref, damaged),) = [(ref, page) for ref, page in listed if page.error]
    assert damaged_ref.path == refs[2].path and damaged_ref.offset == refs[2].offset
    assert "truncated WARC" in damaged.error


WRITER = textwrap.dedent(
    """
    import json, sys
    from newsfold.indexer.jobs.archive import WarcArchive
    from newsfold.indexer.records import PageRecord

    root, count = sys.argv[1], int(sys.argv[2])
    archive = WarcArchive(root)
    for n in range(count):
        html = ("<html><p>child page %d</p></html>" % n).encode()
        ref = archive.append(PageRecord("child-%d" % n, "https://c.example/%d" % n, "c", "en", None, html))
        print(json.dumps(ref.as_dict()), flush=True)
        if n == 0:
            sys.stdin.readline()  # wait: the parent reads the first record while this process still runs
    archive.close()
    """
)


def test_records_written_by_another_process_are_readable_at_once(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path), "3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = ArchiveRef.from_dict(json.loads(child.stdout.readline()))
        # the writer is alive with its file open: the record is already readable
        assert child.poll() is None
        got = read_ref(first)
        assert (got.id, got.url, got.html) == ("child-0", "https://c.example/0", b"<html><p>child page 0</p></html>")
        with WarcArchive(tmp_path) as mine:  # this process writes alongside, into its own file
            own = mine.append(record(1))
        child.stdin.write("go\n")
        child.stdin.flush()
        rest = [ArchiveRef.from_dict(json.loads(line)) for line in child.stdout]
    finally:
        child.stdin.close()
        child.stdout.close()
        assert child.wait(timeout=60) == 0

    assert [read_ref(ref).id for ref in rest] == ["child-1", "child-2"]
    assert own.path != first.path and f"-p{child.pid}-" in first.path
    assert {ref.path for ref in rest} == {first.path}
    listed = {page.id for _, page in iter_archive(tmp_path)}
    assert listed == {"child-0", "child-1", "child-2", "page-1"}


def _append_in_child(archive: WarcArchive, queue) -> None:
    queue.put(archive.append(record(2)).as_dict())
    archive.close()


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_child_never_writes_into_the_parents_file(tmp_path):
    context = multiprocessing.get_context("fork")
    with WarcArchive(tmp_path) as archive:
        before = archive.append(record(1))
        queue = context.Queue()
        child = context.Process(target=_append_in_child, args=(archive, queue))
        child.start()
        from_child = ArchiveRef.from_dict(queue.get(timeout=60))
        child.join(timeout=60)
        after = archive.append(record(3))
        queue.close()
        queue.join_thread()

    assert child.exitcode == 0
    assert from_child.path != before.path and f"-p{child.pid}-" in from_child.path
    assert after.path == before.path and after.offset == before.offset + before.length
    assert [read_ref(ref).id for ref in (before, from_child, after)] == ["page-1", "page-2", "page-3"]
