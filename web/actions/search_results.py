"""Running the story searches of the web UI and the API.

One collapsed search gives the page of stories (one hit per story: its
best-matching version); one ``versions_of`` request gives every story's
other versions and size. Similarities between versions are computed here
from the stored MinHash signatures. A hit's public fields are ``plugin.hits``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from elasticsearch import Elasticsearch

from newsfold.plugin.fold.document import VERSION_SOURCE
from newsfold.plugin.fold.lookups import MAX_WINDOW, cluster_members
from newsfold.plugin.search.hits import StoryHit, page_clusters, read_versions, story_hits
from newsfold.plugin.search.public_query import unsupported_operators
from newsfold.plugin.search.queries import (
    SEARCH_TIMEOUT,
    collapsed_search,
    search_facets,
    story_buckets,
    story_count,
    versions_of,
)
from newsfold.plugin.search.story_face import with_faces
from newsfold.plugin.search.suggestions import read_suggestions, spelling_suggestions
from newsfold.plugin.search.version_relations import with_references
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signature import Signature, jaccard
from newsfold.web.actions.search_params import SearchParams
from newsfold.web.display import dress_story, headline, headline_highlight, learn_affixes
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
        InputError: the query is too long or the page out of range (the message says which).
    """
    return collapsed_search(params.request(page_size=page_size))


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
    result = SearchResult(
        params=params,
        page_size=page_size,
        stories=story_count(res),
        documents=int(res["hits"]["total"]["value"]),
    )
    cluster_ids = page_clusters(res)
    if not res["hits"]["hits"]:
        return result
    listing = with_references(versions_of(cluster_ids, per_cluster=per_cluster), agg="clusters")
    listing = with_faces(listing, agg="clusters", source=VERSION_SOURCE)  # the face: docs/stories.md
    versions = es.search(index=settings.index, **listing).body
    found_stories = story_hits(res, versions, agg="clusters")
    result.results = [story(found) for found in found_stories]
    sites = [s["site"] for found in result.results for s in (found, *found["versions"])]
    affixes = learn_affixes(es, settings, sites)
    for found, hit in zip(result.results, found_stories, strict=True):
        shown = {**found, "lede": hit.shown.lede}
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


def similarity(a: Signature | None, b: Signature | None) -> float | None:
    """Estimated Jaccard resemblance of two signatures (None when they cannot be compared)."""
    if a is None or b is None or len(a.hashvalues) != len(b.hashvalues):
        return None
    return round(jaccard(a, b), 4)


def story(found: StoryHit) -> dict:
    """A result: the shown version, its highlights and the story's other versions.

    ``size`` is the number of pages of the story; ``versions`` lists the other
    versions returned by ``versions_of`` (at most its ``per_cluster``), each
    with its similarity to the shown version and its ``relation`` to the
    story's reference (None when unknown).
    """
    shown = found.shown
    others = [
        {
            "id": version.id,
            **version.public(),
            "wire": version.wire,
            "lede": version.lede,
            "similarity": similarity(shown.signature, version.signature),
            "relation": version.relation,
        }
        for version in found.versions
    ]
    return {
        "cluster_id": shown.cluster_id,
        "id": shown.id,
        **shown.public(),
        "highlight": list(shown.fragments),
        "title_highlight": shown.title_highlight,
        "relation": shown.relation,
        "image": shown.image,
        "wire": shown.wire,
        "origin": shown.origin.as_json() if shown.origin else None,
        "versions": others,
        "size": found.size,
        "matched": None if found.matched.id == shown.id else {"id": found.matched.id, **found.matched.public()},
    }


def load_cluster(es: Elasticsearch, settings: Settings, cluster_id: str, *, limit: int = 1000) -> dict | None:
    """A cluster's members, oldest first (at most ``limit``), or None when no page has that cluster id."""
    res = es.search(index=settings.index, **cluster_members(cluster_id, size=limit))
    pages = read_versions(res.body)
    if not pages:
        return None
    size = int(res["hits"]["total"]["value"])
    affixes = learn_affixes(es, settings, [page.site for page in pages])
    members = []
    for page in pages:
        members.append(
            {
                "id": page.id,
                **page.public(),
                "headline": headline(page.public(), affixes),
                "ingested": page.ingested,
                "similarity": page.stored.get("similarity"),
                "matched_id": page.stored.get("matched_id"),
            }
        )
    return {"cluster_id": cluster_id, "size": size, "members": members, "truncated": size > len(members)}
