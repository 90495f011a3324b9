"""The search page: one result per story, its other versions folded underneath."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, request

from web.formatting import page_links
from web.resources import get_es, get_settings
from web.stories import SearchParams, run_search, search_body

bp = Blueprint("search", __name__)


@bp.get("/")
def index():
    """``/?q=&site=&lang=&page=``: matching stories, or the latest ones for an empty query."""
    settings = get_settings()
    try:
        params = SearchParams.from_args(request.args)
        body = search_body(params, settings)
    except ValueError as exc:
        form = SearchParams(
            q=request.args.get("q", ""), site=request.args.get("site") or None, lang=request.args.get("lang") or None
        )
        return render_template("search.html", params=form, error=str(exc)), 400
    result = run_search(get_es(), settings, params, body, per_cluster=int(current_app.config["VERSIONS_PER_STORY"]))
    links = page_links(params.page, result.total_pages)
    return render_template("search.html", params=params, result=result, page_links=links)
