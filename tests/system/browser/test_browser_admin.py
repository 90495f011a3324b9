"""The admin in headless Chromium: inspect a cluster, split a page out, merge two clusters, hostile pages stay inert."""

from __future__ import annotations

from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from selenium.webdriver.common.by import By

from tests.system.browser.helpers import (
    INERT,
    find,
    find_all,
    foreign_markup,
    injection_traces,
    submit_and_wait,
    wait_for,
    wait_until,
)
from tests.system.browser.live import log_in

pytestmark = pytest.mark.browser


def _open_cluster(driver, live, cluster_id: str) -> None:
    driver.get(f"{live.url}/admin/clusters/{cluster_id}")
    wait_for(driver, "member-table")


def _member_ids(driver) -> list[str]:
    return [row.get_attribute("data-page-id") for row in find_all(driver, "member-row")]


def _stories_for(driver, live, query: str) -> list:
    driver.get(f"{live.url}/?{urlencode({'q': query})}")
    wait_for(driver, "result-summary")
    return find_all(driver, "story")


def test_inspect_a_cluster_from_the_list_members_heat_map_and_compare(driver, live, corpus):
    log_in(driver, live.url, next_path="/admin/clusters")
    rows = {
        row.get_attribute("data-cluster-id"): row
        for row in wait_for(driver, "cluster-table").find_elements(By.CSS_SELECTOR, '[data-testid="cluster-row"]')
    }
    assert set(rows) == {corpus["a1"], corpus["x1"]}
    rows[corpus["a1"]].find_element(By.CSS_SELECTOR, ".title-cell a").click()
    wait_for(driver, "member-table")

    assert urlsplit(driver.current_url).path == f"/admin/clusters/{corpus['a1']}"
    assert find(driver, "cluster-id").text == corpus["a1"]
    assert find(driver, "cluster-summary").text.startswith("3 pages on 3 sites")
    assert sorted(_member_ids(driver)) == ["a1", "a2", "a3"]
    assert len(find_all(driver, "representative-badge")) == 1
    heatmap = find(driver, "heatmap")
    cells = heatmap.find_elements(By.CSS_SELECTOR, "svg rect.nf-cell")
    assert len(cells) == 9 and all(c.is_displayed() for c in cells)
    assert len(find_all(driver, "pair-row")) == 3
    assert len(find_all(driver, "split-form")) == 3 and find(driver, "merge-form").is_displayed()

    # a heat-map cell opens the two pages side by side
    links = heatmap.find_elements(By.CSS_SELECTOR, "a.nf-cell-link")
    assert len(links) == 6  # every off-diagonal cell
    driver.execute_script("arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}))", links[0])
    wait_for(driver, "side-by-side")
    query = parse_qs(urlsplit(driver.current_url).query)
    assert {query["a"][0], query["b"][0]} < {"a1", "a2", "a3"}
    assert find(driver, "side-a").is_displayed() and find(driver, "side-b").is_displayed()
    assert float(find(driver, "compare-jaccard").text.rstrip("%")) > 0


def test_a_why_link_opens_the_evidence_it_points_to(driver, live, corpus):
    """Issue 31: fails before the fix: the link scrolled to a closed <details> and left it closed."""
    log_in(driver, live.url)
    _open_cluster(driver, live, corpus["a1"])
    row = driver.find_element(By.CSS_SELECTOR, '[data-testid="member-row"][data-page-id="a2"]')
    link = row.find_element(By.LINK_TEXT, "why")
    target = link.get_attribute("href").rsplit("#", 1)[1]
    box = driver.find_element(By.XPATH, f'//*[@id="{target}"]/ancestor-or-self::details')
    assert box.get_attribute("open") is None and box.get_attribute("data-page-id") == "a2"
    link.click()
    wait_until(driver, lambda d: box.get_attribute("open") is not None, "the box opens")
    assert box.find_element(By.TAG_NAME, "p").is_displayed()
    driver.get(f"{live.url}/admin/clusters/{corpus['a1']}#{target}")  # opened by the address too
    wait_until(driver, lambda d: d.find_element(By.XPATH, f'//*[@id="{target}"]/ancestor::details')
               .get_attribute("open") is not None, "opens on load")  # fmt: skip
    assert injection_traces(driver) == INERT  # no script at all: the CSP stays as it was


def test_split_a_page_out_and_the_cluster_shrinks(driver, live, corpus):
    log_in(driver, live.url)
    _open_cluster(driver, live, corpus["a1"])
    row = driver.find_element(By.CSS_SELECTOR, '[data-testid="member-row"][data-page-id="a3"]')
    submit_and_wait(driver, find(row, "split-form").find_element(By.CSS_SELECTOR, "button"))

    assert find(driver, "flash-success").is_displayed()
    _open_cluster(driver, live, corpus["a1"])
    assert sorted(_member_ids(driver)) == ["a1", "a2"]
    assert find(driver, "cluster-summary").text.startswith("2 pages on 2 sites")
    # in search the split page is now a story of its own
    stories = _stories_for(driver, live, "Zephyrton")
    assert len(stories) == 2
    assert find(driver, "result-summary").text.startswith("2 stories (3 pages)")


def test_merge_two_clusters_and_search_shows_them_as_one_story(driver, live, corpus):
    """Issue 31: the other story is found by title, previewed, confirmed (not similar), merged, then undone.

    Fails before the fix: the merge form took a typed id and merged at once (no candidates, preview or
    confirmation), and the log had no undo.
    """
    assert len(_stories_for(driver, live, "Zephyrton | Marrowby")) == 2
    log_in(driver, live.url)
    _open_cluster(driver, live, corpus["a1"])
    form = find(driver, "merge-form")
    search = form.find_element(By.ID, "merge-q")
    search.clear()
    search.send_keys("Marrowby library")
    submit_and_wait(driver, find(form, "merge-submit"))
    (candidate,) = find_all(driver, "merge-candidate")
    assert candidate.get_attribute("data-cluster-id") == corpus["l1"] and "Marrowby library" in candidate.text
    candidate.find_element(By.TAG_NAME, "a").click()
    wait_for(driver, "merge-verdict")
    assert find(driver, "merge-verdict").text.startswith("Not similar")
    moving = [row.get_attribute("data-page-id") for row in find_all(driver, "moving-row")]
    assert moving == (["l1"] if corpus["l1"] > corpus["a1"] else ["a1", "a2", "a3"])
    assert sorted(_member_ids_of(driver, live, corpus["a1"])) == ["a1", "a2", "a3"], "nothing changed yet"
    confirm = wait_for(driver, "merge-confirm")
    assert confirm.get_attribute("required") is not None  # the browser will not send it unticked
    confirm.click()
    find(driver, "merge-confirm-form").find_element(By.ID, "merge-note").send_keys("same council story")
    submit_and_wait(driver, find(driver, "merge-apply"))

    assert "merged" in find(driver, "flash-success").text
    assert sorted(_member_ids(driver)) == ["a1", "a2", "a3", "l1"]
    survivor = find(driver, "cluster-id").text
    assert survivor in (corpus["a1"], corpus["l1"])
    stories = _stories_for(driver, live, "Zephyrton | Marrowby")
    assert len(stories) == 1, "the merged clusters are one story in search"
    assert stories[0].get_attribute("data-cluster-id") == survivor
    assert find(stories[0], "versions-toggle").text == "3 other versions"

    driver.get(f"{live.url}/admin/corrections")
    row = wait_for(driver, "correction-row", '[data-kind="merge"]')
    submit_and_wait(driver, find(row, "undo-submit"))
    assert "(merge) is undone" in find(driver, "flash-success").text
    assert len(_stories_for(driver, live, "Zephyrton | Marrowby")) == 2, "the undo separated them again"


def _member_ids_of(driver, live, cluster_id: str) -> list[str]:
    here = driver.current_url
    _open_cluster(driver, live, cluster_id)
    ids = _member_ids(driver)
    driver.get(here)
    return ids


def test_hostile_page_stays_inert_on_cluster_detail_and_compare(driver, live, corpus):
    log_in(driver, live.url)
    _open_cluster(driver, live, corpus["x1"])
    assert injection_traces(driver) == INERT
    row = driver.find_element(By.CSS_SELECTOR, '[data-testid="member-row"][data-page-id="x1"]')
    assert "<script>window.__xss='title';alert('xss-title')</script>" in row.text
    assert not row.find_elements(By.CSS_SELECTOR, ".title-cell a"), "a javascript: URL is never a link"
    # the heat map tooltips carry the titles too: text inside the SVG, never markup
    tips = " ".join(t.get_attribute("textContent") for t in find(driver, "heatmap").find_elements(By.TAG_NAME, "title"))
    assert "<script>window.__xss='title'" in tips
    assert foreign_markup(driver.page_source) == []

    driver.get(f"{live.url}/admin/clusters/{corpus['x1']}/compare?a=x1&b=x2")
    wait_for(driver, "side-by-side")
    assert injection_traces(driver) == INERT
    left = find(driver, "side-a")
    assert "<script>window.__xss='title'" in left.find_element(By.TAG_NAME, "h2").text
    deleted = " ".join(d.text for d in left.find_elements(By.TAG_NAME, "del"))
    assert "onerror=" in deleted and "alert('xss-body')</script>" in deleted, "the payload is a marked difference"
    assert foreign_markup(driver.page_source) == []
