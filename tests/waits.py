"""Polling helper of the tests that wait for another process or thread."""

from __future__ import annotations

import time


def wait_until(predicate, timeout: float = 10.0, step: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes; its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
