"""The home page: ``/`` without a query shows the top stories (``web.search.views`` hands it over), and the
menus the search form shows above an error."""

from __future__ import annotations

from dataclasses import replace

from flask import render_template, request

from newsfold.plugin.errors import InputError
from newsfold.plugin.search.page_dates import epoch_millis
from newsfold.plugin.search.story_queries import WINDOW_NAMES, window_filter
from newsfold.web.actions.search_params import SearchParams
from newsfold.web.actions.search_results import FilterChoices, filter_choices
from newsfold.web.actions.story_lists import RELEVANCE
from newsfold.web.actions.top_stories import TopParams, run_top
from newsfold.web.formatting import page_links
from newsfold.web.home import top_section_choices
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
    except InputError as exc:
        page = render_template("search.html", params=form, top_form=TopParams.for_form(args), error=str(exc),
                               choices=form_choices(form), windows=WINDOW_NAMES)  # fmt: skip
        return page, 400
    es = get_es()
    result = run_top(es, settings, top, page_size=page_size)
    top = result.params  # the window it took when none was asked for
    params = SearchParams(site=top.site, lang=top.lang, section=top.section)
    window = window_filter(top.window, anchor_ms=epoch_millis(result.anchor), time_field=result.time_field)
    sections = top_section_choices(es, settings, [*window, *replace(top, section=None).filters()], chosen=top.section)
    links = page_links(top.page, result.total_pages)
    return render_template("search.html", params=params, top=result, top_form=top, page_links=links,
                           choices=filter_choices(es, settings, params), windows=WINDOW_NAMES,
                           sections=sections)  # fmt: skip


def form_choices(form: SearchParams) -> FilterChoices:
    """The menus above an error message: every site and language of the query and days, so that fixing the
    search (choosing the site that "Site's own stories" needs) is one choice away; only the chosen values when
    the query or days are what is wrong."""
    try:
        return filter_choices(get_es(), get_settings(), form)
    except InputError:
        return FilterChoices.chosen(form)
