"""The admin statistics and jobs pages, and how the admin answers when a server is down."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import redis

from newsfold.plugin.fold.rejections import record_rejections
from newsfold.state.jobs import JobStore
from newsfold.task_names import REINDEX, RETRY_FAILURES
from tests.web.admin.helpers import (
    BEARER,
    html_of,
    queued_tasks,
)


def test_stats_page_charts_with_data(client, corpus, es, settings):
    record_rejections(
        [
            {"page_id": "r1", "status": "rejected", "reason": "too_short", "url": "https://x.test/1"},
            {"page_id": "r2", "status": "rejected", "reason": "too_short"},
            {"page_id": "r3", "status": "rejected", "reason": "not_html"},
        ],
        client=es,
        settings=settings,
    )
    es.indices.refresh(index=f"{settings.index}-rejected")
    res = client.get("/admin/stats")
    html = html_of(res)
    assert res.status_code == 200
    assert re.search(r'data-testid="stats-pages">6<', html)
    assert re.search(r'data-testid="stats-duplicates">3<', html)  # a2, a3, b2 matched an earlier copy
    assert re.search(r'data-testid="stats-duplicate-share">50%<', html)
    assert re.search(r'data-testid="stats-rejected">3<', html)
    svgs = {m.group(1): m.group(0) for m in re.finditer(r'<svg [^>]*id="([^"]+)".*?</svg>', html, re.S)}
    assert {"chart-sites", "chart-sizes", "chart-similarity", "chart-rate", "chart-reasons"} <= set(svgs)
    for svg in svgs.values():
        ET.fromstring(svg)
    assert "two.test (1): 100%" in svgs["chart-sites"] and "one.test (1): 0%" in svgs["chart-sites"]
    assert "3 pages: 1" in svgs["chart-sizes"] and "2 pages: 1" in svgs["chart-sizes"]
    assert "too_short: 2" in svgs["chart-reasons"] and "not_html: 1" in svgs["chart-reasons"]
    accepted = re.findall(r"<title>accepted, [^:]+: (\d+)</title>", svgs["chart-similarity"])
    assert sum(map(int, accepted)) == 3
    assert "polyline" in svgs["chart-rate"]
    assert re.search(r'data-testid="stats-singles">1<', html)


def test_stats_page_without_rejections_index_or_pages(make_app, admin_settings, es):
    html = html_of(make_app(admin_settings).test_client().get("/admin/stats", headers=BEARER))
    assert "No page has been rejected" in html and "Nothing ingested yet." in html
    assert re.search(r'data-testid="stats-pages">0<', html)


def test_jobs_pages_progress_failures_and_retry(make_app, admin_settings, jobs_redis_url, es):
    store = JobStore(redis.Redis.from_url(jobs_redis_url))
    job = store.create("ingest", params={"sources": ["crawl/"]}, total=4)
    store.start(job.id)
    outcomes = [
        {"page_id": "p1", "status": "new"},
        {"page_id": "p2", "status": "duplicate"},
        {"page_id": "p3", "status": "rejected", "reason": "index_failed", "detail": "es <down>"},
        {"page_id": "p4", "status": "rejected", "reason": "too_short"},
    ]
    store.record(job.id, "batch-1", outcomes, payloads={"p3": {"html": "<p>x</p>", "id": "p3"}})
    client = make_app(admin_settings.replace(redis_url=jobs_redis_url)).test_client()

    listing = html_of(client.get("/admin/jobs", headers=BEARER))
    assert f'data-job-id="{job.id}" data-status="running"' in listing
    assert '<progress max="4" value="4"' in listing
    page = client.get(f"/admin/jobs/{job.id}", headers=BEARER)
    html = html_of(page)
    assert page.status_code == 200
    assert 'data-testid="job-status">running<' in html and "4 of 4 items (100%)" in html
    assert html.count('data-testid="failure-row"') == 2 and "es &lt;down&gt;" in html
    assert '<td data-label="Reason">too_short</td>' in html and 'data-testid="retry-form"' not in html  # still running
    assert client.get("/admin/jobs/no-such-job", headers=BEARER).status_code == 404

    store.finish(job.id, "done")
    html = html_of(client.get(f"/admin/jobs/{job.id}", headers=BEARER))
    assert 'data-testid="retry-form"' in html
    res = client.post(f"/admin/jobs/{job.id}/retry", headers=BEARER)
    assert res.status_code == 303
    assert "Retrying the failed items" in html_of(client.get(res.headers["Location"], headers=BEARER))
    assert {"task": RETRY_FAILURES, "args": [], "kwargs": {"job_id": job.id}} in queued_tasks(jobs_redis_url)
    store.redis.close()


def test_reindex_form_creates_a_job_and_queues_the_task_once(make_app, admin_settings, jobs_redis_url, es):
    client = make_app(admin_settings.replace(redis_url=jobs_redis_url)).test_client()
    store = JobStore(redis.Redis.from_url(jobs_redis_url))
    for stale in [j for j in [store.active("reindex")] if j is not None]:
        store.finish(stale.id, "cancelled")  # a reindex left over from an earlier run of this test
    res = client.post("/admin/jobs/reindex", data={"source": "elsewhere"}, headers=BEARER)
    assert "choose what to reindex from" in html_of(client.get(res.headers["Location"], headers=BEARER))
    store.redis.set("newsfold:reindex-start", "someone", ex=10)  # another editor is starting one this moment
    res = client.post("/admin/jobs/reindex", data={"source": "text"}, headers=BEARER)
    assert "being started right now" in html_of(client.get(res.headers["Location"], headers=BEARER))
    assert store.active("reindex") is None
    store.redis.delete("newsfold:reindex-start")
    res = client.post("/admin/jobs/reindex", data={"source": "text"}, headers=BEARER)
    assert res.status_code == 303
    job = store.active("reindex")
    assert job is not None and job.params == {"source": "text", "user": "token:robot", "index": admin_settings.index}
    assert res.headers["Location"].endswith(f"/admin/jobs/{job.id}")
    assert {"task": REINDEX, "args": [], "kwargs": {"job_id": job.id}} in queued_tasks(jobs_redis_url)
    again = client.post("/admin/jobs/reindex", data={"source": "archive"}, headers=BEARER)
    assert f"A reindex is already queued: job {job.id}" in html_of(
        client.get(again.headers["Location"], headers=BEARER)
    )
    assert len([t for t in queued_tasks(jobs_redis_url) if t["task"] == REINDEX]) == 1
    listing = html_of(client.get("/admin/jobs", headers=BEARER))
    assert 'data-testid="reindex-running"' in listing and 'data-testid="reindex-submit" disabled' in listing
    store.finish(job.id, "cancelled")
    store.redis.close()


def test_admin_answers_503_when_elasticsearch_is_down(make_app, admin_settings):
    client = make_app(admin_settings.replace(elasticsearch_url="http://127.0.0.1:9")).test_client()
    for path in ("/admin/clusters", "/admin/clusters/x", "/admin/stats", "/admin/corrections"):
        res = client.get(path, headers=BEARER)
        assert res.status_code == 503 and "cannot reach Elasticsearch" in html_of(res), path
    res = client.post("/api/clusters/x/split", json={"page_id": "p"}, headers=BEARER)
    assert res.status_code == 503 and "cannot reach Elasticsearch" in res.get_json()["error"]


def test_jobs_page_answers_503_when_redis_is_down(make_app, admin_settings):
    client = make_app(admin_settings.replace(redis_url="redis://127.0.0.1:9/0")).test_client()
    res = client.get("/admin/jobs", headers=BEARER)
    assert res.status_code == 503 and "Redis" in html_of(res)


def test_stats_page_shows_syndication_per_site(client, corpus):
    res = client.get("/admin/stats?window=all")
    html = html_of(res)
    assert res.status_code == 200
    svgs = {m.group(1): m.group(0) for m in re.finditer(r'<svg [^>]*id="([^"]+)".*?</svg>', html, re.S)}
    assert {"chart-syndication", "chart-own-stories", "chart-wires"} <= set(svgs)
    ET.fromstring(svgs["chart-own-stories"])  # well-formed
    table = re.search(r'data-testid="table-syndication".*?</table>', html, re.S).group(0)
    rows = {m.group(1): m.group(0) for m in re.finditer(r"<tr><td>([^<]+)</td>.*?</tr>", table, re.S)}
    # one.test ran story A first (its own); two.test and three.test copied it
    assert re.findall(r'class="num">([^<]+)<', rows["one.test"]) == ["1", "0", "0%", "1", "0"]
    assert re.findall(r'class="num">([^<]+)<', rows["two.test"]) == ["1", "1", "100%", "0", "1"]
    assert "one.test: 1 own stories" in svgs["chart-own-stories"]
    assert client.get("/admin/stats?window=nope").status_code == 400


def test_admin_pages_show_headlines_without_the_site_name(client, corpus):
    html = html_of(client.get(f"/admin/clusters/{corpus['a']}"))
    assert "Zephyrton budget approved" in html and "approved | three.test" not in html
    listing = html_of(client.get("/admin/clusters"))
    assert "| three.test" not in listing
