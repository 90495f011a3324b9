"""What the browser tests do over and over: wait for a page, read elements by test id, check a page is inert."""

from __future__ import annotations

import re

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
#: the site's own script files (web/static/*.js, served from its origin); any other script is an injection
OWN_SCRIPT = r"^/static/[a-z]+\.js$"
INJECTION_PROBE = (
    f"const OWN_SCRIPT = /{OWN_SCRIPT.replace('/', chr(92) + '/')}/;"
    + """
const root = document.documentElement;
return {
  marker: root.dataset.xss || null,
  global: window.__xss || null,
  scripts: Array.from(document.scripts).filter(s => !OWN_SCRIPT.test(s.getAttribute('src') || '')).length,
  handlers: document.querySelectorAll('[onerror], [onload], [onclick], [onmouseover]').length,
  imgX: document.querySelectorAll('img[src="x"]').length,
  jsLinks: Array.from(document.links).filter(a => a.protocol === 'javascript:').length,
};
"""
)


def foreign_markup(page_source: str) -> list[str]:
    """The ``<script`` elements (other than the site's own files) and ``<svg onload`` of a serialised page."""
    scripts = re.findall(r"<script\b[^>]*>", page_source)
    foreign = [tag for tag in scripts if not re.fullmatch(r'<script src="/static/[a-z]+\.js"( defer(="")?)?>', tag)]
    return foreign + re.findall(r"<svg onload", page_source)


def injection_traces(driver) -> dict:
    """What the XSS payloads would have left in the current page (all null or zero when the page is inert)."""
    opened = alert_text(driver)
    if opened is not None:
        return {"alert": opened}
    return driver.execute_script(INJECTION_PROBE)


INERT = {"marker": None, "global": None, "scripts": 0, "handlers": 0, "imgX": 0, "jsLinks": 0}


def png_colours(png: bytes) -> set[tuple[int, ...]]:
    """The distinct pixel colours of an 8-bit RGB or RGBA PNG, such as a WebDriver screenshot (no imaging library)."""
    import struct
    import zlib

    width, height, depth, colour_type = struct.unpack(">IIBB", png[16:26])
    assert depth == 8 and colour_type in (2, 6), (depth, colour_type)
    data, at = b"", 8
    while at < len(png):
        length, kind = struct.unpack(">I4s", png[at : at + 8])
        if kind == b"IDAT":
            data += png[at + 8 : at + 8 + length]
        at += 12 + length
    raw, bpp = zlib.decompress(data), 3 if colour_type == 2 else 4
    stride, previous, colours = width * bpp, bytearray(width * bpp), set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left, up = line[i - bpp] if i >= bpp else 0, previous[i]
            corner = previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        colours.update(tuple(line[i : i + 3]) for i in range(0, stride, bpp))
        previous = line
    return colours
