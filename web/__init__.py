"""newsfold's web front end: the search UI, the JSON API and the admin (behind a login).

Run it with ``flask --app newsfold.web run`` (settings from the environment, see
docs/configuration.md). The web imports ``plugin`` but never the indexer: it
queues work by task name (``newsfold.task_names``).

The shared modules (settings, resources, errors, login, validation, formatting,
display, charts) sit here; each feature is a subpackage with its blueprint in
``views.py``: ``search``, ``stories``, ``admin`` and ``api``. The app factory
lives in ``app.py`` and is handed on lazily (PEP 562), so that importing the
web's settings (``newsfold.web.config``, which the settings registry reads in
every process, a worker's included) loads no Flask.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from newsfold.web.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from newsfold.web.app import create_app

        return create_app
    raise AttributeError(f"module 'newsfold.web' has no attribute {name!r}")
