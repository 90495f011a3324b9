"""The search page: one result per story, its other versions folded underneath."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, request

from newsfold.plugin.errors import InputError
from newsfold.web.actions.search_params import SearchParams
from newsfold.web.actions.search_results import (
    filter_choices,
    run_search,
    search_body,
    suggest_spellings,
)
from newsfold.web.actions.story_lists import is_top_request
from newsfold.web.formatting import page_links
from newsfold.web.home import search_section_choices
from newsfold.web.resources import get_es, get_settings, get_web_settings
from newsfold.web.search.home import form_choices, top_stories

bp = Blueprint("search", __name__)


@bp.get("/")
def index():
    """``/?q=&site=&lang=&from=&to=&sort=&page=``: matching stories; top stories for no query and no dates.

    A malformed or out-of-range argument is answered with the form, refilled,
    and a message saying what to change (HTTP 400); it never reaches Elasticsearch.
    """
    settings = get_settings()
    if is_top_request(request.args):
        return top_stories()
    try:
        params = SearchParams.from_args(request.args)
        body = search_body(params, page_size=get_web_settings().page_size)
    except InputError as exc:
        form = SearchParams.for_form(request.args)
        page = render_template("search.html", params=form, error=str(exc), choices=form_choices(form))
        return page, 400
    es = get_es()
    result = run_search(
        es,
        settings,
        params,
        body,
        page_size=get_web_settings().page_size,
        per_cluster=int(current_app.config["VERSIONS_PER_STORY"]),
    )
    suggest_spellings(es, settings, result)
    choices = filter_choices(es, settings, params)
    sections = search_section_choices(es, settings, params.q, days=params.days(), chosen=params.section)
    links = page_links(params.page, result.total_pages)
    return render_template("search.html", params=params, result=result, page_links=links, choices=choices,
                           sections=sections)  # fmt: skip
