"""Issue 31 item 4: rejected pages are listed with their reasons; job pages refresh while the job runs."""

from __future__ import annotations

import re

import redis

from newsfold.plugin.fold.rejections import record_rejections
from newsfold.state.jobs import JobStore
from tests.web.admin.helpers import BEARER, html_of


def test_rejected_pages_are_listed_with_their_reasons_and_paged(make_app, admin_settings, es, settings):
    """Fails before the fix: /admin/rejected did not exist (404); the statistics only counted rejections."""
    client = make_app(admin_settings, ADMIN_REJECTED=2).test_client()
    assert "No rejected page" in html_of(client.get("/admin/rejected", headers=BEARER))  # no index yet
    record_rejections(
        [
            {"page_id": "r1", "status": "rejected", "reason": "too_short", "url": "https://x.test/1", "site": "x.test"},
            {"page_id": "r2", "status": "rejected", "reason": "too_short", "detail": "<b>12 words</b>"},
            {"page_id": "r3", "status": "rejected", "reason": "not_html"},
        ],
        client=es,
        settings=settings,
        job_id="job-7",
    )
    es.indices.refresh(index=f"{settings.index}-rejected")
    first = html_of(client.get("/admin/rejected", headers=BEARER))
    assert "3 rejected pages" in first and 'data-testid="pager"' in first
    rows = re.findall(r'data-testid="rejected-row" data-page-id="([^"]+)"', first)
    second = html_of(client.get("/admin/rejected?page=2", headers=BEARER))
    rows += re.findall(r'data-testid="rejected-row" data-page-id="([^"]+)"', second)
    assert sorted(rows) == ["r1", "r2", "r3"] and len(set(rows)) == 3
    both = first + second
    assert "&lt;b&gt;12 words&lt;/b&gt;" in both and 'href="/admin/jobs/job-7"' in both and "x.test" in both
    short = html_of(client.get("/admin/rejected?reason=too_short", headers=BEARER))
    assert sorted(re.findall(r'data-testid="rejected-row" data-page-id="([^"]+)"', short)) == ["r1", "r2"]
    assert 'href="/admin/rejected?reason=not_html"' in second + first
    assert client.get("/admin/rejected?page=0", headers=BEARER).status_code == 400
    assert 'href="/admin/rejected"' in html_of(client.get("/admin/stats", headers=BEARER))


def test_a_job_page_follows_the_job_in_place_only_while_it_runs(make_app, admin_settings, jobs_redis_url, es):
    """Issue 38, item 6: no reload (it lost focus and reading position); a script polls the job's JSON and a
    polite live region carries the status; without scripts a refresh link stays."""
    store = JobStore(redis.Redis.from_url(jobs_redis_url))
    job = store.create("ingest", params={"sources": ["crawl/"]}, total=2)
    client = make_app(admin_settings.replace(redis_url=jobs_redis_url)).test_client()
    poll = f'data-job-poll="/api/jobs/{job.id}?failures_limit=1"'
    queued = html_of(client.get(f"/admin/jobs/{job.id}", headers=BEARER))
    assert poll in queued and 'src="/static/job.js"' in queued and 'http-equiv="refresh"' not in queued
    assert 'aria-live="polite"' in queued and 'data-testid="job-refresh-link"' in queued
    store.start(job.id)
    running = client.get(f"/admin/jobs/{job.id}", headers=BEARER)
    assert poll in html_of(running) and "script-src 'self'" in running.headers["Content-Security-Policy"]
    polled = client.get(f"/api/jobs/{job.id}?failures_limit=1", headers=BEARER)  # what job.js reads
    assert polled.status_code == 200 and polled.get_json()["status"] == "running"
    store.finish(job.id, "done")
    ended = html_of(client.get(f"/admin/jobs/{job.id}", headers=BEARER))
    assert "data-job-poll" not in ended and "job.js" not in ended and 'http-equiv="refresh"' not in ended
    store.redis.close()
