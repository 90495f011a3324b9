"""The arguments of a search: what the user asked for, checked, and the provenance flags top stories share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import cast

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.provenance import no_wire_filter, originals_filter
from newsfold.plugin.search.public_query import MAX_PASSAGE_CHARS, is_passage, parse_day
from newsfold.plugin.search.request import SORTS as SEARCH_SORTS
from newsfold.plugin.search.request import SearchRequest, Sort
from newsfold.web.home import section_arg, section_filters
from newsfold.web.validation import MAX_FILTER_CHARS, address_chars, filter_text, query_text

MAX_PAGE_DIGITS = 6
#: a longer query string is refused whole (a browser form never sends one)
MAX_ARGS_CHARS = 4096
#: the URL arguments whose names are not those of their ``SearchParams`` field
URL_NAMES = {"date_from": "from", "date_to": "to"}


@dataclass(frozen=True)
class SearchParams:
    """What the user asked for: query, filters, order and page number.

    The URL arguments are ``q``, ``site``, ``lang``, ``section``, ``from`` and ``to``
    (``YYYY-MM-DD``, inclusive, on the published date), ``sort``
    (``relevance`` or ``date``) and ``page``: the whole state of a search is
    in its URL, so any result page can be shared.
    """

    q: str = ""
    site: str | None = None
    lang: str | None = None
    date_from: str | None = None
    date_to: str | None = None
    sort: Sort = "relevance"
    page: int = 1
    originals: bool = False
    nowire: bool = False
    section: str | None = None

    @classmethod
    def from_args(cls, args: Mapping[str, str]) -> SearchParams:
        """Read the search from request arguments.

        Args:
            args: the request's query arguments.

        Raises:
            ValueError: a value is malformed or out of range; the message says which and how.
        """
        q = query_text(args.get("q"), passages=True)  # said first: the most likely reason for a long address
        values: dict[str, str | None] = {name: filter_text(args.get(name), name) for name in ("site", "lang")}
        for arg, name in (("from", "date_from"), ("to", "date_to")):  # 'from' after 'to': a range nothing is in
            value = (args.get(arg) or "").strip()
            values[name] = value or None
            if value:
                parse_day(value, f"'{arg}'")
        sort = (args.get("sort") or "relevance").strip()
        if sort not in SEARCH_SORTS:
            raise InputError(f"sort must be 'relevance' or 'date', got {sort[:40]!r}")
        raw_page = (args.get("page") or "1").strip()
        if not (raw_page.isascii() and raw_page.isdigit()) or not raw_page.strip("0"):
            raise InputError(f"page must be a positive whole number, got {raw_page[:20]!r}")
        if len(raw_page) > MAX_PAGE_DIGITS:
            shown = raw_page if len(raw_page) <= 20 else raw_page[:20] + "…"
            raise InputError(f"page {shown} is out of range (at most 10,000 results)")
        # checked last (a message about a known argument helps more); a pasted passage has room of its own
        chars = address_chars(args)
        if chars > MAX_ARGS_CHARS + (len(q) if is_passage(q) else 0):
            limit = f"at most {MAX_ARGS_CHARS:,}"
            raise InputError(f"the address is too long ({chars:,} characters after the '?'; {limit})")
        originals, nowire = provenance_flags(args)
        return cls(q=q, sort=sort, page=int(raw_page), originals=originals, nowire=nowire, section=section_arg(args),
                   **values)  # fmt: skip

    @classmethod
    def for_form(cls, args: Mapping[str, str]) -> SearchParams:
        """What the user typed, unchecked and cut to size: refills the form above an error message."""

        def text(name: str, limit: int) -> str:
            return (args.get(name) or "").strip()[:limit]

        return cls(
            q=text("q", 2 * MAX_PASSAGE_CHARS),
            site=text("site", MAX_FILTER_CHARS) or None,
            lang=text("lang", MAX_FILTER_CHARS) or None,
            date_from=text("from", 40) or None,
            date_to=text("to", 40) or None,
            sort=cast(Sort, text("sort", 40) or "relevance"),  # refilled as typed, never searched
            originals=args.get("originals") == "1",
            nowire=args.get("nowire") == "1",
            section=text("section", MAX_FILTER_CHARS) or None,
        )

    @property
    def filtered(self) -> bool:
        """Whether any filter narrows the search."""
        return bool(
            self.site or self.lang or self.date_from or self.date_to or self.originals or self.nowire or self.section
        )

    @property
    def passage(self) -> bool:
        """Whether the query is a pasted passage (more than 32 words): its results are the stories holding it."""
        return is_passage(self.q)

    def args(self) -> dict:
        """The search as its URL arguments, every one of them (a flag that is set is ``"1"``)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[URL_NAMES.get(f.name, f.name)] = ("1" if value else None) if isinstance(value, bool) else value
        return out

    @property
    def empty_range(self) -> bool:
        """Whether the days end before they start: a range no page is in (the core refuses to build one)."""
        return bool(self.date_from and self.date_to and self.date_from > self.date_to)

    def days(self) -> tuple[str | None, str | None]:
        """``(from, to)`` as the core's date filter takes them: none for an empty range (:meth:`filters` says it)."""
        return (None, None) if self.empty_range else (self.date_from, self.date_to)

    def request(self, *, page_size: int) -> SearchRequest:
        """The core's record of this search (``plugin.search.request.SearchRequest``), built here once."""
        date_from, date_to = self.days()  # an empty range is a match_none filter instead
        return SearchRequest(q=self.q, page=self.page, size=page_size, sort=self.sort, site=self.site,
                             lang=self.lang, date_from=date_from, date_to=date_to,
                             filters=tuple(self.filters()))  # fmt: skip

    def filters(self) -> list[dict]:
        """The section's and the provenance filter clauses ("this site's own stories", "no wire stories"), and
        ``match_none`` for an empty range of days."""
        empty: list[dict] = [{"match_none": {}}] if self.empty_range else []
        provenance = provenance_filters(site=self.site, originals=self.originals, nowire=self.nowire)
        return empty + section_filters(self.section) + provenance

    def url_args(self, page: int | None = None, **changes) -> dict:
        """Arguments for ``url_for`` that reproduce this search (on another page, or with ``changes``)."""
        args = {**self.args(), "page": page or self.page, **changes}
        defaults = {"page": 1, "sort": "relevance"}
        return {k: v for k, v in args.items() if v and defaults.get(k) != v}

    def as_json(self) -> dict:
        """The search as the API reports it (the text query is ``query``)."""
        args = self.args()
        return {"query": args.pop("q"), **args, "originals": self.originals, "nowire": self.nowire,
                "passage": self.passage}  # fmt: skip


def _flag(args: Mapping[str, str], name: str) -> bool:
    raw = (args.get(name) or "").strip()
    if raw not in ("", "0", "1"):
        raise InputError(f"{name} must be 1 or 0, got {raw[:20]!r}")
    return raw == "1"


def provenance_flags(args: Mapping[str, str]) -> tuple[bool, bool]:
    """``(originals, nowire)`` from request arguments.

    ``originals`` without a site keeps the stories some site (no wire) originated.

    Raises:
        ValueError: a value other than 1 or 0.
    """
    return _flag(args, "originals"), _flag(args, "nowire")


def provenance_filters(*, site: str | None, originals: bool, nowire: bool) -> list[dict]:
    """The filter clauses of the provenance flags."""
    out = []
    if originals:
        out.append(originals_filter(site))
    if nowire:
        out.append(no_wire_filter())
    return out
