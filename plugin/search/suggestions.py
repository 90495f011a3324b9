"""Spelling suggestions for a search that found nothing, from the words of the index.

A phrase suggester on the title and one on the body, their candidates drawn from those fields' terms: no
fuzzy query runs (the public search switches fuzziness off), and the text sent holds only the query's plain
words (no operator, no excluded ``-word``). Pure: the builder returns the body, the reader reads the response.
"""

from __future__ import annotations

import re
from typing import Any

from newsfold.plugin.search.public_query import MAX_QUERY_TERMS

SUGGESTION = "newsfold_spelling"
FIELDS = ("title", "body")
#: a word the query leaves out (``-word``, ``-"a phrase"``) and the switched-off operators' marks (``~2``)
_EXCLUDED = re.compile(r'(?:^|(?<=[\s(|]))-(?:"[^"]*"|\S+)')
_MARKS = re.compile(r"~\d*")
_WORD = re.compile(r"\w+(?:['’]\w+)*")


def query_words(q: str | None) -> list[str]:
    """The plain words of a query, in order: without operators, quotes or the words it excludes."""
    text = _MARKS.sub(" ", _EXCLUDED.sub(" ", q or ""))
    return _WORD.findall(text)[:MAX_QUERY_TERMS]


def spelling_suggestions(q: str | None, *, size: int = 3, timeout: str = "2s") -> dict[str, Any] | None:
    """Search body: at most ``size`` respellings of ``q``'s plain words that the index holds; None without words.

    Args:
        q: the public query (already checked).
        size: the most suggestions asked for.
        timeout: the server-side time limit.

    Returns:
        A ``size: 0`` body with a phrase suggester on each of ``FIELDS`` (``SUGGESTION_title``, ...), or None.
    """
    words = query_words(q)
    if not words:
        return None
    suggest: dict[str, Any] = {"text": " ".join(words)}
    for field in FIELDS:  # one language model a field: a word only titles hold is scored on the titles
        generator = {"field": field, "suggest_mode": "always", "min_word_length": 3}
        suggest[f"{SUGGESTION}_{field}"] = {
            "phrase": {"field": field, "size": size, "max_errors": 2, "direct_generator": [generator]}
        }
    return {"size": 0, "timeout": timeout, "suggest": suggest}


def read_suggestions(response: dict[str, Any], q: str | None) -> list[str]:
    """The respellings in a :func:`spelling_suggestions` response, best first, without the query's own words."""
    asked = " ".join(query_words(q)).lower()
    scored: dict[str, float] = {}
    suggested = response.get("suggest") or {}
    for field in FIELDS:
        for entry in suggested.get(f"{SUGGESTION}_{field}") or []:
            for option in entry.get("options") or []:
                text = " ".join(_WORD.findall(str(option.get("text") or "")))
                if text and text.lower() != asked:
                    scored[text] = max(scored.get(text, 0.0), float(option.get("score") or 0.0))
    return sorted(scored, key=lambda text: -scored[text])
