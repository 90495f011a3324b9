"""A Celery app for tests: newsfold's tasks, but signing a page marked CRASH-WORKER kills the process.

Stands for a page that crashes the parser or draws the OOM killer
(``tests/indexer/test_guard.py``); ``os._exit`` leaves no chance to clean up, as a
real crash does.
"""

from __future__ import annotations

import os

from newsfold.indexer import pages, tasks  # noqa: F401 (tasks registers the tasks on the app)
from newsfold.indexer.celery_app import app

_sign_page = pages.sign_page


def _crashing_sign_page(page, *args, **kwargs):
    html = page.html if isinstance(page.html, str) else page.html.decode("utf-8", "replace")
    if "CRASH-WORKER" in html:
        os._exit(70)
    return _sign_page(page, *args, **kwargs)


pages.sign_page = _crashing_sign_page

__all__ = ["app"]
