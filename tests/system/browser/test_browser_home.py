"""The home page on the demo corpus, in Chromium: top stories fill a screen, sections are tabs, and on a phone the
filters fold behind one button so the first headline starts high (issue 38 item 3)."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from newsfold.plugin import ingest
from newsfold.plugin.extract.result import Rejection
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.samples import generate
from tests.system.browser.helpers import find, find_all, submit_and_wait, wait_for
from tests.system.browser.live import PHONE, LiveServer, live_settings, live_web, resize_viewport

pytestmark = pytest.mark.browser

#: the review's desktop
LAPTOP = (1366, 900)
#: the first headline must start above this on a phone (CSS pixels from the top of the page)
PHONE_HEADLINE_TOP = 300


@pytest.fixture
def demo_live(es, settings, redis_url, tmp_path):
    """The demo's sample corpus (40 stories, the demo's seed) ingested in batches, served with the default page size."""
    rows = [json.loads(line) for line in generate(tmp_path, seed=7, stories=40).read_text("utf-8").splitlines()]
    for start in range(0, len(rows), 20):
        signed = []
        for row in rows[start : start + 20]:
            page = Page(html=(Path(tmp_path) / row["html"]).read_bytes(), url=row.get("url"), id=row["id"],
                        site=row.get("site"), lang=row.get("lang"), published=row.get("published"))  # fmt: skip
            result = sign_page(page, settings)
            if not isinstance(result, Rejection):
                signed.append(result)
        ingest(signed, client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    server = LiveServer(live_settings(settings, redis_url), live_web())
    yield server
    server.close()


def _top(driver, element) -> float:
    return driver.execute_script("return arguments[0].getBoundingClientRect().top + window.scrollY", element)


def test_top_stories_fill_a_laptop_screen_and_sections_are_tabs(driver, demo_live):
    resize_viewport(driver, LAPTOP)
    driver.get(demo_live.url + "/")
    wait_for(driver, "top-stories")
    stories = find_all(driver, "top-story")
    assert len(stories) == 10, "a full page of top stories"  # the demo's newest week held 2 of 40 stories
    bottom = driver.execute_script("return arguments[0].getBoundingClientRect().bottom", find(driver, "top-stories"))
    assert bottom > LAPTOP[1], f"the stories end at {bottom} px: they do not fill the screen"
    coverage = [int(find(s, "coverage").text.split()[0]) for s in stories]
    assert coverage == sorted(coverage, reverse=True) and coverage[0] > 1, coverage  # by coverage
    # the filters are shown on a wide screen without a click; the fold's button is not
    assert find(driver, "filter-site").is_displayed() and not find(driver, "filters-toggle").is_displayed()
    tabs = [t for t in find_all(driver, "section-tab") if t.get_attribute("data-section")]
    assert len(tabs) >= 3, [t.text for t in tabs]
    name = tabs[0].get_attribute("data-section")
    submit_and_wait(driver, tabs[0])
    assert parse_qs(urlsplit(driver.current_url).query)["section"] == [name]
    current = find(driver, "section-tab", '[aria-current="page"]')
    assert current.get_attribute("data-section") == name and find_all(driver, "top-story")
    # the section's stories are the API's for that section, in the same order
    shown = [s.get_attribute("data-cluster-id") for s in find_all(driver, "top-story")]
    listed = json.loads(_get(demo_live.url + "/api/stories?" + urlsplit(driver.current_url).query))["results"]
    assert shown == [s["cluster_id"] for s in listed]


def test_on_a_phone_the_filters_fold_and_the_first_headline_starts_high(driver, demo_live):
    resize_viewport(driver, PHONE)
    driver.get(demo_live.url + "/")
    wait_for(driver, "top-stories")
    headline = find(find_all(driver, "top-story")[0], "story-link")
    top = _top(driver, headline)
    assert top <= PHONE_HEADLINE_TOP, f"the first headline starts at {top} px"
    no_sideways = driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    assert no_sideways, "the page scrolls sideways on a phone"
    toggle = find(driver, "filters-toggle")
    assert toggle.is_displayed() and not find(driver, "filter-site").is_displayed()
    toggle.click()
    assert find(driver, "filter-site").is_displayed() and find(driver, "filter-section").is_displayed()


def _get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=30) as res:
        return res.read().decode()
