"""A story's page and a version's added passages: the arguments, the requests they cost, what the pages show.

The builders and readers are ``plugin.search.story_queries``; the ids come from the URL
path and are checked here before anything is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from elasticsearch import Elasticsearch

from newsfold.plugin.errors import InputError
from newsfold.plugin.extract.headlines import shorten
from newsfold.plugin.fold.lookups import MAX_WINDOW
from newsfold.plugin.hits import public_fields
from newsfold.plugin.ids import MAX_ID_BYTES, MAX_NAME_BYTES, id_problem
from newsfold.plugin.search.hits import Version, read_versions
from newsfold.plugin.search.story_versions import STORY_SOURCE, read_story, story_times
from newsfold.plugin.search.story_versions import story as story_request
from newsfold.plugin.search.version_relations import read_references, references
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.novelty import Passage, marked_passages
from newsfold.web.display import dress_story, headline, image_of, learn_affixes


def checked_id(value: str, what: str = "story") -> str:
    """A story name or page id from a URL path, within the id grammar (``plugin.ids``).

    Raises:
        ValueError: outside the grammar (empty, too long, control characters, ...).
    """
    problem = id_problem(value, max_bytes=MAX_NAME_BYTES if what == "story" else MAX_ID_BYTES)
    if problem is not None:
        raise InputError(f"that is not a {what} id: the id {problem}")
    return value


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
    body = story_request(params.cluster_id, page=params.page, size=page_size)
    index = {"index": settings.index}
    page, times = es.msearch(searches=[index, body, index, story_times(params.cluster_id)])["responses"]
    for res in (page, times):
        if "error" in res:
            raise RuntimeError(f"story search failed: {res['error']}")
    found = read_story(page, times, page=params.page, size=page_size)
    if found is None:
        return None
    origin = found.get("origin") or {}
    at_hand = {v["id"]: v for v in (found["reference"], found["first"], found["face"], *found["versions"]) if v}
    if origin.get("id") and origin["id"] not in at_hand:
        doc = es.options(ignore_status=404).get(index=settings.index, id=origin["id"], source=STORY_SOURCE)
        for read in read_versions({"docs": [doc.body]}):
            at_hand[read.id] = {"id": read.id, **read.public(), "lede": read.lede, "image": read.image}
    affixes = learn_affixes(es, settings, [v.get("site") for v in at_hand.values()])
    versions = [{**v, "id": v["id"]} for v in at_hand.values()]
    dress_story(found, versions, affixes)
    dressed = {v["id"]: v for v in versions}
    for v in (found["reference"], found["first"], found["face"], *found["versions"]):
        if v:
            v["headline"], v["publication"] = dressed[v["id"]]["headline"], dressed[v["id"]]["publication"]
    if origin.get("id") in at_hand:
        origin["published"] = at_hand[origin["id"]].get("published")
        origin["title"] = at_hand[origin["id"]].get("title")
        origin["url"] = at_hand[origin["id"]].get("url")
    face = found["face"]
    if face:  # the story's one face (docs/stories.md): its headline and picture, as on every other surface
        found["headline"] = face["headline"] or found.get("headline")
    found["image"] = image_of(face) if face else None
    for key in ("reference", "first", "face"):
        if found[key]:
            found[key] = _shown(found[key])
    found["versions"] = [_shown(v) for v in found["versions"]]
    return StoryResult(params=params, story=found)


def _shown(version: dict) -> dict:
    return {"id": version["id"], **public_fields(version), "headline": version.get("headline"),
            "publication": version.get("publication"),
            "ingested": version.get("ingested"), "wire": version.get("wire"),
            "representative": version["representative"], "relation": version["relation"]}  # fmt: skip


def version_passages(
    es: Elasticsearch, settings: Settings, cluster_id: str, page_id: str
) -> tuple[dict, list[list[Passage]]] | None:
    """A version of a story and its text as paragraphs of sentences, the added ones marked.

    Two requests: the version by id (realtime) and the story's reference.
    None when the page does not exist or belongs to another story.
    """
    doc = es.options(ignore_status=404).get(index=settings.index, id=page_id).body
    found = read_versions({"docs": [doc]})
    if not found or found[0].cluster_id != cluster_id:
        return None
    refs = read_references(es.search(index=settings.index, body=references([cluster_id])).body)
    page = Version.from_hit(doc, refs)
    reference = Version.from_hit(refs[cluster_id]) if cluster_id in refs else None
    version: dict[str, Any] = {"id": page_id, **page.public(), "relation": page.relation,
               "reference_id": reference.id if reference else None}  # fmt: skip
    version["headline"] = headline(version, learn_affixes(es, settings, [version.get("site")]))
    compared = reference is not None and reference.id != page_id  # the reference adds nothing to itself
    ref_passages = reference.stored.get("passages") if reference is not None and compared else None
    return version, marked_passages(page.stored.get("body") or "", ref_passages)


#: the most added passages a public version page quotes (each at most ``WebSettings.public_passage_chars``)
MAX_PUBLIC_PASSAGES = 5


def public_passages(paragraphs: list[list[Passage]], *, limit: int) -> tuple[list[str], int]:
    """What a version adds, as the public sees it: each run of added sentences in a paragraph, cut to ``limit``
    characters (with "…"), at most ``MAX_PUBLIC_PASSAGES`` of them; and how many runs there are in all."""
    runs: list[str] = []
    for row in paragraphs:
        run: list[str] = []
        for passage in [*row, Passage("", False)]:
            if passage.added:
                run.append(passage.text)
            elif run:
                runs.append(shorten(" ".join(run), limit))
                run = []
    return runs[:MAX_PUBLIC_PASSAGES], len(runs)
