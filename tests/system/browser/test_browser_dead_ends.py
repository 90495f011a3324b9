"""A search that finds nothing, a pasted paragraph and a filter missing its site, in headless Chromium (issue 31)."""

from __future__ import annotations

import pytest
from selenium.webdriver.support.ui import Select

from tests.pages import story
from tests.system.browser.helpers import find, find_all, submit_and_wait, wait_for

pytestmark = pytest.mark.browser


def _search(driver, live, query: str) -> None:
    driver.get(live.url + "/")
    box = wait_for(driver, "search-input")
    box.clear()
    box.send_keys(query)
    submit_and_wait(driver, find(driver, "search-submit"))


def test_a_misspelt_search_offers_the_right_spelling_and_a_way_back(driver, live):
    _search(driver, live, "Zephyrtn")
    assert find(driver, "no-results").is_displayed()
    (suggestion,) = find_all(driver, "suggestion")
    assert suggestion.is_displayed() and suggestion.text == "zephyrton"
    assert find(driver, "top-stories-link").is_displayed()
    submit_and_wait(driver, suggestion)
    assert find(driver, "result-summary").text.startswith("1 story (3 pages)")

    driver.get(live.url + "/?q=Zephyrton&site=nine.test")
    (drop,) = find_all(driver, "drop-filter")
    assert drop.text == "Any site instead of nine.test"
    submit_and_wait(driver, drop)
    assert find(driver, "result-summary").text.startswith("1 story (3 pages)")


def test_a_pasted_paragraph_finds_its_story(driver, live):
    paragraph = " ".join(" ".join(story(301, 20)[1:4]).split()[:60])  # 60 words of the Zephyrton story's text
    _search(driver, live, paragraph)
    assert "containing this passage" in find(driver, "result-summary").text
    assert "Zephyrton" in find_all(driver, "story-title")[0].text
    assert not find_all(driver, "search-error")


def test_sites_own_stories_without_a_site_leaves_the_site_menu_full(driver, live):
    """Without a site, "Site's own stories" keeps the stories some site (no wire) originated (issue 39, item 5:
    it was an error the API's schema did not state), and every site stays in the menu."""
    driver.get(live.url + "/")
    find(driver, "filter-originals").click()
    submit_and_wait(driver, find(driver, "filter-apply"))
    assert not find_all(driver, "search-error")
    sites = [o.get_attribute("value") for o in Select(find(driver, "filter-site")).options]
    assert {"one.test", "nine.test"} <= set(sites)
    Select(find(driver, "filter-site")).select_by_value("one.test")  # one choice narrows it to that site's own
    submit_and_wait(driver, find(driver, "filter-apply"))
    assert not find_all(driver, "search-error")
