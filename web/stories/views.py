"""A story's page, a version's added passages, their JSON API and the Atom feeds of every story list.

- ``/stories/<cluster_id>`` and ``/stories/<cluster_id>/versions/<page_id>`` (public pages);
- ``GET /api/stories``, ``/api/stories/<cluster_id>``, ``/api/stories/<cluster_id>/versions/<page_id>``;
- ``/feed?<the arguments of />``: the search or the top stories of the same URL as Atom, one entry per story.

Every argument is checked first; a bad one is a 400 with a message, an unknown story or version a 404.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

from flask import Blueprint, Response, abort, current_app, jsonify, redirect, render_template, request, url_for

from newsfold.plugin.edit.merged import merged_into
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.lookups import MAX_WINDOW
from newsfold.plugin.search.queries import SORTS as SEARCH_SORTS
from newsfold.plugin.search.story_queries import SORTS, WINDOW_NAMES
from newsfold.web.auth import current_user
from newsfold.web.charts import timeline
from newsfold.web.formatting import format_datetime, page_links, parse_datetime
from newsfold.web.resources import get_es, get_settings, get_web_settings
from newsfold.web.search.params import SearchParams
from newsfold.web.search.results import SearchResult, run_search, search_body
from newsfold.web.stories.feeds import MIMETYPE, FeedEntry, atom_feed, story_id
from newsfold.web.stories.top import TopParams, TopResult, page_number, run_top
from newsfold.web.stories.versions import StoryParams, checked_id, public_passages, run_story, version_passages

bp = Blueprint("stories", __name__)
api_bp = Blueprint("stories_api", __name__)
#: versions a story page lists at once
RELEVANCE = SEARCH_SORTS[0]  # the search's own default order (best match)
VERSIONS_PAGE = 20
#: the answer at the address of a story merged away: temporary (an undo of the merge gives it its story back)
MERGED_REDIRECT = 307
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


def _story_params() -> StoryParams:
    return StoryParams(cluster_id="", page=page_number(request.args, limit=MAX_WINDOW // VERSIONS_PAGE))


def _load_story(cluster_id: str):
    try:
        checked_id(cluster_id)
        params = _story_params()
    except InputError as exc:
        return None, str(exc)
    params.cluster_id = cluster_id
    result = run_story(get_es(), get_settings(), params, page_size=VERSIONS_PAGE)
    if result is None:
        survivor = merged_into(cluster_id, client=get_es(), settings=get_settings())
        if survivor:  # merged away by an editor: for now, since an undo gives the address its story back
            endpoint = request.endpoint or "stories.story"
            args: dict[str, Any] = {k: v for k, v in request.args.items() if k == "page"}
            moved = redirect(url_for(endpoint, cluster_id=survivor, **args), code=MERGED_REDIRECT)
            moved.headers["Cache-Control"] = "no-store"  # no browser or proxy keeps the answer past an undo
            abort(moved)
        abort(404, description=f"no story {cluster_id[:80]!r}")
    return result, None


def story_timeline(story: dict):
    """The story's timeline chart, the first publisher marked in the interval it falls in."""
    buckets = [(format_datetime(b["start"]), b["count"]) for b in story["timeline"]]
    starts = [parse_datetime(b["start"]) for b in story["timeline"]]
    first = story.get("first") or {}
    when = parse_datetime(first.get("published"))
    markers = []
    if when is not None and starts and all(starts):
        when = when if when.tzinfo else when.replace(tzinfo=dt.UTC)
        index = max((k for k, start in enumerate(starts) if start is not None and start <= when), default=0)
        markers.append((index, f"first: {first.get('site') or 'unknown site'}"))
    return timeline(buckets, title="When the versions of this story appeared", chart_id="story-timeline",
                    markers=markers)  # fmt: skip


@bp.get("/stories/<path:cluster_id>/versions/<path:page_id>")
def version(cluster_id: str, page_id: str):
    """A version of a story with the passages the story's reference does not have marked."""
    problem = _bad_ids(cluster_id, page_id)
    if problem:
        return render_template("error.html", code=400, message=problem), 400
    found = version_passages(get_es(), get_settings(), cluster_id, page_id)
    if found is None:
        abort(404, description=f"no version {page_id[:80]!r} of story {cluster_id[:80]!r}")
    shown, paragraphs = found
    added = sum(p.added for row in paragraphs for p in row)
    if current_user() is None:  # the public quotes what the version adds; the whole text is for editors
        quoted, runs = public_passages(paragraphs, limit=get_web_settings().public_passage_chars)
        return render_template("version.html", version=shown, quoted=quoted, runs=runs, added_count=added,
                               cluster_id=cluster_id)  # fmt: skip
    return render_template("version.html", version=shown, paragraphs=paragraphs, added_count=added,
                           cluster_id=cluster_id)  # fmt: skip


@bp.get("/stories/<path:cluster_id>")
def story(cluster_id: str):
    """``/stories/<id>?page=``: a story's versions, first publisher and timeline."""
    result, error = _load_story(cluster_id)
    if error:
        return render_template("error.html", code=400, message=error), 400
    links = page_links(result.params.page, result.total_pages)
    return render_template("story.html", result=result, page_links=links, timeline_svg=story_timeline(result.story))


@api_bp.get("/stories")
def api_top():
    """``GET /api/stories?window=&sort=&site=&lang=&page=``: top stories with their sites and pages."""
    page_size = get_web_settings().page_size
    params = TopParams.from_args(request.args, page_size=page_size)
    return jsonify(run_top(get_es(), get_settings(), params, page_size=page_size).as_json())


@api_bp.get("/stories/<path:cluster_id>/versions/<path:page_id>")
def api_version(cluster_id: str, page_id: str):
    """``GET /api/stories/<id>/versions/<page>``: a version's text as sentences, the added ones marked."""
    problem = _bad_ids(cluster_id, page_id)
    if problem:
        return jsonify(error=problem), 400
    found = version_passages(get_es(), get_settings(), cluster_id, page_id)
    if found is None:
        abort(404, description=f"no version {page_id[:80]!r} of story {cluster_id[:80]!r}")
    shown, paragraphs = found
    if current_user() is None:  # as on the page: the public gets the added passages, quoted
        quoted, runs = public_passages(paragraphs, limit=get_web_settings().public_passage_chars)
        return jsonify({**shown, "cluster_id": cluster_id, "paragraphs": [], "full_text": False,
                        "added_passages": quoted, "added_passages_total": runs})  # fmt: skip
    text = [[{"text": p.text, "added": p.added} for p in row] for row in paragraphs]
    return jsonify({**shown, "cluster_id": cluster_id, "paragraphs": text, "full_text": True})


@api_bp.get("/stories/<path:cluster_id>")
def api_story(cluster_id: str):
    """``GET /api/stories/<id>?page=``: a story's versions with their relation to its reference."""
    result, error = _load_story(cluster_id)
    if error:
        return jsonify(error=error), 400
    return jsonify(result.story)


@bp.get("/feed")
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


def _bad_ids(cluster_id: str, page_id: str) -> str | None:
    """What is wrong with a version's ids in its URL, or None."""
    try:
        checked_id(cluster_id)
        checked_id(page_id, "page")
    except InputError as exc:
        return str(exc)
    return None
