"""Top stories, the window toggle, a story page with its timeline and a version's added passages, in Chromium."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.story_corpus import LOCAL, ingest_story_corpus
from tests.system.browser.helpers import find, find_all, submit_and_wait, wait_for
from tests.system.browser.live import LiveServer, live_settings, live_web

pytestmark = pytest.mark.browser


@pytest.fixture
def stories_live(es, settings, redis_url):
    """The app over the stories corpus (an archive of March 2015): three top stories a page."""
    clusters = ingest_story_corpus(es, settings)
    server = LiveServer(live_settings(settings, redis_url), live_web(page_size=3))
    yield server, clusters
    server.close()


def _top_ids(driver) -> list[str]:
    return [el.get_attribute("data-cluster-id") for el in find_all(driver, "top-story")]


def _follow(driver, element) -> None:
    submit_and_wait(driver, element)


def test_top_stories_and_the_window_and_order_toggles(driver, stories_live):
    live, clusters = stories_live
    driver.get(live.url + "/")
    wait_for(driver, "top-stories")
    # without a window, the narrowest that fills a page (3 stories): 24 hours back from the newest page
    assert find(driver, "result-summary").text.startswith("Top stories · Last 24 hours")
    assert _top_ids(driver) == [clusters["museum-a"], clusters["ferry-a"], clusters["single"]]
    feed = driver.find_element("css selector", 'link[rel="alternate"][type="application/atom+xml"]')
    assert feed.get_attribute("href") == live.url + "/feed"

    # 7 days back from the newest page (10 March 2015): the ferry story leads on 4 sites
    _follow(driver, find(driver, "window-7d"))
    assert parse_qs(urlsplit(driver.current_url).query)["window"] == ["7d"]
    assert find(driver, "window-7d").get_attribute("aria-current") == "true"
    assert _top_ids(driver) == [clusters["ferry-a"], clusters["museum-a"], clusters["lantern-a"]]
    assert find(find_all(driver, "top-story")[0], "coverage").text == "4 sites"

    _follow(driver, find(driver, "window-all"))
    assert clusters["old-a"] in _top_ids(driver)
    _follow(driver, find(driver, "sort-latest"))
    query = parse_qs(urlsplit(driver.current_url).query)
    assert (query["window"], query["sort"]) == (["all"], ["latest"])  # the toggle keeps the window
    assert find(driver, "result-summary").text.startswith("Latest stories · All")
    assert _top_ids(driver)[0] == clusters["museum-a"]
    _follow(driver, find(driver, "page-next"))
    assert _top_ids(driver) == [clusters["lantern-a"], clusters["old-a"]]


def test_a_story_page_with_its_timeline_and_a_versions_added_passages(driver, stories_live):
    live, clusters = stories_live
    driver.get(live.url + "/?window=all")
    _follow(driver, find(find_all(driver, "top-story")[0], "story-link"))
    assert urlsplit(driver.current_url).path == f"/stories/{clusters['ferry-a']}"
    assert "Origin: a.test" in find(driver, "origin").text  # the earliest version, no wire credit
    timeline = find(driver, "timeline").find_element("css selector", "svg#story-timeline")
    assert timeline.find_elements("css selector", "rect") and "first: a.test" in timeline.get_attribute("innerHTML")
    rows = find_all(driver, "story-version")
    assert [r.get_attribute("data-page-id") for r in rows] == ["ferry-a", "ferry-b", "ferry-c", "ferry-d"]
    labels = [find(r, "relation").text for r in rows]
    assert labels[0] == "reference" and labels[1].startswith("shorter (holds ") and labels[2] == "full copy"
    assert labels[3] == "adds 2 paragraphs"
    assert find(rows[0], "first-badge").text == "first"

    _follow(driver, find(rows[3], "relation"))
    assert urlsplit(driver.current_url).path == f"/stories/{clusters['ferry-a']}/versions/ferry-d"
    marked = [m.text for m in find_all(driver, "added-passage")]
    assert marked == LOCAL
    # the public reads what the version adds, quoted, and goes to the publisher for the article
    assert find(driver, "added-summary").text.startswith("What this version adds to the story's reference text")
    assert not find_all(driver, "version-text") and find(driver, "read-at-publisher").text.startswith("Read the whole")
    background = find(driver, "added-passage").value_of_css_property("background-color")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent")  # marked where a reader sees it
    _follow(driver, find(driver, "back-to-story"))
    assert find(driver, "story-heading").text == "ferry-d headline"  # the face: the fullest (docs/stories.md)


def test_search_results_say_what_versions_add(driver, stories_live):
    live, _ = stories_live
    driver.get(live.url + "/?q=ferry")
    story = wait_for(driver, "story")
    find(story, "versions-toggle").click()
    badges = [b.text for b in find_all(story, "version-relation")]
    # the versions under the best-ranked one carry badges; which version ranks first is the engine's say
    shown = find(story, "story-meta").find_element("css selector", ".site").text
    assert ("adds 2 paragraphs" in badges) == (shown != "d.test")
    assert any(b.startswith("shorter (holds ") for b in badges) == (shown != "b.test")
