"""Spelling suggestions for a search that found nothing, from the words of the index.

A phrase suggester on the body, its candidates drawn from the title and body terms: no fuzzy query runs (the
public search switches fuzziness off), and the text sent holds only the query's plain words (no operator, no
excluded ``-word``). Pure: the builder returns the body, the reader reads the response.
"""

from __future__ import annotations

import re
from typing import Any

from newsfold.plugin.search.public_query import MAX_QUERY_TERMS

SUGGESTION = "newsfold_spelling"
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
        A ``size: 0`` body with a phrase suggester named ``SUGGESTION``, or None.
    """
    words = query_words(q)
    if not words:
        return None
    generators = [{"field": field, "suggest_mode": "always", "min_word_length": 3} for field in ("title", "body")]
    return {
        "size": 0,
        "timeout": timeout,
        "suggest": {
            "text": " ".join(words),
            SUGGESTION: {"phrase": {"field": "body", "size": size, "max_errors": 2, "direct_generator": generators}},
        },
    }


def read_suggestions(response: dict[str, Any], q: str | None) -> list[str]:
    """The respellings in a :func:`spelling_suggestions` response, best first, without the query's own words."""
    asked = " ".join(query_words(q)).lower()
    found: list[str] = []
    for entry in (response.get("suggest") or {}).get(SUGGESTION) or []:
        for option in entry.get("options") or []:
            text = " ".join(_WORD.findall(str(option.get("text") or "")))
            if text and text.lower() != asked and text not in found:
                found.append(text)
    return found
