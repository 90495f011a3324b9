"""Running the story searches of the web UI and the API.

One collapsed search gives the page of stories (one hit per story: its
best-matching version); one ``versions_of`` request gives every story's
other versions and size. Similarities between versions are computed here
from the stored MinHash signatures. A hit's public fields are ``plugin.hits``.
"""

from __future__ import annotations

import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field

from elasticsearch import Elasticsearch

from newsfold.plugin.fold.document import cluster_of, flat, fold_of, read_signature
from newsfold.plugin.fold.lookups import MAX_WINDOW, cluster_members
from newsfold.plugin.hits import public_fields
from newsfold.plugin.search.public_query import unsupported_operators
from newsfold.plugin.search.queries import (
    SEARCH_TIMEOUT,
    collapsed_search,
    search_facets,
    search_query,
    story_buckets,
    story_count,
    versions_of,
)
from newsfold.plugin.search.shown_version import shown_version
from newsfold.plugin.search.suggestions import read_suggestions, spelling_suggestions
from newsfold.plugin.search.version_relations import read_references, relation_of, with_references
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import Signature, jaccard
from newsfold.web.actions.search_params import SearchParams
from newsfold.web.display import dress_story, headline, headline_highlight, image_of, learn_affixes, origin_of
from newsfold.web.formatting import page_count


@dataclass
class SearchResult:
    """One page of stories and the counts of the whole result."""

    params: SearchParams
    page_size: int
    stories: int
    documents: int
    results: list[dict] = field(default_factory=list)
    #: respellings of a query that found nothing (``plugin.search.suggestions``)
    suggestions: list[str] = field(default_factory=list)

    @property
    def total_pages(self) -> int:
        """Pages of stories, within the 10,000-result window of from/size paging."""
        return min(page_count(self.stories, self.page_size), MAX_WINDOW // self.page_size)

    @property
    def unsupported(self) -> list[str]:
        """The parts of the query that use an operator public searches do not support (``wor*``, ``counc~2``);
        none in a pasted passage, read as plain text."""
        return [] if self.params.passage else unsupported_operators(self.params.q)

    @property
    def notice(self) -> str | None:
        """What to tell the user about the query's unsupported operators, or None."""
        if not self.unsupported:
            return None
        parts = ", ".join(self.unsupported)
        return (f"{parts}: prefix (word*), fuzzy (word~2) and phrase slop (\"…\"~2) searches are not supported; "
                "the characters were searched as they are. Search for whole words instead.")  # fmt: skip

    def as_json(self) -> dict:
        """The API's answer: the search, the counts and the page of stories."""
        return {
            **self.params.as_json(),
            "page_size": self.page_size,
            "total_pages": self.total_pages,
            "stories": self.stories,
            "documents": self.documents,
            "unsupported_operators": self.unsupported,
            "notice": self.notice,
            "suggestions": self.suggestions,
            "results": self.results,
        }


def search_body(params: SearchParams, *, page_size: int) -> dict:
    """The collapsed search for ``params``.

    Raises:
        ValueError: the query is too long or the page out of range (the message says which).
    """
    return collapsed_search(
        params.q,
        page=params.page,
        size=page_size,
        sort=params.sort,
        site=params.site,
        lang=params.lang,
        date_from=params.days()[0],  # an empty range is a match_none filter instead
        date_to=params.days()[1],
        filters=params.filters(),
    )


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
    date_from, date_to = params.days()
    res = es.search(index=settings.index, **search_facets(params.q, date_from=date_from, date_to=date_to))
    aggs = res.get("aggregations") or {}

    def values(name: str, chosen: str | None) -> list[tuple[str, int]]:
        found = [(str(b["key"]), b["stories"]) for b in story_buckets(aggs.get(name) or {})]
        if chosen and chosen not in {key for key, _ in found}:
            found.append((chosen, 0))
        return sorted(found, key=lambda item: item[0].lower())

    return FilterChoices(sites=values("sites", params.site), langs=values("langs", params.lang))


def run_search(
    es: Elasticsearch, settings: Settings, params: SearchParams, body: dict, *, page_size: int, per_cluster: int = 20
) -> SearchResult:
    """Execute ``body`` and fetch the versions of the stories found, in two requests.

    The second request also reads each story's reference (``plugin.search.version_relations.with_references``), so every
    version comes with its relation to it (``plugin.sign.novelty``: "adds 2 paragraphs", "shorter").
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
    listing = versions_of(cluster_ids, per_cluster=per_cluster, scored_by=search_query(body))
    versions = es.search(index=settings.index, **with_references(listing, agg="clusters")).body
    buckets = {b["key"]: b for b in versions["aggregations"]["clusters"]["buckets"]}
    references = read_references(versions, agg="clusters")
    shown_hits = [shown_of(hit, buckets.get(cluster_of(hit["_source"])), references) for hit in hits]
    result.results = [story(hit, buckets.get(cluster_of(hit["_source"])), references) for hit in shown_hits]
    sites = [s["site"] for found in result.results for s in (found, *found["versions"])]
    affixes = learn_affixes(es, settings, sites)
    for found, hit in zip(result.results, shown_hits, strict=True):
        shown = {**found, "lede": hit["_source"].get("lede")}
        dress_story(found, [shown, *found["versions"]], affixes, highlights=found["highlight"], card=True)
        found["headline_highlight"] = headline_highlight(found.get("headline"), found["title_highlight"])
        for version in found["versions"]:
            version.pop("lede", None)
    return result


def suggest_spellings(es: Elasticsearch, settings: Settings, result: SearchResult) -> None:
    """Fill ``result.suggestions`` when its query (not a pasted passage) found no story at all."""
    params = result.params
    if result.stories or not params.q or params.passage:
        return
    body = spelling_suggestions(params.q, timeout=SEARCH_TIMEOUT)
    if body is not None:
        result.suggestions = read_suggestions(es.search(index=settings.index, **body).body, params.q)


def shown_of(hit: dict, bucket: dict | None, references: Mapping[str, Mapping]) -> dict:
    """The version a result shows (``plugin.search.shown_version``): the editor's representative, else the
    fullest version that matched, so that its headline, site, date and link are one page's.

    The hit's marked words stay with the version shown in its place only when the hit holds nothing the
    story's reference lacks (its body fragments are then in the fuller text too); else the snippet is the lede.
    """
    found = shown_version(hit, (bucket or {}).get("versions", {}).get("hits", {}).get("hits", []), references)
    if found is hit:
        return hit
    kind = (relation_of(hit, references) or {}).get("kind")
    if fold_of(found["_source"]).get("representative") or kind != "shorter":
        return {**found, "highlight": {}}
    return {**found, "highlight": hit.get("highlight") or {}}


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
                **public_fields(vsrc),
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
        **public_fields(src),
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
    res = es.search(index=settings.index, **cluster_members(cluster_id, size=limit))
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
                **public_fields(src),
                "headline": headline(src, affixes),
                "ingested": src.get("ingested"),
                "similarity": src.get("similarity"),
                "matched_id": src.get("matched_id"),
            }
        )
    return {"cluster_id": cluster_id, "size": size, "members": members, "truncated": size > len(members)}
