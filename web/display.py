"""What a reader sees of a result: clean headlines, a snippet, the picture and the provenance.

Every list of the web and the API (search, top stories, a story's page, the
feeds) goes through here: one aggregation learns the affixes of the sites on
the page (``plugin.extract.headlines.site_affixes``), then each version gets its
``headline`` (``title`` is kept as it is), and each story its headline (the
origin's, else the most common), ``snippet``, ``image``, ``wire`` and ``origin``.
"""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterable, Mapping

from elasticsearch import Elasticsearch
from flask import has_app_context

from newsfold.plugin.extract.headlines import clean_headline, site_name, snippet, story_headline
from newsfold.plugin.search.hits import checked_image
from newsfold.plugin.settings import Settings
from newsfold.web.affixes import learn_uncached
from newsfold.web.resources import get_resources

log = logging.getLogger(__name__)


def learn_affixes(es: Elasticsearch, settings: Settings, sites: Iterable[str | None]) -> dict[str, list[str]]:
    """The learned title affixes of some sites: from the app's :class:`AffixCache` inside a request, else one
    aggregation; empty when it fails (headlines stay whole)."""
    if has_app_context():
        return get_resources().affixes.get(es, settings, sites)
    wanted = sorted({s for s in sites if s})
    return (learn_uncached(es, settings, wanted) or {}) if wanted else {}


def headline(item: Mapping, affixes: Mapping[str, list[str]]) -> str | None:
    """The headline of a version (a dict with ``title`` and ``site``)."""
    title = item.get("title")
    if not title:
        return None
    site = item.get("site")
    return clean_headline(title, site=site, affixes=affixes.get(site or "", ()))


def headline_filter(title: str | None, site: str | None = None) -> str:
    """``{{ title | headline(site) }}``: a title as its headline in a template (the site's affixes come from the
    app's cache, learned on first use)."""
    if not title:
        return title or ""
    affixes = learn_affixes(get_resources().es, get_resources().settings, [site]) if site else {}
    return headline({"title": title, "site": site}, affixes) or title


def dress_story(
    story: dict, versions: list[dict], affixes: Mapping[str, list[str]], *, highlights=None, card: bool = False
) -> dict:
    """Give a story (a dict) and its versions their headlines, and the story its snippet.

    ``versions`` are every version at hand, the story's own shown one included; each
    needs ``id``, ``title``, ``site`` and, for the snippet, ``lede``. A ``card`` (a result
    in a list) is one page: its headline and lede are those of the version it shows
    (``story["id"]``), like its site, date and link; a story's page takes the origin's
    headline, else the most common one.
    """
    names = site_names(versions)
    for v in versions:
        v["headline"] = headline(v, affixes)
        v["publication"] = names.get(v.get("site") or "")
    story["publication"] = names.get(story.get("site") or "")
    origin = story.get("origin") or {}
    by_id = {v.get("id"): v for v in versions}
    own = by_id.get(story.get("id")) if card else None
    if own is not None:
        story["headline"] = own["headline"] or story.get("headline")
    else:
        story["headline"] = story_headline(versions, origin_id=origin.get("id")) or story.get("headline")
    lede_page = own or by_id.get(origin.get("id")) or story
    lede_of = lede_page.get("lede") or story.get("lede")
    story["snippet"] = snippet(highlights, lede_of, headlines=(story["headline"], lede_page.get("headline")))
    return story


def site_names(versions: Iterable[Mapping]) -> dict[str, str]:
    """``site -> the publication's name`` as one of its versions' titles spells it
    (``plugin.extract.headlines.site_name``)."""
    out: dict[str, str] = {}
    for v in versions:
        site = v.get("site")
        if site and site not in out and (name := site_name(v.get("title"), site=site)):
            out[site] = name
    return out


_MARKED = re.compile(r"<mark>(.*?)</mark>", re.S)


def headline_highlight(headline: str | None, title_highlight: str | None) -> str | None:
    """The headline with the words the engine marked in the raw title marked too (HTML-escaped, ``<mark>`` tags).

    None when the title had no match or no marked word is in the headline.
    """
    if not headline or not title_highlight:
        return None
    words = {html.unescape(w).strip() for w in _MARKED.findall(title_highlight)} - {""}
    if not words:
        return None
    pattern = re.compile("|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.I)
    out, last = [], 0
    for m in pattern.finditer(headline):
        out += [
            html.escape(headline[last : m.start()], quote=False),
            f"<mark>{html.escape(m.group(0), quote=False)}</mark>",
        ]
        last = m.end()
    if not last:
        return None
    return "".join(out) + html.escape(headline[last:], quote=False)


def image_of(source: Mapping | None) -> str | None:
    """A stored picture address safe to show (``plugin.search.hits.checked_image``), or None."""
    return checked_image((source or {}).get("image"))
