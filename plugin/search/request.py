"""What a story search asks for, as one frozen record: :class:`SearchRequest` (modelled on searxng's ``SearchQuery``).

newsfold's own search (``plugin.search.queries.collapsed_search``) takes one;
the web builds it once from the form or the query string
(``web.search.params.SearchParams.request``). Every value is checked when the
record is made: a bad one is an :class:`~newsfold.plugin.errors.InputError`
naming it, before anything is sent.

Pure: no server is contacted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Literal, get_args

from newsfold.plugin.errors import InputError, check_type

#: the orders of a story search: best match first, or newest first
Sort = Literal["relevance", "date"]
SORTS: tuple[Sort, ...] = get_args(Sort)
#: added to the relevance score of an editor-chosen representative
REPRESENTATIVE_BOOST = 2.0


@dataclass(frozen=True)
class SearchRequest:
    """One story search: words, filters, order and page.

    Attributes:
        q: the words (a ``simple_query_string``; more than 32 words is a pasted passage).
        page: the page of stories, from 1.
        size: stories a page.
        sort: ``"relevance"`` or ``"date"`` (newest first; also the order of a search without words).
        site: only the pages of this site.
        lang: only the pages in this language.
        date_from: only pages published on or after this day (``YYYY-MM-DD``).
        date_to: only pages published on or before this day (``YYYY-MM-DD``).
        filters: more filter clauses (such as ``plugin.fold.provenance.originals_filter``).
        precision_threshold: of the story count (a ``cardinality`` aggregation).
        representative_boost: added to the score of an editor's representative (0: none).

    Raises:
        InputError: a value of the wrong type, a page out of range or an unknown sort.
    """

    q: str = ""
    page: int = 1
    size: int = 10
    sort: Sort = "relevance"
    site: str | None = None
    lang: str | None = None
    date_from: str | None = None
    date_to: str | None = None
    filters: tuple[Mapping[str, Any], ...] = ()
    precision_threshold: int = 40000
    representative_boost: float = REPRESENTATIVE_BOOST

    def __post_init__(self) -> None:
        if self.q is None:  # newsfold 0.x took no words as None
            object.__setattr__(self, "q", "")
        check_type(self.q, str, "q")
        for name in ("page", "size", "precision_threshold"):
            check_type(getattr(self, name), int, name)
        check_type(self.representative_boost, (int, float), "representative_boost")
        for name in ("site", "lang", "date_from", "date_to"):
            check_type(getattr(self, name), str, name, optional=True)
        if self.sort not in SORTS:
            raise InputError(f"sort must be 'relevance' or 'date', got {str(self.sort)[:40]!r}")
        check_type(self.filters, (list, tuple), "filters")
        if not all(isinstance(f, Mapping) for f in self.filters):
            raise InputError("filters must be query clauses (dicts)")
        object.__setattr__(self, "filters", tuple(self.filters))

    @classmethod
    def of(cls, request: SearchRequest | str | None = None, /, **keywords: Any) -> SearchRequest:
        """``request`` itself, or one made of the words and keyword arguments of newsfold 0.x's
        ``collapsed_search(q, page=..., size=..., ...)`` (kept as a deprecated alias).

        Raises:
            InputError: both a request and keywords, or an unknown keyword.
        """
        if isinstance(request, SearchRequest):
            if keywords:
                raise InputError(f"give a SearchRequest or keyword arguments, not both: {', '.join(keywords)}")
            return request
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(keywords) - known)
        if unknown:
            raise InputError(f"unknown search argument(s): {', '.join(unknown)}")
        if request is not None:
            if "q" in keywords:
                raise InputError("the words were given twice (as the first argument and as q)")
            keywords["q"] = request
        filters = keywords.get("filters")
        if isinstance(filters, Sequence) and not isinstance(filters, str | bytes):
            keywords["filters"] = tuple(filters)
        return cls(**keywords)
