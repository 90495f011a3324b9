"""Top stories, a story's page and a version's added passages: arguments, the requests they cost, what pages show.

The builders and readers are ``plugin.stories``; this module checks what a
request asks for (every value from outside is checked before anything is
sent: a bad one is a ``ValueError`` whose message the view answers with 400),
runs the requests and shapes the results for the templates, the API and the
feeds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from elasticsearch import Elasticsearch

from newsfold.plugin import stories as story_queries
from newsfold.plugin.document import fold_of
from newsfold.plugin.novelty import Passage, marked_passages
from newsfold.plugin.queries import MAX_WINDOW
from newsfold.plugin.settings import Settings
from newsfold.web import validation
from newsfold.web.display import dress_story, headline, image_of, learn_affixes, origin_of
from newsfold.web.formatting import page_count
from newsfold.web.stories import MAX_ARGS_CHARS, provenance_filters, provenance_flags

DEFAULT_WINDOW = "7d"
#: cluster and page ids are the ids newsfold or a host gave; anything longer or with control characters is refused
_ID = re.compile(r"^[^\x00-\x1f\x7f]{1,512}$")
#: fields of a version returned to clients
PUBLIC_FIELDS = ("title", "url", "site", "lang", "published")


def page_number(args: Mapping[str, str], *, limit: int) -> int:
    """The ``page`` argument: a whole number from 1 to ``limit``.

    Raises:
        ValueError: not a positive whole number, or beyond ``limit`` (the message says which).
    """
    raw = (args.get("page") or "1").strip()
    if raw.isascii() and raw.isdigit() and len(raw) > 5:
        raise ValueError(f"page {raw[:20]}{'…' if len(raw) > 20 else ''} is out of range (at most {limit:,})")
    page = validation.page_number(raw)
    if page > limit:
        raise ValueError(f"page {page} is out of range (at most {limit:,})")
    return page


def checked_id(value: str, what: str = "story") -> str:
    """A cluster or page id from a URL path.

    Raises:
        ValueError: empty, over 512 characters or with control characters.
    """
    if not _ID.match(value or ""):
        raise ValueError(f"that is not a {what} id")
    return value


@dataclass(frozen=True)
class TopParams:
    """What a top-stories list asks for: ``window``, ``sort`` (coverage or latest), ``site``, ``lang``, ``page``."""

    window: str = DEFAULT_WINDOW
    sort: str = "coverage"
    site: str | None = None
    lang: str | None = None
    page: int = 1
    originals: bool = False
    nowire: bool = False

    @classmethod
    def from_args(cls, args: Mapping[str, str], *, page_size: int, query_string_chars: int = 0) -> TopParams:
        """Read the list from request arguments.

        Raises:
            ValueError: an unknown window or sort, a bad filter or page, an address over
                ``MAX_ARGS_CHARS`` (the message says which).
        """
        window = (args.get("window") or DEFAULT_WINDOW).strip()
        if window not in story_queries.WINDOWS:
            raise ValueError(f"window must be one of {', '.join(story_queries.WINDOWS)}, got {window[:40]!r}")
        sort = (args.get("sort") or "coverage").strip()
        if sort not in story_queries.SORTS:
            raise ValueError(f"sort must be 'coverage' or 'latest', got {sort[:40]!r}")
        site, lang = validation.filter_text(args.get("site"), "site"), validation.filter_text(args.get("lang"), "lang")
        page = page_number(args, limit=story_queries.MAX_STORIES // page_size)
        if query_string_chars > MAX_ARGS_CHARS:
            raise ValueError(f"the address is too long ({query_string_chars:,} characters after the '?'; "
                             f"at most {MAX_ARGS_CHARS:,})")  # fmt: skip
        originals, nowire = provenance_flags(args, site=site)
        return cls(window=window, sort=sort, site=site, lang=lang, page=page, originals=originals, nowire=nowire)

    @classmethod
    def for_form(cls, args: Mapping[str, str]) -> TopParams:
        """What the user asked for, unchecked and cut to size (to refill the page above an error)."""
        window = args["window"] if args.get("window") in story_queries.WINDOWS else DEFAULT_WINDOW
        sort = args["sort"] if args.get("sort") in story_queries.SORTS else "coverage"
        limit = validation.MAX_FILTER_CHARS
        return cls(window=window, sort=sort, site=(args.get("site") or "")[:limit] or None,
                   lang=(args.get("lang") or "")[:limit] or None, originals=args.get("originals") == "1",
                   nowire=args.get("nowire") == "1")  # fmt: skip

    @property
    def filtered(self) -> bool:
        return bool(self.site or self.lang or self.originals or self.nowire)

    def filters(self) -> list[dict]:
        """The site and language filter clauses (they choose which pages count)."""
        out = []
        if self.site:
            out.append({"term": {"site": self.site}})
        if self.lang:
            out.append({"term": {"lang": self.lang}})
        return out + provenance_filters(site=self.site, originals=self.originals, nowire=self.nowire)

    def url_args(self, page: int | None = None, **changes) -> dict:
        """Arguments for ``url_for`` reproducing this list (another page, or with ``changes``); defaults left out."""
        args = {"window": self.window, "sort": self.sort, "site": self.site, "lang": self.lang,
                "page": page or self.page, "originals": "1" if self.originals else None,
                "nowire": "1" if self.nowire else None}  # fmt: skip
        args.update(changes)
        defaults = {"page": 1, "sort": "coverage", "window": DEFAULT_WINDOW}
        return {k: v for k, v in args.items() if v and defaults.get(k) != v}

    def as_json(self) -> dict:
        return {"window": self.window, "sort": self.sort, "site": self.site, "lang": self.lang, "page": self.page,
                "originals": self.originals, "nowire": self.nowire}  # fmt: skip


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
        return min(page_count(self.stories, self.page_size), story_queries.MAX_STORIES // self.page_size)

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


def _public(source: Mapping | None) -> dict:
    source = source or {}
    return {k: source.get(k) for k in PUBLIC_FIELDS}


def time_field(es: Elasticsearch, settings: Settings) -> tuple[str, int | None]:
    """The date field windows use and the newest page's time: ``published``, or ``ingested`` when no page has a date."""
    index = {"index": settings.index}
    searches = [index, story_queries.newest(time_field="published"), index, story_queries.newest(time_field="ingested")]
    published, ingested = es.msearch(searches=searches)["responses"]
    newest_published = story_queries.read_newest(published, "published")
    if newest_published is not None:
        return "published", newest_published
    return "ingested", story_queries.read_newest(ingested, "ingested")


def run_top(es: Elasticsearch, settings: Settings, params: TopParams, *, page_size: int) -> TopResult:
    """The top stories of ``params``: three requests (the newest page's time, the ranked list, their references)."""
    field_name, anchor = time_field(es, settings)
    body = story_queries.top_stories(window=params.window, sort=params.sort, page=params.page, size=page_size,
                               anchor_ms=anchor, time_field=field_name, filters=params.filters())  # fmt: skip
    res = es.search(index=settings.index, body=body).body
    ids = [b["key"] for b in story_queries.page_buckets(res, page=params.page, size=page_size)]
    refs = None
    if ids:
        body = story_queries.references(ids, time_field=field_name, source=story_queries.STORY_SOURCE)
        refs = es.search(index=settings.index, body=body).body
    total, found = story_queries.read_top_stories(res, refs, page=params.page, size=page_size)
    result = TopResult(params=params, page_size=page_size, stories=total, time_field=field_name,
                       anchor=story_queries.iso_millis(anchor))  # fmt: skip
    origins = _origin_versions(es, settings, [item["reference"] for item in found if item["reference"]])
    affixes = learn_affixes(es, settings, [v.get("site") for v in origins.values()])
    for item in found:
        ref = item["reference"] or {}
        origin = origin_of(ref)
        shown = origins.get((origin or {}).get("id") or "") or ref
        story = {
            "cluster_id": item["cluster_id"],
            "id": ref.get("id"),
            **_public(ref),
            "sites": item["sites"],
            "pages": item["pages"],
            "latest": item["latest"],
            "image": image_of(shown) or image_of(ref),
            "wire": fold_of(ref).get("wire"),
            "origin": origin,
        }  # fmt: skip
        versions = [{"id": shown.get("id"), **_public(shown), "lede": shown.get("lede")}]
        result.results.append(dress_story(story, versions, affixes))
    return result


def _origin_versions(es: Elasticsearch, settings: Settings, references: list[dict]) -> dict[str, dict]:
    """``page id -> _source`` of each story's origin version: the reference itself, or read (one ``mget``)."""
    out = {ref["id"]: ref for ref in references}
    wanted = sorted({o["id"] for ref in references if (o := origin_of(ref)) and o["id"] not in out})
    if wanted:
        docs = es.mget(index=settings.index, ids=wanted, source=story_queries.STORY_SOURCE)["docs"]
        out.update({d["_id"]: {"id": d["_id"], **d["_source"]} for d in docs if d.get("found")})
    return out


@dataclass
class StoryParams:
    """A story page: its id and the page of versions."""

    cluster_id: str
    page: int = 1

    def url_args(self, page: int | None = None) -> dict:
        args: dict[str, str | int] = {"cluster_id": self.cluster_id}
        if (page or self.page) != 1:
            args["page"] = page or self.page
        return args


@dataclass
class StoryResult:
    """One page of a story's versions with its reference, first publisher and timeline."""

    params: StoryParams
    story: dict

    @property
    def total_pages(self) -> int:
        return min(self.story["total_pages"], MAX_WINDOW // self.story["page_size"])


def run_story(es: Elasticsearch, settings: Settings, params: StoryParams, *, page_size: int) -> StoryResult | None:
    """A story's page in one ``msearch`` (its versions and their times); None when no page has that cluster id."""
    body = story_queries.story(params.cluster_id, page=params.page, size=page_size)
    index = {"index": settings.index}
    page, times = es.msearch(searches=[index, body, index, story_queries.story_times(params.cluster_id)])["responses"]
    for res in (page, times):
        if "error" in res:
            raise RuntimeError(f"story search failed: {res['error']}")
    found = story_queries.read_story(page, times, page=params.page, size=page_size)
    if found is None:
        return None
    origin = found.get("origin") or {}
    at_hand = {v["id"]: v for v in (found["reference"], found["first"], *found["versions"]) if v}
    if origin.get("id") and origin["id"] not in at_hand:
        doc = es.options(ignore_status=404).get(
            index=settings.index, id=origin["id"], source=story_queries.STORY_SOURCE
        )
        if doc.get("found"):
            at_hand[origin["id"]] = {"id": origin["id"], **doc["_source"]}
    affixes = learn_affixes(es, settings, [v.get("site") for v in at_hand.values()])
    versions = [{**v, "id": v["id"]} for v in at_hand.values()]
    dress_story(found, versions, affixes)
    headlines = {v["id"]: v["headline"] for v in versions}
    for v in (found["reference"], found["first"], *found["versions"]):
        if v:
            v["headline"] = headlines.get(v["id"])
    if origin.get("id") in at_hand:
        origin["published"] = at_hand[origin["id"]].get("published")
        origin["title"] = at_hand[origin["id"]].get("title")
        origin["url"] = at_hand[origin["id"]].get("url")
    found["image"] = image_of(at_hand.get(origin.get("id"))) or image_of(found["reference"])
    for key in ("reference", "first"):
        if found[key]:
            found[key] = _shown(found[key])
    found["versions"] = [_shown(v) for v in found["versions"]]
    return StoryResult(params=params, story=found)


def _shown(version: dict) -> dict:
    return {"id": version["id"], **_public(version), "headline": version.get("headline"),
            "ingested": version.get("ingested"), "wire": version.get("wire"),
            "representative": version["representative"], "relation": version["relation"]}  # fmt: skip


def version_passages(
    es: Elasticsearch, settings: Settings, cluster_id: str, page_id: str
) -> tuple[dict, list[list[Passage]]] | None:
    """A version of a story and its text as paragraphs of sentences, the added ones marked.

    Two requests: the version by id (realtime) and the story's reference.
    None when the page does not exist or belongs to another story.
    """
    doc = es.options(ignore_status=404).get(index=settings.index, id=page_id)
    if not doc.get("found") or fold_of(doc["_source"]).get("cluster_id") != cluster_id:
        return None
    refs = story_queries.read_references(
        es.search(index=settings.index, body=story_queries.references([cluster_id])).body
    )
    reference = refs.get(cluster_id)
    source = doc["_source"]
    relation = story_queries.relation_of({"_id": page_id, "_source": source}, refs)
    version = {"id": page_id, **_public(source), "relation": relation,
               "reference_id": reference["_id"] if reference else None}  # fmt: skip
    version["headline"] = headline(version, learn_affixes(es, settings, [version.get("site")]))
    compared = reference is not None and reference["_id"] != page_id  # the reference adds nothing to itself
    ref_passages = fold_of(reference.get("_source")).get("passages") if reference is not None and compared else None
    return version, marked_passages(source.get("body") or "", ref_passages)
