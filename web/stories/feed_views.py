"""The Atom feed of every story list: ``/feed?<the arguments of />``, the same list as the page, one entry per
story (the feed itself is built by ``web.stories.feeds``); its route is registered with the story pages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from flask import Response, current_app, jsonify, request, url_for

from newsfold.plugin.errors import InputError
from newsfold.plugin.search.story_queries import WINDOW_NAMES
from newsfold.web.actions.search_params import SearchParams
from newsfold.web.actions.search_results import SearchResult, run_search, search_body
from newsfold.web.actions.story_lists import LIST_ARGS, is_top_request
from newsfold.web.actions.top_stories import TopParams, TopResult, run_top
from newsfold.web.resources import get_es, get_settings, get_web_settings
from newsfold.web.stories.feeds import MIMETYPE, FeedEntry, atom_feed, story_id


def feed():
    """``/feed?<the arguments of />``: the same list as the page, as an Atom 1.0 feed (one entry per story)."""
    settings, page_size = get_settings(), get_web_settings().page_size
    es = get_es()
    list_args: dict[str, Any] = {k: v for k, v in request.args.items() if k in LIST_ARGS}
    page_url = _absolute(url_for("search.index", **list_args))
    params: TopParams | SearchParams
    result: TopResult | SearchResult
    try:
        if is_top_request(request.args):
            params = TopParams.from_args(request.args, page_size=page_size)
            result = run_top(es, settings, params, page_size=page_size)
            params = result.params  # the window it took when none was asked for
            title = f"{'Top' if params.sort == 'coverage' else 'Latest'} stories · {WINDOW_NAMES[params.window]}"
            stories = result.results
        else:
            params = SearchParams.from_args(request.args)
            # newest first, whatever the page's order: a subscriber sees each new story
            params = replace(params, sort="date")
            body = search_body(params, page_size=page_size)
            result = run_search(es, settings, params, body, page_size=page_size,
                                per_cluster=int(current_app.config["VERSIONS_PER_STORY"]))  # fmt: skip
            title = f"Stories for “{params.q}”" if params.q else "Latest stories"
            stories = [_search_entry(s) for s in result.results]
    except InputError as exc:  # a feed reader is answered in JSON, as the API is
        return jsonify(error=str(exc)), 400
    entries = [
        FeedEntry(
            id=story_id(s["cluster_id"]),
            title=s.get("headline") or s.get("title") or "(untitled)",
            link=_absolute(url_for("stories.story", cluster_id=s["cluster_id"])),
            updated=s.get("latest") or s.get("published"),
            published=s.get("published"),
            summary=_summary(s),
            author=s.get("site"),
        )
        for s in stories
    ]
    self_url = _absolute(request.full_path.rstrip("?"))
    document = atom_feed(title=f"newsfold: {title}", self_url=self_url, page_url=page_url, entries=entries)
    return Response(document, mimetype=MIMETYPE)


def _absolute(path: str) -> str:
    """A link of this site: under ``NEWSFOLD_BASE_URL``, else relative (resolved against the feed's own
    address). Never built from the request's ``Host``, which a client or a cache in between may set to any host."""
    base = get_web_settings().base_url
    return f"{base}{path}" if base else path


def _summary(story: dict) -> str:
    sites, pages = story["sites"], story["pages"]
    line = f"{sites} site{'s' if sites != 1 else ''}, {pages} page{'s' if pages != 1 else ''}"
    origin = story.get("origin") or {}
    source = origin.get("wire") or origin.get("site") or story.get("site")
    line += f"; from {source}" if source else ""
    return f"{story['snippet']} ({line})" if story.get("snippet") else line


def _search_entry(found: dict) -> dict:
    """A search result as a feed's story: its latest and first version times, sites and pages."""
    times = [t for t in [found.get("published"), *(v.get("published") for v in found["versions"])] if t]
    sites = {found.get("site"), *(v.get("site") for v in found["versions"])} - {None}
    return {**found, "latest": max(times) if times else None, "sites": max(1, len(sites)), "pages": found["size"]}
