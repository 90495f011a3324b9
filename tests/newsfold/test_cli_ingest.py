"""`newsfold ingest` through real workers: WARC and directory inputs, the raw-page archive."""

from __future__ import annotations

import io
import json

import pytest
import redis
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from newsfold.cli import main
from newsfold.indexer.jobs.archive import iter_archive
from newsfold.state.jobs import JobStore
from tests.pages import page, story

pytestmark = pytest.mark.slow


def _warc(path, pages):
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url, html in pages:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            body = html.encode()
            rec = writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), length=len(body), http_headers=headers
            )
            writer.write_record(rec)  # with its length given, warcio needs no temporary file (left unclosed)


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
    err = capsys.readouterr().err
    assert "4 pages" in err
    job = JobStore(redis.Redis.from_url(redis_url)).get(err.split("ingest job ")[1].split()[0])
    assert (job.status, job.done, job.counts["rejected"], job.rejected) == ("done", 4, 1, {"empty": 1})
    assert len(list(iter_archive(archive))) == 4  # every raw page, rejected ones too, is kept for re-extraction
    assert es.count(index=settings.index)["count"] == 3


def test_ingest_resume_skips_the_batches_the_job_has_done(tmp_path, settings, redis_url, monkeypatch, capsys, es):
    lines = []
    for i in range(5):
        (tmp_path / f"p{i}.html").write_text(page(f"Story {i}", story(500 + i), site=f"s{i}.test"))
        lines.append(json.dumps({"id": f"p{i}", "url": f"https://s{i}.test/p", "html": f"p{i}.html"}))
    source = tmp_path / "pages.jsonl"
    source.write_text("\n".join(lines) + "\n")
    archive = tmp_path / "archive"
    store = JobStore(redis.Redis.from_url(redis_url))
    params = {
        "sources": [str(source.resolve())],
        "index": settings.index,
        "archive": str(archive),
        "batch_size": 2,
        "user": "tests",
    }
    job = store.create("ingest", params=params, total=5)
    # interrupted after the workers had done batch 1 (pages p2, p3) only
    store.record(job.id, "1", [{"page_id": "p2", "status": "new"}, {"page_id": "p3", "status": "new"}])
    store.finish(job.id, "cancelled")
    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    assert main(["ingest", "--resume", job.id, "--quiet", "--workers", "1"]) == 0
    err = capsys.readouterr().err
    # every page is reported, the two the interrupted run finished from the job's records
    assert "resuming: 1 batches already done" in err and "5 pages" in err and "job " + job.id + " in all: 5 new" in err
    ids = {d["_id"] for d in es.search(index=settings.index, size=10, source=False)["hits"]["hits"]}
    assert ids == {"p0", "p1", "p4"}  # the done batch was not sent again
    assert [r.id for _, r in iter_archive(archive)] == ["p0", "p1", "p4"]  # nor archived again
    got = store.get(job.id)
    assert (got.status, got.done, got.counts["new"]) == ("done", 5, 5)
    assert store.recorded(job.id) == {"0", "1", "2"}
    with pytest.raises(SystemExit, match="already done"):
        main(["ingest", "--resume", job.id, "--quiet", "--workers", "0"])
