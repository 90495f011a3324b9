"""Top stories: the arguments of a list, the requests it costs and what its stories show.

The builders and readers are ``plugin.search.story_queries``; this module checks what a
request asks for (every value from outside is checked before anything is
sent: a bad one is a ``ValueError`` whose message the view answers with 400),
runs the requests and shapes the results for the templates, the API and the
feeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from elasticsearch import Elasticsearch

from newsfold.plugin.errors import InputError
from newsfold.plugin.hits import public_fields
from newsfold.plugin.search.hits import Version
from newsfold.plugin.search.page_dates import iso_millis
from newsfold.plugin.search.story_face import faces
from newsfold.plugin.search.story_queries import (
    MAX_STORIES,
    SORTS,
    WINDOWS,
    newest,
    page_buckets,
    read_newest,
    read_top_stories,
    top_stories,
)
from newsfold.plugin.search.story_versions import STORY_SOURCE
from newsfold.plugin.settings import Settings
from newsfold.web import validation
from newsfold.web.actions.search_params import MAX_ARGS_CHARS, provenance_filters, provenance_flags
from newsfold.web.display import dress_story, learn_affixes
from newsfold.web.formatting import page_count
from newsfold.web.home import filling_window, section_arg, section_filters

DEFAULT_WINDOW = "7d"


def page_number(args: Mapping[str, str], *, limit: int) -> int:
    """The ``page`` argument: a whole number from 1 to ``limit``.

    Raises:
        ValueError: not a positive whole number, or beyond ``limit`` (the message says which).
    """
    raw = (args.get("page") or "1").strip()
    if raw.isascii() and raw.isdigit() and len(raw) > 5:
        raise InputError(f"page {raw[:20]}{'…' if len(raw) > 20 else ''} is out of range (at most {limit:,})")
    page = validation.page_number(raw)
    if page > limit:
        raise InputError(f"page {page} is out of range (at most {limit:,})")
    return page


@dataclass(frozen=True)
class TopParams:
    """What a top-stories list asks for: ``window``, ``sort`` (coverage or latest), ``site``, ``lang``,
    ``section``, ``page``. Without a ``window`` argument (``window_chosen`` false) the list takes the narrowest
    window that fills a page (``web.home.filling_window``)."""

    window: str = DEFAULT_WINDOW
    sort: str = "coverage"
    site: str | None = None
    lang: str | None = None
    page: int = 1
    originals: bool = False
    nowire: bool = False
    section: str | None = None
    window_chosen: bool = False

    @classmethod
    def from_args(cls, args: Mapping[str, str], *, page_size: int) -> TopParams:
        """Read the list from request arguments.

        Raises:
            ValueError: an unknown window or sort, a bad filter or page, an address over
                ``MAX_ARGS_CHARS`` (the message says which).
        """
        window = (args.get("window") or DEFAULT_WINDOW).strip()
        if window not in WINDOWS:
            raise InputError(f"window must be one of {', '.join(WINDOWS)}, got {window[:40]!r}")
        sort = (args.get("sort") or "coverage").strip()
        if sort not in SORTS:
            raise InputError(f"sort must be 'coverage' or 'latest', got {sort[:40]!r}")
        site, lang = validation.filter_text(args.get("site"), "site"), validation.filter_text(args.get("lang"), "lang")
        page = page_number(args, limit=MAX_STORIES // page_size)
        chars = validation.address_chars(args)
        if chars > MAX_ARGS_CHARS:
            raise InputError(f"the address is too long ({chars:,} characters after the '?'; "
                             f"at most {MAX_ARGS_CHARS:,})")  # fmt: skip
        originals, nowire = provenance_flags(args)
        return cls(window=window, sort=sort, site=site, lang=lang, page=page, originals=originals, nowire=nowire,
                   section=section_arg(args), window_chosen=bool((args.get("window") or "").strip()))  # fmt: skip

    @classmethod
    def for_form(cls, args: Mapping[str, str]) -> TopParams:
        """What the user asked for, unchecked and cut to size (to refill the page above an error)."""
        window = args["window"] if args.get("window") in WINDOWS else DEFAULT_WINDOW
        sort = args["sort"] if args.get("sort") in SORTS else "coverage"
        limit = validation.MAX_FILTER_CHARS
        return cls(window=window, sort=sort, site=(args.get("site") or "")[:limit] or None,
                   lang=(args.get("lang") or "")[:limit] or None, originals=args.get("originals") == "1",
                   nowire=args.get("nowire") == "1", section=(args.get("section") or "")[:limit] or None,
                   window_chosen=args.get("window") in WINDOWS)  # fmt: skip

    @property
    def filtered(self) -> bool:
        return bool(self.site or self.lang or self.originals or self.nowire or self.section)

    def filters(self) -> list[dict]:
        """The site, language and section filter clauses (they choose which pages count)."""
        out = section_filters(self.section)
        if self.site:
            out.append({"term": {"site": self.site}})
        if self.lang:
            out.append({"term": {"lang": self.lang}})
        return out + provenance_filters(site=self.site, originals=self.originals, nowire=self.nowire)

    def url_args(self, page: int | None = None, **changes) -> dict:
        """Arguments for ``url_for`` reproducing this list (another page, or with ``changes``); defaults left out."""
        args = {"window": self.window if self.window_chosen else None, "sort": self.sort, "site": self.site,
                "lang": self.lang, "section": self.section, "page": page or self.page,
                "originals": "1" if self.originals else None, "nowire": "1" if self.nowire else None}  # fmt: skip
        args.update(changes)
        defaults = {"page": 1, "sort": "coverage"}
        return {k: v for k, v in args.items() if v and defaults.get(k) != v}

    def as_json(self) -> dict:
        return {"window": self.window, "sort": self.sort, "site": self.site, "lang": self.lang, "page": self.page,
                "originals": self.originals, "nowire": self.nowire, "section": self.section}  # fmt: skip


@dataclass
class TopResult:
    """One page of top stories and the number of stories in the window."""

    params: TopParams
    page_size: int
    stories: int = 0
    anchor: str | None = None
    time_field: str = "published"
    results: list[dict] = field(default_factory=list)

    @property
    def total_pages(self) -> int:
        return min(page_count(self.stories, self.page_size), MAX_STORIES // self.page_size)

    def as_json(self) -> dict:
        return {
            **self.params.as_json(),
            "page_size": self.page_size,
            "total_pages": self.total_pages,
            "stories": self.stories,
            "newest": self.anchor,
            "time_field": self.time_field,
            "results": self.results,
        }


def time_field(es: Elasticsearch, settings: Settings) -> tuple[str, int | None]:
    """The date field windows use and the newest page's time: ``published``, or ``ingested`` when no page has a date."""
    index = {"index": settings.index}
    searches = [index, newest(time_field="published"), index, newest(time_field="ingested")]
    published, ingested = es.msearch(searches=searches)["responses"]
    newest_published = read_newest(published, "published")
    if newest_published is not None:
        return "published", newest_published
    return "ingested", read_newest(ingested, "ingested")


def run_top(es: Elasticsearch, settings: Settings, params: TopParams, *, page_size: int) -> TopResult:
    """The top stories of ``params``: three requests (the newest page's time, the ranked list, their faces),
    and one ``msearch`` choosing the window when none was asked for."""
    field_name, anchor = time_field(es, settings)
    if not params.window_chosen:  # the narrowest window that fills a page
        window = filling_window(es, settings, params.filters(), anchor_ms=anchor, time_field=field_name, want=page_size)
        params = replace(params, window=window)
    body = top_stories(window=params.window, sort=params.sort, page=params.page, size=page_size,
                               anchor_ms=anchor, time_field=field_name, filters=params.filters())  # fmt: skip
    res = es.search(index=settings.index, body=body).body
    ids = [b["key"] for b in page_buckets(res, page=params.page, size=page_size)]
    refs = None
    if ids:
        body = faces(ids, time_field=field_name, source=STORY_SOURCE)  # each story's face: docs/stories.md
        refs = es.search(index=settings.index, body=body).body
    total, found = read_top_stories(res, refs, page=params.page, size=page_size)
    result = TopResult(params=params, page_size=page_size, stories=total, time_field=field_name,
                       anchor=iso_millis(anchor))  # fmt: skip
    faces_of = {item["cluster_id"]: Version.from_source(item["reference"]["id"], item["reference"])
                for item in found if item["reference"]}  # fmt: skip
    affixes = learn_affixes(es, settings, [v.site for v in faces_of.values()])
    for item in found:
        face = faces_of.get(item["cluster_id"])  # one page per card: the story's face
        story = {
            "cluster_id": item["cluster_id"],
            "id": face.id if face else None,
            **story_public(face),
            "sites": item["sites"],
            "pages": item["pages"],
            "latest": item["latest"],
            "image": face.image if face else None,
            "wire": face.wire if face else None,
            "origin": face.origin.as_json() if face and face.origin else None,
        }  # fmt: skip
        versions = [{"id": story["id"], **story_public(face), "lede": face.lede if face else None}]
        result.results.append(dress_story(story, versions, affixes, card=True))
    return result


def story_public(version: Version | None) -> dict:
    """The public fields of a version (each None for no version)."""
    return version.public() if version else public_fields(None)
