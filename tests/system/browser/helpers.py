"""What the browser tests do over and over: wait for a page, read elements by test id, check a page is inert."""

from __future__ import annotations

from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 30  # generous: the suite shares two cores with other test runs


def testid(name: str, extra: str = "") -> tuple[str, str]:
    """A locator for ``[data-testid=name]`` (``extra`` is appended to the selector)."""
    return By.CSS_SELECTOR, f'[data-testid="{name}"]{extra}'


def find(scope, name: str, extra: str = ""):
    """The element of that test id inside ``scope`` (a driver or an element)."""
    return scope.find_element(*testid(name, extra))


def find_all(scope, name: str, extra: str = "") -> list:
    """Every element of that test id inside ``scope``."""
    return scope.find_elements(*testid(name, extra))


def wait_for(driver, name: str, extra: str = ""):
    """Wait until an element of that test id is in the page, and return it."""
    return WebDriverWait(driver, TIMEOUT).until(ec.presence_of_element_located(testid(name, extra)))


def wait_until(driver, condition, message: str = ""):
    """Wait until ``condition(driver)`` is truthy and return its value."""
    return WebDriverWait(driver, TIMEOUT).until(condition, message)


def submit_and_wait(driver, button) -> None:
    """Click a submit button and wait until the next page has replaced this one."""
    html = driver.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(driver, TIMEOUT).until(lambda d: gone(html))
    wait_until(driver, lambda d: d.execute_script("return document.readyState") == "complete")


def gone(element) -> bool:
    """Whether an element left the document (a navigation replaced it).

    While the old document is being torn down chromedriver sometimes answers
    "Node with given id does not belong to the document" as a plain
    WebDriverException instead of a stale-element error: that means gone too.
    """
    try:
        element.is_enabled()
    except (StaleElementReferenceException, WebDriverException):
        return True
    return False


def alert_text(driver) -> str | None:
    """The text of an open alert/confirm/prompt dialog, or None when there is none."""
    try:
        return driver.switch_to.alert.text
    except NoAlertPresentException:
        return None


#: what an injected payload would leave behind; every value must stay null / zero
INJECTION_PROBE = """
const root = document.documentElement;
return {
  marker: root.dataset.xss || null,
  global: window.__xss || null,
  scripts: document.scripts.length,
  handlers: document.querySelectorAll('[onerror], [onload], [onclick], [onmouseover]').length,
  imgX: document.querySelectorAll('img[src="x"]').length,
  jsLinks: Array.from(document.links).filter(a => a.protocol === 'javascript:').length,
};
"""


def injection_traces(driver) -> dict:
    """What the XSS payloads would have left in the current page (all null or zero when the page is inert)."""
    opened = alert_text(driver)
    if opened is not None:
        return {"alert": opened}
    return driver.execute_script(INJECTION_PROBE)


INERT = {"marker": None, "global": None, "scripts": 0, "handlers": 0, "imgX": 0, "jsLinks": 0}
