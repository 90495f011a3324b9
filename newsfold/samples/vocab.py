"""The vocabularies of the sample corpus, read from ``data/*.json``.

``english.json``   names, places and the small word lists of English stories and comments
``sentences.json`` English sentence templates shared by every topic, quote frames, paragraph kinds
``topics.json``    one entry a subject area: its vocabulary, ledes, headlines, facts and quotes
``chinese.json``   the same for the Chinese stories (three topics, each written in story order)
``sites.json``     the made-up news sites and the template each renders with

Templates use two marks, filled by ``stories.expand``: ``[a|b|c]`` is one of the
alternatives at random and ``{slot}`` a value from the story's context.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any


def _load(name: str) -> Any:
    return json.loads(files(__package__).joinpath("data", name).read_text(encoding="utf-8"))


EN: dict[str, Any] = _load("english.json")
SENTENCES: dict[str, Any] = _load("sentences.json")
TOPICS: list[dict[str, Any]] = _load("topics.json")
ZH: dict[str, Any] = _load("chinese.json")
SITES: list[dict[str, Any]] = _load("sites.json")
