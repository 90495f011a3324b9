"""The home page: ``/`` without a query shows the top stories (``web.search.views`` hands it over), and the
menus the search form shows above an error."""

from __future__ import annotations

from flask import render_template, request

from newsfold.plugin.search.story_queries import WINDOW_NAMES
from newsfold.web.actions.search_params import SearchParams
from newsfold.web.actions.search_results import FilterChoices, filter_choices
from newsfold.web.actions.story_lists import RELEVANCE
from newsfold.web.actions.top_stories import TopParams, run_top
from newsfold.web.formatting import page_links
from newsfold.web.resources import get_es, get_settings, get_web_settings


def top_stories():
    """``/?window=&sort=coverage|latest&site=&lang=&page=``: the stories of a window by coverage, or the latest."""
    settings, page_size = get_settings(), get_web_settings().page_size
    args = request.args.copy()
    if (args.get("sort") or "").strip() == RELEVANCE:  # the search form's order, with its query cleared
        args.pop("sort")
    form = SearchParams.for_form(args)
    try:
        top = TopParams.from_args(args, page_size=page_size)
    except ValueError as exc:
        page = render_template("search.html", params=form, top_form=TopParams.for_form(args), error=str(exc),
                               choices=form_choices(form), windows=WINDOW_NAMES)  # fmt: skip
        return page, 400
    es = get_es()
    result = run_top(es, settings, top, page_size=page_size)
    params = SearchParams(site=top.site, lang=top.lang)
    links = page_links(top.page, result.total_pages)
    return render_template("search.html", params=params, top=result, top_form=top, page_links=links,
                           choices=filter_choices(es, settings, params), windows=WINDOW_NAMES)  # fmt: skip


def form_choices(form: SearchParams) -> FilterChoices:
    """The menus above an error message: every site and language of the query and days, so that fixing the
    search (choosing the site that "Site's own stories" needs) is one choice away; only the chosen values when
    the query or days are what is wrong."""
    try:
        return filter_choices(get_es(), get_settings(), form)
    except ValueError:
        return FilterChoices.chosen(form)
