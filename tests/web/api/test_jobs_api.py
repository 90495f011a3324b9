"""The jobs API (/api/jobs...) through the Flask test client, with job state in a real Redis."""

from __future__ import annotations

import base64
import json

import pytest
import redis

from newsfold.state.jobs import JobStore
from newsfold.web import create_app
from newsfold.web.auth import new_api_token
from newsfold.web.config import WebSettings

TOKEN, TOKEN_ENTRY = new_api_token("tests")
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def broker_url(redis_url):
    """A Redis database of its own: queued tasks stay there, no worker of another test takes them."""
    url = redis_url.rsplit("/", 1)[0] + "/7"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@pytest.fixture
def store(broker_url):
    client = redis.Redis.from_url(broker_url)
    yield JobStore(client)
    client.close()


@pytest.fixture
def client(settings, broker_url):
    web = WebSettings(api_token_hashes=TOKEN_ENTRY)
    app = create_app({"TESTING": True}, settings=settings.replace(redis_url=broker_url), web=web)
    with app.test_client() as c:
        yield c


def queued(broker_url) -> list[tuple[str, dict]]:
    """(task name, kwargs) of the messages waiting in the Celery queue."""
    out = []
    for raw in redis.Redis.from_url(broker_url).lrange("celery", 0, -1):
        message = json.loads(raw)
        _, kwargs, _ = json.loads(base64.b64decode(message["body"]))
        out.append((message["headers"]["task"], kwargs))
    return out


def test_job_reads_need_a_login_or_token(client, store):
    store.create("ingest", params={"sources": ["/srv/private/a.jsonl"]}, total=1)
    assert client.get("/api/jobs").status_code == 401
    assert client.get("/api/jobs", headers=AUTH).status_code == 200


def test_jobs_are_listed_newest_first_with_progress_and_failures(client, store):
    first = store.create("ingest", params={"sources": ["a.jsonl"]}, total=4)
    second = store.create("reindex", params={"source": "text"})
    store.start(first.id)
    outcomes = [
        {"page_id": "p1", "status": "new"},
        {"page_id": "p2", "status": "rejected", "reason": "failed", "detail": "ES down"},
        {"page_id": "p3", "status": "rejected", "reason": "empty", "detail": "no bytes"},
    ]
    store.record(first.id, "0", outcomes, payloads={"p2": {"id": "p2", "html": "<p>x</p>"}})

    res = client.get("/api/jobs?limit=1", headers=AUTH)
    assert res.status_code == 200
    assert res.json["total"] == 2 and [j["id"] for j in res.json["jobs"]] == [second.id]
    assert [j["id"] for j in client.get("/api/jobs?offset=1", headers=AUTH).json["jobs"]] == [first.id]

    res = client.get(f"/api/jobs/{first.id}?failures_limit=1", headers=AUTH)
    assert res.status_code == 200
    job = res.json
    assert (job["status"], job["total"], job["done"]) == ("running", 4, 3)
    assert job["counts"] == {"new": 1, "duplicate": 0, "merged": 0, "updated": 0, "unchanged": 0, "rejected": 2}
    assert job["rejected"] == {"empty": 1, "failed": 1}
    assert job["rate"] is not None and "eta_seconds" in job
    assert job["failures"]["total"] == 2 and len(job["failures"]["items"]) == 1
    item = job["failures"]["items"][0]
    assert (item["item"], item["reason"], item["retryable"]) == ("p2", "failed", True)
    assert (
        client.get(f"/api/jobs/{first.id}?failures_offset=1", headers=AUTH).json["failures"]["items"][0]["item"] == "p3"
    )


def test_bad_job_requests_are_answered_plainly(client):
    assert client.get("/api/jobs?limit=0", headers=AUTH).status_code == 400
    assert "whole number" in client.get("/api/jobs?offset=x", headers=AUTH).json["error"]
    assert client.get("/api/jobs/ingest-20240101-000000-abcdef", headers=AUTH).status_code == 404
    assert client.get("/api/jobs/../../etc", headers=AUTH).status_code == 404
    assert client.get("/api/jobs/not-a-job-id", headers=AUTH).status_code == 404


def test_start_a_reindex_queues_the_task_by_name_and_refuses_a_second(client, store, broker_url):
    assert client.post("/api/jobs/reindex", json={"source": "text"}).status_code == 401  # anonymous
    assert client.post("/api/jobs/reindex", json={"source": "disk"}, headers=AUTH).status_code == 400
    res = client.post("/api/jobs/reindex", json={"source": "archive"}, headers=AUTH)
    assert res.status_code == 202
    job = res.json
    assert (job["kind"], job["status"], job["params"]["source"]) == ("reindex", "queued", "archive")
    assert job["params"]["user"] == "token:tests"
    assert queued(broker_url) == [("indexer.tasks.reindex", {"job_id": job["id"]})]
    again = client.post("/api/jobs/reindex", json={"source": "text"}, headers=AUTH)
    assert again.status_code == 409 and job["id"] in again.json["error"]
    store.finish(job["id"], "done")
    assert client.post("/api/jobs/reindex", headers=AUTH).status_code == 202  # no body: the text source


def test_retry_queues_the_failures_of_a_finished_job(client, store, broker_url):
    job = store.create("ingest", params={})
    store.record(
        job.id,
        "0",
        [{"page_id": "p2", "status": "rejected", "reason": "failed", "detail": "ES down"}],
        payloads={"p2": {"id": "p2", "html": "<p>x</p>"}},
    )
    assert client.post(f"/api/jobs/{job.id}/retry", headers=AUTH).status_code == 409  # still queued
    store.finish(job.id, "done")
    res = client.post(f"/api/jobs/{job.id}/retry", headers=AUTH)
    assert res.status_code == 202 and res.json["retrying"] == 1 and res.json["id"] == job.id
    assert queued(broker_url) == [("indexer.tasks.retry_failures", {"job_id": job.id})]
    clean = store.create("ingest", params={})
    store.finish(clean.id, "done")
    res = client.post(f"/api/jobs/{clean.id}/retry", headers=AUTH)
    assert res.status_code == 409 and "no retryable failures" in res.json["error"]
    assert client.post("/api/jobs/ingest-20240101-000000-abcdef/retry", headers=AUTH).status_code == 404


def test_jobs_answer_503_when_redis_is_down(settings):
    down = settings.replace(redis_url="redis://127.0.0.1:9/0")
    web = WebSettings(api_token_hashes=TOKEN_ENTRY)
    res = create_app({"TESTING": True}, settings=down, web=web).test_client().get("/api/jobs", headers=AUTH)
    assert res.status_code == 503 and "Redis" in res.json["error"]


@pytest.mark.parametrize("headers", [None, AUTH], ids=["anonymous", "token"])
def test_get_of_the_reindex_address_is_a_405_naming_post_not_a_job_lookup(client, headers):
    """Issue 32, item 13 (found by tests/web/api/test_schema_fuzz.py): ``GET /api/jobs/reindex`` went to the job
    route as the id "reindex" (401, or 404 with a token); the OpenAPI document has only POST at that address."""
    res = client.get("/api/jobs/reindex", headers=headers)
    assert res.status_code == 405 and "POST" in res.headers["Allow"], (res.status_code, res.headers.get("Allow"))
    assert client.get("/api/jobs/not-a-job", headers=headers).status_code == (404 if headers else 401)
