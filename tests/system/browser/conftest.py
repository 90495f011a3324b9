"""Fixtures of the browser tests: one headless Chromium per session, a live app per test on its own index.

The corpus is ingested with ``plugin.sign.signing.sign_page`` + ``ingest`` directly
(no Celery). Without Chromium the tests are skipped with a message, except in
CI (``CI`` set), where a missing browser is an error: there they must run.
"""

from __future__ import annotations

import html
import os

import pytest

from newsfold.plugin.sign.signed_page import Page
from tests.pages import page, story
from tests.system.browser.live import (
    DESKTOP,
    LiveServer,
    browser,
    browser_missing,
    clear_cookies,
    ingest_one_by_one,
    live_settings,
    live_web,
    resize_viewport,
)

#: stories per result page in the browser tests: six stories make two pages
PAGE_SIZE = 3
#: what a successful injection would set; none of it may ever appear
XSS_TITLE = "Quillbrook <script>window.__xss='title';alert('xss-title')</script> storm"
XSS_BODY = (
    "Quillbrook harbour staff found <img src=x onerror=\"document.documentElement.dataset.xss='img';"
    "alert('xss-img')\"> and <svg onload=\"window.__xss='svg'\"></svg> on the quay, with "
    "<script>window.__xss='body';alert('xss-body')</script> painted on a crate."
)
XSS_URL = "javascript:alert(document.domain)"


@pytest.fixture(scope="session")
def chromium():
    """The session's headless Chromium (skipped, or failed in CI, when it is not installed)."""
    reason = browser_missing()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests must run in CI: {reason}", pytrace=False)
        pytest.skip(reason)
    with pytest.MonkeyPatch.context() as mp:
        # a path that does not exist: should anything call Selenium Manager (a driver download), it fails loudly
        mp.setenv("SE_MANAGER_PATH", "/nonexistent/selenium-manager")
        with browser(DESKTOP) as driver:
            yield driver


@pytest.fixture
def driver(chromium):
    """The browser with no cookies and a desktop viewport."""
    clear_cookies(chromium)
    resize_viewport(chromium, DESKTOP)
    chromium.get("about:blank")
    yield chromium
    clear_cookies(chromium)


@pytest.fixture
def corpus(es, settings):
    """Six stories: one on three sites (the third edited), one hostile on two sites, four single pages.

    Ingested one page at a time, in this order; returns the cluster id of each page.
    """
    text = story(301, 20)
    edited = list(text)
    edited[3] = "Brightwater volunteers painted every bench beside the lighthouse. " + edited[3]
    hostile = story(302, 16)
    pages = [
        Page(html=page("Zephyrton council approves budget", text, site="one.test"), id="a1", site="one.test"),
        Page(html=page("Zephyrton budget passes", text, site="two.test"), id="a2", site="two.test"),
        Page(html=page("Zephyrton budget approved", edited, site="three.test"), id="a3", site="three.test"),
        Page(
            html=page(html.escape(XSS_TITLE), [html.escape(XSS_BODY), *hostile], site="four.test"),
            id="x1",
            site="four.test",
            url=XSS_URL,
        ),
        Page(html=page("Quillbrook storm warning", hostile, site="five.test"), id="x2", site="five.test"),
        Page(html=page("Marrowby library reopens", story(303)), id="l1", site="six.test"),
        Page(html=page("Kestrelford railway strike ends", story(304)), id="l2", site="seven.test"),
        Page(html=page("Ashmere hospital opens a ward", story(305)), id="l3", site="eight.test"),
        Page(html=page("Pellwick museum finds a map", story(306)), id="l4", site="nine.test"),
    ]
    outcomes = ingest_one_by_one(pages, client=es, settings=settings)
    clusters = {page_id: outcome.cluster_id for page_id, outcome in outcomes.items()}
    assert clusters["a1"] == clusters["a2"] == clusters["a3"], "the three Zephyrton copies must form one cluster"
    assert clusters["x1"] == clusters["x2"] != clusters["a1"], "the two Quillbrook copies must form one cluster"
    assert len(set(clusters.values())) == 6, clusters
    return clusters


@pytest.fixture
def live(settings, redis_url, corpus):
    """The web app on a free local port, reading the test's index; admin password ``ADMIN_PASSWORD``."""
    server = LiveServer(live_settings(settings, redis_url), live_web(page_size=PAGE_SIZE))
    yield server
    server.close()
