"""The made-up news sites and how a page is rendered through a site's Jinja2 template."""

from __future__ import annotations

import datetime as dt
import functools
import html
import json
from dataclasses import dataclass

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from newsfold.samples import vocab

MONTHS = vocab.EN["months"]


@dataclass(frozen=True)
class Site:
    """A made-up news site: name, domain, language and its own page template."""

    key: str
    name: str
    domain: str
    lang: str
    town: str
    sections: tuple[str, ...]
    reporters: tuple[str, ...]
    template: str  # a file in templates/


SITES = tuple(
    Site(**{**entry, "sections": tuple(entry["sections"]), "reporters": tuple(entry["reporters"])})
    for entry in vocab.SITES
)


@dataclass
class View:
    """Everything a site template needs to render one page."""

    site: Site
    page_id: str
    headline: str
    paragraphs: list[str]
    byline: str
    published: dt.datetime
    url: str
    section: str
    description: str
    related: list[tuple[str, str, str]]  # (headline, teaser, url)
    most_read: list[tuple[str, str]]  # (headline, url)
    comments: list[tuple[str, str, str]]  # (author, when, text)
    note: str | None = None
    caption: str | None = None


def _escape_text(value: object) -> Markup:
    """Autoescape of every ``{{ }}``: ``& < >`` (quotes in text stay as typed; attributes use ``|quoted``)."""
    if hasattr(value, "__html__"):
        return Markup(value)
    return Markup(html.escape(str(value), quote=False))


def _escape_attr(value: object) -> Markup:
    """``|quoted``: the escape for a value inside a quoted attribute (quotes too)."""
    return Markup(html.escape(str(value), quote=True))


def _json_ld(value: object) -> Markup:
    """``|json_ld``: JSON for a ``<script>`` element, ``<`` written ``\\u003c`` so no tag can start inside."""
    return Markup(json.dumps(value, ensure_ascii=False).replace("<", "\\u003c"))


@functools.cache
def _environment() -> Environment:
    # The finalize hook escapes as the sites always did (markupsafe's own escape would also turn quotes in text
    # into entities); autoescape stays on, so a value can only reach the page raw as Markup.
    env = Environment(
        loader=PackageLoader("newsfold.samples", "templates"),
        autoescape=True,
        finalize=_escape_text,
        trim_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
    )
    env.filters.update(
        quoted=_escape_attr,
        json_ld=_json_ld,
        long_date=lambda d: f"{d.day} {MONTHS[d.month - 1]} {d.year}",
        us_date=lambda d: f"{MONTHS[d.month - 1]} {d.day}, {d.year}",
        zh_date=lambda d: f"{d.year}年{d.month}月{d.day}日",
        weekday=lambda d: vocab.EN["weekdays"][d.weekday()],
    )
    env.globals["zip"] = zip
    return env


def render(view: View) -> str:
    """The HTML page of ``view`` in its site's template."""
    return _environment().get_template(view.site.template).render(v=view, site=view.site)
