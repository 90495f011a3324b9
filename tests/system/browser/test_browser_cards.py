"""Result cards people trust, in Chromium: full coverage one click away, the story page on a phone, the skip link."""

from __future__ import annotations

import datetime as dt
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


def _article(title: str, paragraphs: list[str], lang: str = "en") -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>{title}</title></head>'
            f"<body><main><article><h1>{title}</h1>{body}</article></main></body></html>")  # fmt: skip


@pytest.fixture
def sources_live(es, settings, redis_url):
    """Three pages of the Northern Ledger (its name in every title), one three hours old; a German page."""
    from newsfold.plugin.sign.signed_page import Page
    from tests.pages import story
    from tests.system.browser.live import ingest_one_by_one

    recent = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=3, minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    pages = [
        Page(html=_article(f"{name} - Northern Ledger", story(seed)), id=f"nl{seed}", site="northernledger.test",
             url=f"https://northernledger.test/{seed}", lang="en", published=published)
        for seed, name, published in ((511, "Quarry ferry returns", recent),
                                      (512, "Library hours cut", "2024-05-01"), (513, "Bridge opens", "2024-05-02"))
    ]  # fmt: skip
    german = [f"Quarry Fähre {p}" for p in story(514)]
    pages.append(Page(html=_article("Quarry Fähre fährt wieder", german, "de"), id="de1", site="zeitung.test",
                      url="https://zeitung.test/1", lang="de", published="2024-05-03T09:30:00Z"))  # fmt: skip
    ingest_one_by_one(pages, client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    server = LiveServer(live_settings(settings, redis_url), live_web(page_size=5))
    yield server
    server.close()


def test_times_show_in_the_readers_time_zone_where_scripts_run(driver, sources_live):
    """Issue 38, item 5: the exact time rides in <time datetime> (UTC); static/time.js shows it in the reader's zone."""
    driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Tokyo"})
    try:
        driver.get(sources_live.url + "/?q=quarry")
        cards = {find(c, "story-title").text: c for c in find_all(driver, "story")}
        exact = find(cards["Quarry Fähre fährt wieder"], "story-meta").find_element("css selector", "time")
        assert exact.get_attribute("datetime") == "2024-05-03T09:30:00Z"
        assert exact.get_attribute("data-localised") is not None, "time.js did not run"
        assert exact.text.startswith("3 May 2024, 18:30"), exact.text  # 09:30 UTC is 18:30 in Tokyo
        recent = find(cards["Quarry ferry returns"], "story-meta").find_element("css selector", "time")
        assert recent.text == "3 h ago" and recent.get_attribute("title").endswith("GMT+9")  # the hover, local
    finally:
        driver.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": ""})


def test_a_card_names_its_publication_its_time_and_its_language(driver, sources_live):
    """Fails before the fix: a bare domain in grey, a date without its time, "de" and no lang attribute."""
    driver.get(sources_live.url + "/?q=quarry")
    cards = {find(c, "story-title").text: c for c in find_all(driver, "story")}
    ledger, german = cards["Quarry ferry returns"], cards["Quarry Fähre fährt wieder"]
    source = find(ledger, "source")
    assert source.text == "Northern Ledger" and source.get_attribute("title") == "northernledger.test"
    colour = driver.execute_script("return getComputedStyle(arguments[0]).color", source)
    assert colour == driver.execute_script("return getComputedStyle(document.body).color")  # the text's, not grey
    when = find(ledger, "story-meta").find_element("css selector", "time")
    assert when.text == "3 h ago"
    assert when.get_attribute("title").endswith(" UTC") and ":" in when.get_attribute("title")
    assert find(german, "lang").text == "German" and find(ledger, "lang").text == "English"
    assert find(german, "story-title").get_attribute("lang") == "de"
    assert find(german, "story-snippet").get_attribute("lang") == "de"
    assert find(ledger, "story-title").get_attribute("lang") in (None, "")
    exact = find(german, "story-meta").find_element("css selector", "time")
    assert exact.text == "3 May 2024, 09:30 UTC"  # older than a day: the exact time
