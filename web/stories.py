"""Running the story searches of the web UI and the API.

One collapsed search gives the page of stories (one hit per story: its
best-matching version); one ``versions_of`` request gives every story's
other versions and size. Similarities between versions are computed here
from the stored MinHash signatures.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from elasticsearch import Elasticsearch

from newsfold.plugin import queries
from newsfold.plugin.document import cluster_of, flat, fold_of, read_signature
from newsfold.plugin.provenance import no_wire_filter, originals_filter
from newsfold.plugin.queries import parse_day, story_count
from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import Signature, jaccard
from newsfold.plugin.stories import read_references, relation_of, with_references
from newsfold.web.display import dress_story, headline, headline_highlight, image_of, learn_affixes, origin_of
from newsfold.web.formatting import page_count
from newsfold.web.validation import MAX_FILTER_CHARS, filter_text, query_text

MAX_PAGE_DIGITS = 6
#: a longer query string is refused whole (a browser form never sends one)
MAX_ARGS_CHARS = 4096
#: the URL arguments whose names are not those of their ``SearchParams`` field
URL_NAMES = {"date_from": "from", "date_to": "to"}
#: fields of a version or cluster member returned to clients (never the signature)
PUBLIC_FIELDS = ("title", "url", "site", "lang", "published")


@dataclass(frozen=True)
class SearchParams:
    """What the user asked for: query, filters, order and page number.

    The URL arguments are ``q``, ``site``, ``lang``, ``from`` and ``to``
    (``YYYY-MM-DD``, inclusive, on the published date), ``sort``
    (``relevance`` or ``date``) and ``page``: the whole state of a search is
    in its URL, so any result page can be shared.
    """

    q: str = ""
    site: str | None = None
    lang: str | None = None
    date_from: str | None = None
    date_to: str | None = None
    sort: str = "relevance"
    page: int = 1
    originals: bool = False
    nowire: bool = False

    @classmethod
    def from_args(cls, args: Mapping[str, str], *, query_string_chars: int = 0) -> SearchParams:
        """Read the search from request arguments.

        Args:
            args: the request's query arguments.
            query_string_chars: length of the raw query string (refused above ``MAX_ARGS_CHARS``).

        Raises:
            ValueError: a value is malformed or out of range; the message says which and how.
        """
        q = query_text(args.get("q"))  # said first: the most likely reason for a long address
        values: dict[str, str | None] = {name: filter_text(args.get(name), name) for name in ("site", "lang")}
        days = {}
        for arg, name in (("from", "date_from"), ("to", "date_to")):
            value = (args.get(arg) or "").strip()
            values[name] = value or None
            if value:
                days[arg] = parse_day(value, f"'{arg}'")
        if len(days) == 2 and days["from"] > days["to"]:
            raise ValueError(f"the date range is empty: 'from' {days['from']} is after 'to' {days['to']}")
        sort = (args.get("sort") or "relevance").strip()
        if sort not in queries.SORTS:
            raise ValueError(f"sort must be 'relevance' or 'date', got {sort[:40]!r}")
        raw_page = (args.get("page") or "1").strip()
        if not (raw_page.isascii() and raw_page.isdigit()) or not raw_page.strip("0"):
            raise ValueError(f"page must be a positive whole number, got {raw_page[:20]!r}")
        if len(raw_page) > MAX_PAGE_DIGITS:
            shown = raw_page if len(raw_page) <= 20 else raw_page[:20] + "…"
            raise ValueError(f"page {shown} is out of range (at most 10,000 results)")
        if query_string_chars > MAX_ARGS_CHARS:  # checked last: a message about a known argument helps more
            raise ValueError(
                f"the address is too long ({query_string_chars:,} characters after the '?'; at most {MAX_ARGS_CHARS:,})"
            )
        originals, nowire = provenance_flags(args, site=values["site"])
        return cls(q=q, sort=sort, page=int(raw_page), originals=originals, nowire=nowire, **values)

    @classmethod
    def for_form(cls, args: Mapping[str, str]) -> SearchParams:
        """What the user typed, unchecked and cut to size: refills the form above an error message."""

        def text(name: str, limit: int) -> str:
            return (args.get(name) or "").strip()[:limit]

        return cls(
            q=text("q", 2 * queries.MAX_QUERY_CHARS),
            site=text("site", MAX_FILTER_CHARS) or None,
            lang=text("lang", MAX_FILTER_CHARS) or None,
            date_from=text("from", 40) or None,
            date_to=text("to", 40) or None,
            sort=text("sort", 40) or "relevance",
            originals=args.get("originals") == "1",
            nowire=args.get("nowire") == "1",
        )

    @property
    def filtered(self) -> bool:
        """Whether any filter narrows the search."""
        return bool(self.site or self.lang or self.date_from or self.date_to or self.originals or self.nowire)

    def args(self) -> dict:
        """The search as its URL arguments, every one of them (a flag that is set is ``"1"``)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[URL_NAMES.get(f.name, f.name)] = ("1" if value else None) if isinstance(value, bool) else value
        return out

    def filters(self) -> list[dict]:
        """The provenance filter clauses ("this site's own stories", "no wire stories")."""
        return provenance_filters(site=self.site, originals=self.originals, nowire=self.nowire)

    def url_args(self, page: int | None = None, **changes) -> dict:
        """Arguments for ``url_for`` that reproduce this search (on another page, or with ``changes``)."""
        args = {**self.args(), "page": page or self.page, **changes}
        defaults = {"page": 1, "sort": "relevance"}
        return {k: v for k, v in args.items() if v and defaults.get(k) != v}

    def as_json(self) -> dict:
        """The search as the API reports it (the text query is ``query``)."""
        args = self.args()
        return {"query": args.pop("q"), **args, "originals": self.originals, "nowire": self.nowire}


@dataclass
class SearchResult:
    """One page of stories and the counts of the whole result."""

    params: SearchParams
    page_size: int
    stories: int
    documents: int
    results: list[dict] = field(default_factory=list)

    @property
    def total_pages(self) -> int:
        """Pages of stories, within the 10,000-result window of from/size paging."""
        return min(page_count(self.stories, self.page_size), queries.MAX_WINDOW // self.page_size)

    def as_json(self) -> dict:
        """The API's answer: the search, the counts and the page of stories."""
        return {
            **self.params.as_json(),
            "page_size": self.page_size,
            "total_pages": self.total_pages,
            "stories": self.stories,
            "documents": self.documents,
            "results": self.results,
        }


def search_body(params: SearchParams, *, page_size: int) -> dict:
    """The collapsed search for ``params``.

    Raises:
        ValueError: the query is too long or the page out of range (the message says which).
    """
    return queries.collapsed_search(
        params.q,
        page=params.page,
        size=page_size,
        sort=params.sort,
        site=params.site,
        lang=params.lang,
        date_from=params.date_from,
        date_to=params.date_to,
        filters=params.filters(),
    )


def _flag(args: Mapping[str, str], name: str) -> bool:
    raw = (args.get(name) or "").strip()
    if raw not in ("", "0", "1"):
        raise ValueError(f"{name} must be 1 or 0, got {raw[:20]!r}")
    return raw == "1"


def provenance_flags(args: Mapping[str, str], *, site: str | None) -> tuple[bool, bool]:
    """``(originals, nowire)`` from request arguments.

    Raises:
        ValueError: a value other than 1 or 0, or ``originals`` without a site.
    """
    originals, nowire = _flag(args, "originals"), _flag(args, "nowire")
    if originals and not site:
        raise ValueError("originals=1 keeps the stories a site published first: choose a site too (site=...)")
    return originals, nowire


def provenance_filters(*, site: str | None, originals: bool, nowire: bool) -> list[dict]:
    """The filter clauses of the provenance flags."""
    out = []
    if originals and site:
        out.append(originals_filter(site))
    if nowire:
        out.append(no_wire_filter())
    return out


@dataclass
class FilterChoices:
    """The values the site and language filters offer, each with its number of stories."""

    sites: list[tuple[str, int]] = field(default_factory=list)
    langs: list[tuple[str, int]] = field(default_factory=list)

    @classmethod
    def chosen(cls, params: SearchParams) -> FilterChoices:
        """Only the values already chosen (when the search could not run)."""
        return cls(sites=[(params.site, 0)] if params.site else [], langs=[(params.lang, 0)] if params.lang else [])


def filter_choices(es: Elasticsearch, settings: Settings, params: SearchParams) -> FilterChoices:
    """Sites and languages of the pages matching the query and dates, counted in stories (a story with versions
    on two sites counts for each); a chosen value is always offered."""
    res = es.search(
        index=settings.index, **queries.search_facets(params.q, date_from=params.date_from, date_to=params.date_to)
    )
    aggs = res.get("aggregations") or {}

    def values(name: str, chosen: str | None) -> list[tuple[str, int]]:
        found = [(str(b["key"]), b["stories"]) for b in queries.story_buckets(aggs.get(name) or {})]
        if chosen and chosen not in {key for key, _ in found}:
            found.append((chosen, 0))
        return sorted(found, key=lambda item: item[0].lower())

    return FilterChoices(sites=values("sites", params.site), langs=values("langs", params.lang))


def run_search(
    es: Elasticsearch, settings: Settings, params: SearchParams, body: dict, *, page_size: int, per_cluster: int = 20
) -> SearchResult:
    """Execute ``body`` and fetch the versions of the stories found, in two requests.

    The second request also reads each story's reference (``plugin.stories.with_references``), so every
    version comes with its relation to it (``plugin.novelty``: "adds 2 paragraphs", "shorter").
    """
    res = es.search(index=settings.index, **body).body
    hits = res["hits"]["hits"]
    result = SearchResult(
        params=params,
        page_size=page_size,
        stories=story_count(res),
        documents=int(res["hits"]["total"]["value"]),
    )
    if not hits:
        return result
    cluster_ids = list(dict.fromkeys(c for hit in hits if (c := cluster_of(hit["_source"]))))
    body = with_references(queries.versions_of(cluster_ids, per_cluster=per_cluster), agg="clusters")
    versions = es.search(index=settings.index, **body).body
    buckets = {b["key"]: b for b in versions["aggregations"]["clusters"]["buckets"]}
    references = read_references(versions, agg="clusters")
    shown_hits = [representative_or(hit, buckets.get(cluster_of(hit["_source"]))) for hit in hits]
    result.results = [story(hit, buckets.get(cluster_of(hit["_source"])), references) for hit in shown_hits]
    sites = [s["site"] for found in result.results for s in (found, *found["versions"])]
    affixes = learn_affixes(es, settings, sites)
    for found, hit in zip(result.results, shown_hits, strict=True):
        shown = {**found, "lede": hit["_source"].get("lede")}
        dress_story(found, [shown, *found["versions"]], affixes, highlights=found["highlight"])
        found["headline_highlight"] = headline_highlight(found.get("headline"), found["title_highlight"])
        for version in found["versions"]:
            version.pop("lede", None)
    return result


def representative_or(hit: dict, bucket: dict | None) -> dict:
    """The version an editor made its story's representative, else the hit itself.

    The search ranks stories by their best version (the representative's
    score boost only nudges it); the representative is then shown in the
    story's place, without highlights of its own.
    """
    if fold_of(hit["_source"]).get("representative"):
        return hit
    for version in (bucket or {}).get("versions", {}).get("hits", {}).get("hits", []):
        if fold_of(version["_source"]).get("representative"):
            return {**version, "highlight": {}}
    return hit


def decode_signature(source: Mapping) -> Signature | None:
    """The stored signature of a document, or None when it is missing or unreadable."""
    try:
        return read_signature(dict(source))
    except (binascii.Error, ValueError, TypeError):
        return None


def similarity(a: Signature | None, b: Signature | None) -> float | None:
    """Estimated Jaccard resemblance of two signatures (None when they cannot be compared)."""
    if a is None or b is None or len(a.hashvalues) != len(b.hashvalues):
        return None
    return round(jaccard(a, b), 4)


def story(hit: dict, bucket: dict | None, references: Mapping[str, Mapping] | None = None) -> dict:
    """A result: the shown version, its highlights and the story's other versions.

    ``size`` is the number of pages of the story; ``versions`` lists the other
    versions returned by ``versions_of`` (at most its ``per_cluster``), each
    with its similarity to the shown version and its ``relation`` to the
    story's reference (None when unknown).
    """
    references = references or {}
    src = hit["_source"]
    highlight = hit.get("highlight") or {}
    shown = decode_signature(src)
    others = []
    for version in (bucket or {}).get("versions", {}).get("hits", {}).get("hits", []):
        if version["_id"] == hit["_id"]:
            continue
        vsrc = version["_source"]
        others.append(
            {
                "id": version["_id"],
                **{k: vsrc.get(k) for k in PUBLIC_FIELDS},
                "wire": fold_of(vsrc).get("wire"),
                "lede": vsrc.get("lede"),
                "similarity": similarity(shown, decode_signature(vsrc)),
                "relation": relation_of(version, references),
            }
        )
    title_highlight = highlight.get("title") or []
    return {
        "cluster_id": cluster_of(src),
        "id": hit["_id"],
        **{k: src.get(k) for k in PUBLIC_FIELDS},
        "highlight": list(highlight.get("body") or []),
        "title_highlight": title_highlight[0] if title_highlight else None,
        "relation": relation_of(hit, references),
        "image": image_of(src),
        "wire": fold_of(src).get("wire"),
        "origin": origin_of(src),
        "versions": others,
        "size": int(bucket["doc_count"]) if bucket else 1 + len(others),
    }


def load_cluster(es: Elasticsearch, settings: Settings, cluster_id: str, *, limit: int = 1000) -> dict | None:
    """A cluster's members, oldest first (at most ``limit``), or None when no page has that cluster id."""
    res = es.search(index=settings.index, **queries.cluster_members(cluster_id, size=limit))
    hits = res["hits"]["hits"]
    if not hits:
        return None
    size = int(res["hits"]["total"]["value"])
    affixes = learn_affixes(es, settings, [(hit["_source"] or {}).get("site") for hit in hits])
    members = []
    for hit in hits:
        src = flat(hit["_source"])
        members.append(
            {
                "id": hit["_id"],
                **{k: src.get(k) for k in PUBLIC_FIELDS},
                "headline": headline(src, affixes),
                "ingested": src.get("ingested"),
                "similarity": src.get("similarity"),
                "matched_id": src.get("matched_id"),
            }
        )
    return {"cluster_id": cluster_id, "size": size, "members": members, "truncated": size > len(members)}
