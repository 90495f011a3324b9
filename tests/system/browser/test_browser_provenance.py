"""The "site's own stories" filter and a story whose origin is a news agency, in Chromium."""

from __future__ import annotations

import datetime as dt
from random import Random
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium.webdriver.support.ui import Select

from newsfold.plugin import ingest
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from tests.plugin.fold.test_provenance import provenance_pages
from tests.system.browser.helpers import find, find_all, png_colours, submit_and_wait, wait_for, wait_until
from tests.system.browser.live import LiveServer, live_settings, live_web

pytestmark = pytest.mark.browser


@pytest.fixture
def provenance_live(es, settings, redis_url):
    """a.test originates four stories and runs one AFP story; b.test originates two and copies one of a.test's."""
    pages = provenance_pages(settings)
    clusters = {o.page_id: o.cluster_id for o in ingest(pages, client=es, settings=settings)}
    es.indices.refresh(index=settings.index)
    server = LiveServer(live_settings(settings, redis_url), live_web(page_size=3))
    yield server, clusters
    server.close()


def _top_ids(driver) -> list[str]:
    return [el.get_attribute("data-cluster-id") for el in find_all(driver, "top-story")]


def test_the_originals_filter_keeps_a_sites_own_stories_over_two_pages(driver, provenance_live):
    live, clusters = provenance_live
    driver.get(live.url + "/?window=all")
    wait_for(driver, "top-stories")
    Select(find(driver, "filter-site")).select_by_value("a.test")
    find(driver, "filter-originals").click()
    submit_and_wait(driver, find(driver, "filter-apply"))
    query = parse_qs(urlsplit(driver.current_url).query)
    assert (query["site"], query["originals"]) == (["a.test"], ["1"])
    assert find(driver, "filter-originals").is_selected()
    seen = _top_ids(driver)
    assert len(seen) == 3 and "filtered" in find(driver, "result-summary").text
    # the story's headline without the site's suffix, its lede and its thumbnail
    first = find_all(driver, "top-story")[0]
    assert find(first, "story-link").text.endswith(" headline") and " - a.test" not in find(first, "story-link").text
    assert len(find(first, "story-snippet").text) > 40
    thumb = find(first, "thumbnail")
    assert thumb.get_attribute("loading") == "lazy" and thumb.get_attribute("referrerpolicy") == "no-referrer"
    submit_and_wait(driver, find(driver, "page-next"))
    seen += _top_ids(driver)
    assert sorted(seen) == sorted(clusters[f"a-own{n}"] for n in range(4))  # every one once, no wire story
    assert parse_qs(urlsplit(driver.current_url).query)["originals"] == ["1"]  # paging keeps the filter


def test_a_story_whose_origin_is_a_news_agency(driver, provenance_live):
    live, clusters = provenance_live
    driver.get(f"{live.url}/stories/{clusters['a-wire']}")
    origin = wait_for(driver, "origin")
    assert find(origin, "wire-badge").text == "AFP"
    assert find(origin, "origin-evidence").text.startswith("(credited by 1 of 2 sites")
    rows = {row.get_attribute("data-page-id"): row for row in find_all(driver, "story-version")}
    assert find(rows["a-wire"], "wire-badge").text == "AFP" and find(rows["a-wire"], "origin-badge")
    assert not find_all(rows["b-wire"], "wire-badge")
    assert find(rows["a-wire"], "first-badge")  # a.test ran it first, crediting AFP: nothing earlier says otherwise
    # the "no wire stories" filter leaves it out of top stories
    driver.get(live.url + "/?window=all&nowire=1")
    wait_for(driver, "top-stories")
    ids = _top_ids(driver)
    submit_and_wait(driver, find(driver, "page-next"))
    ids += _top_ids(driver)
    assert clusters["a-wire"] not in ids and len(ids) == 6


def _settled(driver, img) -> None:
    wait_until(driver, lambda d: d.execute_script("return arguments[0].complete", img), "the picture never settled")


def test_a_picture_that_fails_to_load_leaves_no_broken_box(driver, provenance_live):
    live, _ = provenance_live
    driver.get(live.url + "/?window=all&site=a.test&originals=1")
    thumb = find(find_all(driver, "top-story")[0], "thumbnail")
    _settled(driver, thumb)
    assert driver.execute_script("return arguments[0].naturalWidth", thumb) == 0  # news.example: it cannot load
    # the page's white, but for the faint anti-aliasing of the rounded corners: no icon, no grey box
    darkest = min(min(colour) for colour in png_colours(thumb.screenshot_as_png))
    assert darkest >= 230, f"a broken picture shows a box or an icon (a pixel of {darkest}/255)"


def test_the_demos_pictures_load_from_the_demo(driver, es, settings, redis_url, tmp_path):
    from newsfold.samples.english import Names, english_story
    from newsfold.samples.generator import picture_svg
    from newsfold.samples.vocab import TOPICS
    from tests.pages import page, story

    sample = english_story(1, TOPICS[0], 0, Names(Random(1)), {}, Random(1), dt.date(2025, 1, 6))
    (tmp_path / "story-001.svg").write_bytes(picture_svg(sample))
    html = page("Zorvale harbour", story(311)).replace(
        "<head>", '<head><meta property="og:image" content="/media/story-001.svg">'
    )
    pages = [Page(html=html, id="p1", site="coastlinetimes.example", url="https://www.coastlinetimes.example/zorvale")]
    ingest([sign_page(p, settings) for p in pages], client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    server = LiveServer(live_settings(settings, redis_url), live_web(page_size=3, demo_media=str(tmp_path)))
    try:
        driver.get(server.url + "/?q=zorvale")
        thumb = wait_for(driver, "thumbnail")
        _settled(driver, thumb)
        assert driver.execute_script("return arguments[0].naturalWidth", thumb) > 0, "the demo's picture did not load"
        assert min(min(colour) for colour in png_colours(thumb.screenshot_as_png)) < 200  # a picture, not a blank
    finally:
        server.close()
