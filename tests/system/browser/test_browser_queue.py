"""Issue 38, items 2 and 6 in headless Chromium, at 1366x900 and 390x844: the editor's queue reaches the weakest
pair in two clicks from the admin home, and a running job's page updates in place, keeping focus."""

from __future__ import annotations

import pytest
import redis

from newsfold.state.jobs import JobStore
from tests.system.browser.helpers import find, find_all, wait_for, wait_until
from tests.system.browser.live import log_in, resize_viewport

pytestmark = pytest.mark.browser

SIZES = [(1366, 900), (390, 844)]


@pytest.mark.parametrize("size", SIZES, ids=["desktop", "phone"])
def test_the_weakest_pair_is_two_clicks_from_the_admin_home(driver, live, corpus, size):
    resize_viewport(driver, size)
    log_in(driver, live.url, next_path="/admin/")
    find(driver, "review-queue-link").click()  # click 1
    wait_for(driver, "cluster-table")
    weakest = [c.get_attribute("data-similarity") for c in find_all(driver, "weakest")]
    shown = [float(s) for s in weakest if s]
    assert shown and shown == sorted(shown), weakest
    rows = find_all(driver, "cluster-row")
    # the two stories with copies, each an edited pair: the hostile one's (a prepended paragraph) is the weakest
    assert [r.get_attribute("data-cluster-id") for r in rows] == [corpus["x1"], corpus["a1"]]
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    link = find(rows[0], "weakest-compare")
    assert link.is_displayed()
    link.click()  # click 2
    scores = wait_for(driver, "compare-scores")
    assert scores.is_displayed() and "/compare?a=" in driver.current_url and "&b=" in driver.current_url


@pytest.mark.parametrize("size", SIZES, ids=["desktop", "phone"])
def test_a_running_jobs_page_updates_in_place_and_keeps_focus(driver, live, redis_url, size):
    resize_viewport(driver, size)
    store = JobStore(redis.Redis.from_url(redis_url))
    job = store.create("ingest", params={"sources": ["crawl/"]}, total=4)
    store.start(job.id)
    try:
        log_in(driver, live.url, next_path=f"/admin/jobs/{job.id}")
        summary = wait_for(driver, "job-live-summary")
        assert summary.get_attribute("aria-live") == "polite" and "0 of 4 items" in summary.text
        refresh = find(driver, "job-refresh-link")
        driver.execute_script("arguments[0].focus(); window.scrollTo(0, 120); window.notReloaded = true;", refresh)
        scrolled = driver.execute_script("return window.scrollY")
        store.record(job.id, "batch-1", [{"page_id": "p1", "status": "new"}, {"page_id": "p2", "status": "duplicate"}])
        wait_until(driver, lambda d: "2 of 4 items (50%)" in find(d, "job-live-summary").text, "no update in place")
        assert driver.execute_script("return window.notReloaded === true"), "the page was reloaded"
        assert driver.switch_to.active_element == refresh, "focus moved"
        assert driver.execute_script("return window.scrollY") == scrolled
        assert find(driver, "job-counts").text.split().count("1") >= 2  # new 1, duplicate 1
        assert find(driver, "job-status").text == "running"
        store.finish(job.id, "done")
        wait_until(driver, lambda d: find(d, "job-status").text == "done", "the end of the job was not shown")
        assert driver.execute_script("return window.notReloaded === true")
        assert "Reload the page" in find(driver, "job-refresh").text
    finally:
        store.redis.close()
