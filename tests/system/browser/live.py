"""The live setup of the browser tests and the screenshot script: the real app on a real port, headless Chromium.

The Flask app runs under werkzeug's ``make_server`` in a thread; the browser is
Debian's ``chromium`` driven through Debian's ``chromedriver`` by Selenium. The
driver path is given explicitly, so Selenium Manager (which would download a
driver) is never invoked.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator

from werkzeug.security import generate_password_hash
from werkzeug.serving import make_server

from newsfold.plugin.extract.article import Rejection
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.document import Outcome
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ADMIN_PASSWORD = "correct horse battery staple"
_PASSWORD_HASH = generate_password_hash(ADMIN_PASSWORD)
#: the viewports of the screenshots (and the default of the tests)
DESKTOP = (1280, 900)
PHONE = (390, 844)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when Chromium and its driver are installed."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not (os.path.isfile(path) and os.access(path, os.X_OK))]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} not installed: the browser tests need Debian's chromium and chromium-driver "
        "(`./run test` installs them when it runs as root; else `sudo apt-get install chromium chromium-driver`)"
    )


def live_settings(settings: Settings, redis_url: str) -> Settings:
    """``settings`` on the test Redis."""
    return settings.replace(redis_url=redis_url)


def live_web(**changes) -> WebSettings:
    """Web settings with a working admin login over plain http (the password is ``ADMIN_PASSWORD``)."""
    return WebSettings(
        secret_key="browser-test-secret-" + "k" * 24,
        admin_password_hash=_PASSWORD_HASH,
        cookie_secure=False,
        **changes,
    )


class LiveServer:
    """The newsfold web app served on ``127.0.0.1`` on a free port by a background thread."""

    def __init__(self, settings: Settings, web: WebSettings | None = None, **config) -> None:
        self.app = create_app(config or None, settings=settings, web=web or live_web())
        self._server = make_server("127.0.0.1", 0, self.app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="live-server", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and close the app's clients."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)
        get_resources(self.app).close()

    def __enter__(self) -> LiveServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start_browser(size: tuple[int, int] = DESKTOP):
    """A headless Chromium of the given window size, driven by the system chromedriver.

    Alerts are left open (``unhandledPromptBehavior: ignore``) so a test can
    see one instead of the driver dismissing it silently.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
        "--disable-dev-shm-usage",  # containers have a small /dev/shm
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--force-device-scale-factor=1",
        "--lang=en-GB",
        f"--window-size={size[0]},{size[1]}",
    ):
        options.add_argument(arg)
    options.unhandled_prompt_behavior = "ignore"
    # an explicit driver path: Selenium Manager (a driver download) is skipped
    service = Service(executable_path=CHROMEDRIVER)
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    return driver


def resize_viewport(driver, size: tuple[int, int]) -> None:
    """Make the page's viewport (not the window) exactly ``size`` by emulating the device metrics."""
    width, height = size
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
    )


def clear_cookies(driver) -> None:
    """Forget every cookie: cookies are kept per host, not per port, so one test's login would leak into the next."""
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})


def log_in(driver, base_url: str, password: str = ADMIN_PASSWORD, *, next_path: str | None = None) -> None:
    """Log in through the login form (the user ``admin``) and wait for the page the form leads to."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.system.browser.helpers import gone

    driver.get(base_url + "/login" + (f"?next={next_path}" if next_path else ""))
    driver.find_element(By.CSS_SELECTOR, "[data-testid=login-username]").send_keys("admin")
    driver.find_element(By.CSS_SELECTOR, "[data-testid=login-password]").send_keys(password)
    form_page = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.CSS_SELECTOR, "[data-testid=login-submit]").click()
    # the next navigation must not overtake the login's POST (it would land on the login form)
    wait = WebDriverWait(driver, 30)
    wait.until(lambda d: gone(form_page))
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")


def ingest_one_by_one(pages: Iterable[Page], *, client, settings: Settings) -> dict[str, Outcome]:
    """Sign and ingest pages one batch each (in order), as a stream of arrivals would; outcomes by page id.

    Raises:
        ValueError: a page was rejected by extraction (a test corpus must be all articles).
    """
    out: dict[str, Outcome] = {}
    for page in pages:
        signed = sign_page(page, settings)
        if isinstance(signed, Rejection):
            raise ValueError(f"page {page.id} was rejected: {signed.reason} {signed.detail}")
        for outcome in ingest([signed], client=client, settings=settings):
            out[outcome.page_id] = outcome
    return out


@contextlib.contextmanager
def browser(size: tuple[int, int] = DESKTOP) -> Iterator:
    """``start_browser`` as a context manager that always quits Chromium."""
    driver = start_browser(size)
    try:
        yield driver
    finally:
        driver.quit()
