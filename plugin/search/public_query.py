"""What a public search may ask, checked and turned into clauses: the query text, days, filters and pages.

Everything from outside is checked here before it reaches Elasticsearch: a query's length and its number of
words and operators (:func:`checked_query`), the operators it may use (``PUBLIC_QUERY_FLAGS``), days
(:func:`parse_day`) and pages (:func:`check_page`). The clauses built from them (:func:`text_query`,
:func:`page_filters`) are read by newsfold's searches (``plugin.search.queries``,
``plugin.search.story_queries``) and the admin's lists (``plugin.admin.admin_queries``).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from newsfold.plugin.errors import InputError

MAX_QUERY_CHARS = 500
MAX_QUERY_TERMS = 32
#: a query of more words than ``MAX_QUERY_TERMS`` is a pasted passage (:func:`passage_query`), up to this long
MAX_PASSAGE_CHARS = 1000
#: the most significant terms of a passage that its query looks for (``more_like_this``'s ``max_query_terms``)
PASSAGE_QUERY_TERMS = 25
#: the simple_query_string operators a public query may use: no fuzzy (~N after a word), no phrase slop
#: (~N after a phrase) and no prefix (word*): each of those can make one query cost the server minutes
PUBLIC_QUERY_FLAGS = "AND|OR|NOT|PHRASE|PRECEDENCE|WHITESPACE|ESCAPE"
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
#: what the term cap counts: each word, each ``|``, ``(`` and ``)``, and a ``+`` or ``-`` that starts a word
#: (``the|the|the`` is three terms and two operators, however few its spaces)
_QUERY_PARTS = re.compile(r"""[|()]|(?:^|(?<=[\s(|]))[+-]|[^\s|()"+-][^\s|()"]*""")


#: the operators ``PUBLIC_QUERY_FLAGS`` switches off, as a user writes them: ``word*``, ``word~2``, ``"a b"~3``
_OFF_OPERATORS = re.compile(r'(?:"[^"]*"|[^\s|()"+-][^\s|()"]*?)(?:\*|~\d*)(?=[\s|()]|$)')


def unsupported_operators(q: str | None) -> list[str]:
    """The parts of a query that use a switched-off operator (prefix ``wor*``, fuzzy ``counc~2``, phrase slop
    ``"a b"~3``), in order; Elasticsearch reads them as plain words, so the user is told."""
    return list(dict.fromkeys(m.group(0) for m in _OFF_OPERATORS.finditer((q or "").strip())))


def parse_day(value: str, name: str) -> dt.date:
    """A day given as ``YYYY-MM-DD`` (the one date format of every date argument and filter).

    Raises:
        ValueError: ``value`` is not such a day; the message calls it ``name``.
    """
    try:
        if not _ISO_DATE.match(value):
            raise InputError(value)
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(f"{name} must be a date like 2024-05-31, got {value[:40]!r}") from None


def page_filters(
    *,
    site: str | None = None,
    lang: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    q: str | None = None,
) -> list[dict[str, Any]]:
    """Filter clauses for pages of a site, in a language, published in a date range and containing text.

    Args:
        site: pages of this site.
        lang: pages in this language.
        date_from: first day (``YYYY-MM-DD``) of ``published``, inclusive.
        date_to: last day, inclusive.
        q: text in the title or body (:func:`text_query`, all words; unscored here).

    Returns:
        The clauses (empty for no filter).

    Raises:
        ValueError: a date is malformed, the range is empty or the text query too long.
    """
    out: list[dict[str, Any]] = []
    if site:
        out.append({"term": {"site": site}})
    if lang:
        out.append({"term": {"lang": lang}})
    start = parse_day(date_from, "date_from") if date_from else None
    end = parse_day(date_to, "date_to") if date_to else None
    if start and end and start > end:
        raise InputError(f"the date range is empty: {start.isoformat()} is after {end.isoformat()}")
    published = {}
    if start:
        published["gte"] = start.isoformat()
    if end and end < dt.date.max:
        # "up to and including that day": before the next midnight, the same on every Elasticsearch version
        published["lt"] = (end + dt.timedelta(days=1)).isoformat()
    if published:  # 9999-12-31 and nothing else is no bound at all
        out.append({"range": {"published": published}})
    if checked_query(q):
        out.append(text_query(q))
    return out


def checked_query(q: str | None) -> str:
    """A public query string, stripped and checked against the limits.

    Raises:
        ValueError: more than ``MAX_QUERY_CHARS`` characters, or more than ``MAX_QUERY_TERMS`` words and
            operators together (the message says which).
    """
    q = (q or "").strip()
    if len(q) > MAX_QUERY_CHARS:
        raise InputError(f"the query has {len(q):,} characters; the limit is {MAX_QUERY_CHARS}")
    parts = _QUERY_PARTS.findall(q)
    if len(parts) > MAX_QUERY_TERMS:
        operators = sum(part in "|()+-" for part in parts)
        raise InputError(
            f"the query has {len(parts) - operators} words and {operators} operators; ask with at most "
            f"{MAX_QUERY_TERMS} words and operators (| ( ) + -) together"
        )
    return q


def text_query(q: str | None) -> dict[str, Any]:
    """The full-text part of a public search: every word must match, titles count double.

    Quotes, ``-word``, ``|`` and parentheses work; fuzziness, phrase slop and
    prefixes are switched off (``PUBLIC_QUERY_FLAGS``), so their characters
    are read as text.

    Raises:
        ValueError: see :func:`checked_query`.
    """
    q = checked_query(q)
    if not q:
        return {"match_all": {}}
    return {
        "simple_query_string": {
            "query": q,
            "fields": ["title^2", "body"],
            "default_operator": "and",
            "flags": PUBLIC_QUERY_FLAGS,
        }
    }


def check_page(page: int, size: int, limit: int) -> None:
    """Raise unless page ``page`` of ``size`` results lies within the first ``limit`` results.

    Raises:
        ValueError: a page or size below 1, or a page beyond ``limit`` results.
    """
    if size < 1 or page < 1 or page * size > limit:
        raise InputError(f"page {page} of {size} is out of range (at most {limit:,} results)")


def is_passage(q: str | None) -> bool:
    """Whether a search text is a pasted passage: more than ``MAX_QUERY_TERMS`` words (separated by spaces)."""
    return len((q or "").split()) > MAX_QUERY_TERMS


def checked_search_text(q: str | None) -> str:
    """A public search text, stripped: a query within :func:`checked_query`'s limits, or a pasted passage.

    Raises:
        ValueError: a query over its limits, or a passage over ``MAX_PASSAGE_CHARS`` characters.
    """
    q = (q or "").strip()
    if not is_passage(q):
        return checked_query(q)
    if len(q) > MAX_PASSAGE_CHARS:
        raise InputError(
            f"the pasted passage has {len(q):,} characters; the limit is {MAX_PASSAGE_CHARS:,} "
            "(paste one paragraph, or search for a few words)"
        )
    return q


def passage_query(passage: str) -> dict[str, Any]:
    """The stories a pasted passage belongs to: ``more_like_this`` on its most significant terms.

    The terms are the passage's ``PASSAGE_QUERY_TERMS`` of highest tf-idf in the title and body fields, read
    as plain text (no operator applies); a page must hold at least 30 % of them.
    """
    return {
        "more_like_this": {
            "fields": ["title", "body"],
            "like": passage,
            "max_query_terms": PASSAGE_QUERY_TERMS,
            "min_term_freq": 1,
            "min_doc_freq": 1,
            "minimum_should_match": "30%",
        }
    }


def search_text_query(q: str | None) -> dict[str, Any]:
    """The full-text part of a public story search: :func:`text_query`, or :func:`passage_query` for a passage.

    Raises:
        ValueError: see :func:`checked_search_text`.
    """
    q = checked_search_text(q)
    return passage_query(q) if is_passage(q) else text_query(q)
