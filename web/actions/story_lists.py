"""Which story list an address asks for (the search's or the top stories), what a list's feed passes on, and
the page size of a story's versions: shared by the home page, the story pages, the feeds and the API."""

from __future__ import annotations

from newsfold.plugin.search.request import SORTS as SEARCH_SORTS
from newsfold.plugin.search.story_queries import SORTS

RELEVANCE = SEARCH_SORTS[0]  # the search's own default order (best match)
#: versions a story page lists at once
VERSIONS_PAGE = 20
#: the arguments of a story list (search and top stories) a feed passes on to its page's address; any other
#: one is dropped (as keywords of ``url_for``, ``_external`` or ``_method`` would steer it)
LIST_ARGS = ("q", "site", "lang", "section", "from", "to", "sort", "page", "window")


def is_top_request(args) -> bool:
    """Whether ``/`` with these arguments shows top stories: no query, no date range, no order by date.

    ``/?sort=date`` is the search's own listing of the newest stories, as
    before. ``sort=relevance`` (what the search form sends when its query is
    cleared) has no words to rank by, and the best match for nothing is the
    top stories.
    """
    if (args.get("q") or "").strip() or args.get("from") or args.get("to"):
        return False
    return (args.get("sort") or "coverage").strip() in (*SORTS, RELEVANCE)
