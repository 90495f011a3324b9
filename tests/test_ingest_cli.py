"""`newsfold ingest` through real workers: WARC and directory inputs, the raw-page archive."""

from __future__ import annotations

import io
import json

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from indexer.archive import iter_archive
from newsfold.cli import main
from tests.pages import page, story

pytestmark = pytest.mark.slow


def _warc(path, pages):
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url, html in pages:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            rec = writer.create_warc_record(url, "response", payload=io.BytesIO(html.encode()), http_headers=headers)
            writer.write_record(rec)


def test_ingest_warc_and_directory_with_archive(tmp_path, settings, redis_url, monkeypatch, capsys, es):
    paras = story(400)
    _warc(
        tmp_path / "crawl.warc.gz",
        [
            ("https://a.test/one", page("Wire story", paras, site="a.test")),
            ("https://b.test/two", page("Wire story again", paras, site="b.test")),
        ],
    )
    folder = tmp_path / "pages"
    folder.mkdir()
    (folder / "other.html").write_text(page("Another story", story(401), site="c.test"))
    (folder / "other.json").write_text(json.dumps({"url": "https://c.test/other", "site": "c.test"}))
    (folder / "broken.html").write_bytes(b"")
    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("NEWSFOLD_INDEX", settings.index)
    out = tmp_path / "outcomes.jsonl"
    archive = tmp_path / "archive"
    code = main(
        [
            "ingest",
            str(tmp_path / "crawl.warc.gz"),
            str(folder),
            "--archive",
            str(archive),
            "--out",
            str(out),
            "--quiet",
        ]
    )
    assert code == 0
    outcomes = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(o["status"] for o in outcomes) == ["duplicate", "new", "new", "rejected"]
    assert "4 pages" in capsys.readouterr().err
    assert len(list(iter_archive(archive))) == 4  # every raw page, rejected ones too, is kept for re-extraction
    assert es.count(index=settings.index)["count"] == 3
