"""A story's page, a version's added passages, their JSON API and the Atom feeds of every story list.

- ``/stories/<cluster_id>`` and ``/stories/<cluster_id>/versions/<page_id>`` (public pages);
- ``GET /api/stories``, ``/api/stories/<cluster_id>``, ``/api/stories/<cluster_id>/versions/<page_id>``;
- ``/feed?<the arguments of />``: the search or the top stories of the same URL as Atom, one entry per story.

Every argument is checked first; a bad one is a 400 with a message, an unknown story or version a 404.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Blueprint, abort, jsonify, redirect, render_template, request, url_for

from newsfold.plugin.edit.merged import merged_into
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.lookups import MAX_WINDOW
from newsfold.web.actions.story_lists import VERSIONS_PAGE
from newsfold.web.actions.top_stories import TopParams, page_number, run_top
from newsfold.web.auth import current_user
from newsfold.web.charts import timeline
from newsfold.web.formatting import format_datetime, page_links, parse_datetime
from newsfold.web.resources import get_es, get_settings, get_web_settings
from newsfold.web.stories.feed_views import feed
from newsfold.web.stories.versions import StoryParams, checked_id, public_passages, run_story, version_passages

bp = Blueprint("stories", __name__)
api_bp = Blueprint("stories_api", __name__)
#: the answer at the address of a story merged away: temporary (an undo of the merge gives it its story back)
MERGED_REDIRECT = 307


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


bp.add_url_rule("/feed", "feed", feed)  # its own module: web/stories/feed_views.py


def _bad_ids(cluster_id: str, page_id: str) -> str | None:
    """What is wrong with a version's ids in its URL, or None."""
    try:
        checked_id(cluster_id)
        checked_id(page_id, "page")
    except InputError as exc:
        return str(exc)
    return None
