"""Result cards people trust, in Chromium: full coverage one click away, the story page on a phone, the skip link."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from selenium.webdriver.common.keys import Keys

from tests.story_corpus import ingest_story_corpus
from tests.system.browser.helpers import find, find_all, submit_and_wait, wait_for
from tests.system.browser.live import PHONE, LiveServer, live_settings, live_web, resize_viewport

pytestmark = pytest.mark.browser


@pytest.fixture
def stories_live(es, settings, redis_url):
    """The app over the stories corpus (an archive of March 2015): three stories a page."""
    clusters = ingest_story_corpus(es, settings)
    server = LiveServer(live_settings(settings, redis_url), live_web(page_size=3))
    yield server, clusters
    server.close()


def test_every_result_with_other_versions_links_to_its_story_page(driver, live, corpus):
    """Fails before the fix: search results never linked to /stories/<id>."""
    driver.get(live.url + "/?q=zephyrton")
    story = wait_for(driver, "story")
    coverage = find(story, "story-coverage")
    assert coverage.text == "Full coverage: 3 versions"
    submit_and_wait(driver, coverage)
    assert urlsplit(driver.current_url).path == f"/stories/{corpus['a1']}"
    assert len(find_all(driver, "story-version")) == 3
    driver.get(live.url + "/?q=marrowby")  # a story of one page has no other versions to cover
    assert not find_all(wait_for(driver, "story"), "story-coverage")


def test_the_story_page_fits_a_phone(driver, stories_live):
    """Fails before the fix: the versions table forced a 570 px layout, so the page scrolled sideways."""
    live, clusters = stories_live
    resize_viewport(driver, PHONE)
    driver.get(f"{live.url}/stories/{clusters['ferry-a']}")
    wait_for(driver, "story-versions")
    # with mobile emulation innerWidth grows to the content (the page is zoomed out to fit): compare with the
    # layout viewport, which is the phone's 390 px
    width, inner, view = driver.execute_script(
        "const root = document.documentElement; return [root.scrollWidth, window.innerWidth, root.clientWidth]"
    )
    assert view == PHONE[0]
    assert width <= view and inner <= view, f"the page is {width} px wide in a {view} px viewport"
    rows = find_all(driver, "story-version")
    assert len(rows) == 4
    for row in rows:  # the comparison is on screen, not cut off
        badge = find(row, "relation")
        right = driver.execute_script("return arguments[0].getBoundingClientRect().right", badge)
        assert badge.is_displayed() and right <= view


def test_the_skip_link_lands_on_the_results(driver, live):
    """Fails before the fix: the skip link led to the search form, many tab stops before the first result."""
    driver.get(live.url + "/?q=zephyrton")
    wait_for(driver, "story")
    body = driver.find_element("css selector", "body")
    body.send_keys(Keys.TAB)
    skip = driver.switch_to.active_element
    assert skip.get_attribute("data-testid") == "skip-link"
    skip.send_keys(Keys.ENTER)
    assert driver.switch_to.active_element.get_attribute("data-testid") == "results"
    driver.switch_to.active_element.send_keys(Keys.TAB)
    first = driver.switch_to.active_element
    card = find_all(driver, "story")[0]
    assert first.tag_name == "a"  # one tab from the results: a link of the first card
    assert driver.execute_script("return arguments[0].contains(arguments[1])", card, first)
