"""The public pages in headless Chromium: search, paging, expanding a story's versions, the login, XSS."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys

from tests.system.browser.conftest import PAGE_SIZE
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
from tests.system.browser.live import ADMIN_PASSWORD, log_in

pytestmark = pytest.mark.browser


def _search(driver, live, query: str) -> None:
    driver.get(live.url + "/")
    box = wait_for(driver, "search-input")
    box.clear()
    box.send_keys(query)
    submit_and_wait(driver, find(driver, "search-submit"))


def _titles(driver) -> list[str]:
    return [el.text for el in find_all(driver, "story-title")]


def test_search_finds_one_result_per_story_and_pages_through_the_rest(driver, live):
    _search(driver, live, "Zephyrton")
    assert parse_qs(urlsplit(driver.current_url).query)["q"] == ["Zephyrton"]
    assert find(driver, "result-summary").text.startswith("1 story (3 pages)")
    stories = find_all(driver, "story")
    assert len(stories) == 1 and "Zephyrton" in _titles(driver)[0]
    assert find(stories[0], "versions-toggle").text == "2 other versions"

    # a word every story has: six stories, three a page
    _search(driver, live, "council")
    assert find(driver, "result-summary").text.startswith("6 stories (9 pages)")
    first = _titles(driver)
    assert len(first) == PAGE_SIZE
    assert find(driver, "page-current").text.endswith("1")
    submit_and_wait(driver, find(driver, "page-next"))
    assert parse_qs(urlsplit(driver.current_url).query)["page"] == ["2"]
    assert find(driver, "page-current").text.endswith("2")
    second = _titles(driver)
    assert len(second) == PAGE_SIZE and not set(first) & set(second)
    assert not find_all(driver, "page-next"), "page 2 of 2 has no next link"
    submit_and_wait(driver, find(driver, "page-prev"))
    assert _titles(driver) == first


def test_story_versions_open_from_the_keyboard(driver, live):
    _search(driver, live, "Zephyrton")
    details = find(driver, "story-versions")
    summary = find(details, "versions-toggle")
    versions = find_all(details, "version")
    assert details.get_attribute("open") is None
    assert len(versions) == 2 and not any(v.is_displayed() for v in versions)

    find(driver, "search-input").click()
    for _ in range(40):  # Tab from the search box through the filters to the story's summary
        if driver.switch_to.active_element == summary:
            break
        ActionChains(driver).send_keys(Keys.TAB).perform()
    assert driver.switch_to.active_element == summary, "Tab never reached the versions summary"
    ActionChains(driver).send_keys(Keys.ENTER).perform()

    wait_until(driver, lambda d: details.get_attribute("open") is not None, "Enter did not open the versions")
    assert all(v.is_displayed() for v in versions)
    sites = sorted(v.find_element("css selector", ".site").text for v in versions)
    assert len(sites) == 2 and set(sites) <= {"one.test", "two.test", "three.test"}
    assert all("similar" in v.text for v in versions)
    ActionChains(driver).send_keys(Keys.ENTER).perform()
    wait_until(driver, lambda d: details.get_attribute("open") is None, "Enter did not close the versions again")


def test_login_refuses_a_wrong_password_then_accepts_the_right_one(driver, live):
    driver.get(live.url + "/admin/clusters")
    wait_for(driver, "login-form")
    assert urlsplit(driver.current_url).path == "/login", "the admin must send a visitor to the login"

    log_in(driver, live.url, "not the password", next_path="/admin/clusters")
    error = wait_for(driver, "login-error")
    assert "password" in error.text.lower()
    assert urlsplit(driver.current_url).path == "/login"
    assert not find_all(driver, "current-user")
    assert find(driver, "login-username").get_attribute("value") == "admin", "the user name is kept"

    find(driver, "login-password").send_keys(ADMIN_PASSWORD)
    submit_and_wait(driver, find(driver, "login-submit"))
    assert urlsplit(driver.current_url).path == "/admin/clusters", "the login goes back to the page asked for"
    assert find(driver, "current-user").text == "admin"
    assert len(find_all(driver, "cluster-row")) == 2  # the two clusters with copies

    submit_and_wait(driver, find(driver, "logout-button"))
    driver.get(live.url + "/admin/clusters")
    wait_for(driver, "login-form")
    assert not find_all(driver, "current-user"), "logging out ends the session"


def test_hostile_title_and_body_stay_inert_on_the_search_page(driver, live):
    _search(driver, live, "crate")  # a word only the hostile page has: it is the result shown
    assert injection_traces(driver) == INERT
    story = find(driver, "story")
    title = find(story, "story-title")
    # the markup is shown as text (escaped); the link to a javascript: URL is dropped
    assert "<script>window.__xss='title';alert('xss-title')</script>" in title.text
    assert not title.find_elements("css selector", "a")
    snippet = find(story, "story-snippet")
    assert "alert('xss-body')</script>" in snippet.text  # the fragment may start inside the payload
    assert [m.text.lower() for m in snippet.find_elements("css selector", "mark")] == ["crate"]
    # the serialised DOM holds no element the payload would have made
    assert foreign_markup(driver.page_source) == []

    # the hostile page as one of the other versions of its story
    _search(driver, live, "Quillbrook")
    find(driver, "versions-toggle").click()
    versions = " ".join(v.text for v in find_all(driver, "version"))
    titles = " ".join(_titles(driver))
    assert "<script>window.__xss='title'" in versions + titles
    assert injection_traces(driver) == INERT
