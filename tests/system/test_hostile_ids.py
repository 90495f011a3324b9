"""Page ids from outside (issue 32, items 7 and 8): one bad id is refused alone, at the door, with a reason.

An id over Elasticsearch's 512 bytes used to fail its whole bulk request: the
task died (``UnpickleableExceptionWrapper``), the good pages of its batch were
lost, and "retry failed" failed again. Now the grammar of ``plugin.ids`` is
checked where pages come in: the sources (a ``bad_id`` error record), the
worker (a ``bad_id`` rejection, recorded), the API (a 400).
"""

from __future__ import annotations

import json

import pytest

from newsfold.indexer import tasks
from newsfold.indexer.records import PageRecord
from newsfold.indexer.sources.base import iter_source
from newsfold.indexer.sources.warc import page_record_bytes
from newsfold.plugin.fold.rejections import rejections_index
from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests import hostile
from tests.pages import page, story

LONG = "x" * 513  # one byte over the limit on a document _id
WIDE = "é" * 257  # 257 characters, 514 bytes: the limit counts UTF-8 bytes
BAD = {"long": LONG, "wide": WIDE, "newline": "a\nb", "dots": "../../x", "versions": "a/versions/b"}


def _good(n: int) -> list[tuple[str, str]]:
    return hostile.good_pages(n, seed=3200)


@pytest.fixture
def worker_env(settings, redis_url, es, monkeypatch):
    live = settings.replace(redis_url=redis_url)
    monkeypatch.setattr(tasks, "worker_settings", lambda: live)
    return live


def test_a_page_id_over_512_bytes_is_rejected_alone_and_its_batch_is_indexed(worker_env, es):
    live = worker_env
    payloads = [{"id": f"good-{n}", "url": url, "html": html} for n, (url, html) in enumerate(_good(3))]
    payloads.insert(1, {"id": LONG, "url": "https://bad.test/x", "html": page("Long id", story(3210))})
    got = {o["page_id"]: o for o in tasks.ingest_batch(payloads, live.index)}
    assert [got[f"good-{n}"]["status"] for n in range(3)] == ["new"] * 3
    assert (got[LONG]["status"], got[LONG]["reason"]) == ("rejected", "bad_id")
    assert "513 bytes" in got[LONG]["detail"]
    es.indices.refresh(index=[live.index, rejections_index(live)])
    assert es.count(index=live.index)["count"] == 3
    (record,) = es.search(index=rejections_index(live), query={"term": {"reason": "bad_id"}})["hits"]["hits"]
    assert record["_source"]["page_id"].startswith("x" * 100) and len(record["_id"].encode()) <= 512


@pytest.mark.parametrize("bad", sorted(BAD))
def test_a_page_list_line_with_a_bad_id_is_refused_at_the_source(tmp_path, bad):
    lines = []
    for n, (url, html) in enumerate(_good(2)):
        (tmp_path / f"g{n}.html").write_text(html)
        lines.append({"id": f"g{n}", "url": url, "html": f"g{n}.html"})
    lines.insert(1, {"id": BAD[bad], "url": "https://bad.test/", "html": "g0.html"})
    (tmp_path / "pages.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    records = list(iter_source(tmp_path / "pages.jsonl"))
    assert [(r.id, r.reason if r.error else "page") for r in records] == [
        ("g0", "page"), (BAD[bad], "bad_id"), ("g1", "page")
    ]  # fmt: skip
    assert records[1].error.startswith("bad_id: the id ")


def test_a_folder_page_and_a_warc_record_with_a_bad_id_are_refused_at_the_source(tmp_path):
    folder = tmp_path / "site"
    folder.mkdir()
    (url, html), (url2, html2) = _good(2)
    (folder / "a.html").write_text(html)
    (folder / "b.html").write_text(html2)
    (folder / "metadata.jsonl").write_text(json.dumps({"path": "a.html", "id": WIDE}) + "\n")
    assert {(r.id, r.reason if r.error else "page") for r in iter_source(folder)} == {(WIDE, "bad_id"),
                                                                                     ("b.html", "page")}  # fmt: skip
    warc = tmp_path / "pages.warc.gz"
    meta = {"site": None, "lang": None, "published": None, "html": None}
    with open(warc, "wb") as fh:
        fh.write(page_record_bytes(PageRecord(id=LONG, url=url, **meta), html.encode()))
        fh.write(page_record_bytes(PageRecord(id="fine", url=url2, **meta), html2.encode()))
    assert [(r.id, r.reason if r.error else "page") for r in iter_source(warc)] == [(LONG, "bad_id"), ("fine", "page")]


@pytest.fixture
def api(settings):
    from newsfold.web.auth import new_api_token

    token, entry = new_api_token("tests")
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(api_token_hashes=entry))
    yield app.test_client(), {"Authorization": f"Bearer {token}"}
    get_resources(app).close()


@pytest.mark.parametrize("bad", sorted(BAD))
def test_the_api_refuses_a_bad_page_id_with_a_400_naming_it(api, bad):
    client, auth = api
    pages = [{"html": "<p>fine</p>", "id": "fine"}, {"html": "<p>bad</p>", "id": BAD[bad]}]
    res = client.post("/api/pages", json={"pages": pages}, headers=auth)
    assert res.status_code == 400, res.get_data(as_text=True)[:300]
    assert res.get_json()["error"].startswith("pages[1].id ")


@pytest.mark.slow
def test_newsfold_ingest_of_a_page_list_with_a_long_id_indexes_the_rest_of_its_batch(
    tmp_path, settings, redis_url, monkeypatch, capsys, es
):
    """Through real workers: every good page of the one batch is indexed, the long id is a ``bad_id`` line.

    Before the grammar, the batch's task failed as a whole: all six pages came back rejected.
    """
    from newsfold.cli import main

    lines = []
    for n, (url, html) in enumerate(_good(5)):
        (tmp_path / f"g{n}.html").write_text(html)
        lines.append({"id": f"g{n}", "url": url, "html": f"g{n}.html"})
    lines.insert(2, {"id": LONG, "url": "https://bad.test/", "html": "g0.html"})
    (tmp_path / "pages.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("NEWSFOLD_INDEX", settings.index)
    out = tmp_path / "outcomes.jsonl"
    assert main(["ingest", str(tmp_path / "pages.jsonl"), "--out", str(out), "--quiet"]) == 0
    outcomes = {o["page_id"]: o for o in map(json.loads, out.read_text().splitlines())}
    assert sorted(o["status"] for o in outcomes.values()) == ["new"] * 5 + ["rejected"]
    assert outcomes[LONG]["reason"] == "bad_id"
    assert es.count(index=settings.index)["count"] == 5
