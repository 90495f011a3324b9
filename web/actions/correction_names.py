"""Pages and stories named as an editor reads them in corrections: the headline, with the id beside it.

A page's headline is its own title; a story's is its face's (``plugin.search.story_face``: the version an
editor made representative, else the fullest, else the earliest), as every other surface shows it. One
realtime ``mget`` reads the pages (and the story each is in now), one search the stories' faces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from newsfold.plugin.fold.by_id import read_docs
from newsfold.plugin.fold.document import CLUSTER_ID
from newsfold.plugin.search.hits import Version, read_versions
from newsfold.plugin.search.story_face import faces
from newsfold.web.display import headline_filter
from newsfold.web.resources import get_es, get_settings


def named(headline: str | None, id_: str | None) -> str:
    """``“Headline” (id)``, or the id alone when there is no headline (a story merged away, a page gone)."""
    if id_ is None:
        return "(gone)"
    return f"“{headline}” ({id_})" if headline else id_


@dataclass
class Names:
    """Headlines by page id and by story id, and the story each page is in now."""

    pages: dict[str, str] = field(default_factory=dict)
    stories: dict[str, str] = field(default_factory=dict)
    now: dict[str, str] = field(default_factory=dict)

    def page(self, page_id: str) -> str:
        return named(self.pages.get(page_id), page_id)

    def story(self, story_id: str | None) -> str:
        return named(self.stories.get(story_id or ""), story_id)

    def said(self, message: str) -> str:
        """``message`` with each page and story it names by id (quoted or not) named ``“Headline” (id)``: an id
        is a page's when the nearest word before it is "page", else a story's ("cluster", "story")."""
        ids = sorted({i for i, h in (*self.pages.items(), *self.stories.items()) if h}, key=len, reverse=True)
        if not ids:
            return message
        alternatives = "|".join(re.escape(i) for i in ids)
        pattern = re.compile(rf"(?<![\w.-])'?({alternatives})'?(?![\w.-])")

        def name(found: re.Match[str]) -> str:
            before = message[: found.start()].lower()
            as_page = before.rfind("page") > max(before.rfind("cluster"), before.rfind("stor"))
            first, then = (self.pages, self.stories) if as_page else (self.stories, self.pages)
            headline = first.get(found.group(1)) or then.get(found.group(1))
            return named(headline, found.group(1))

        return pattern.sub(name, message)


def read_names(page_ids: Iterable[str] = (), story_ids: Iterable[str] = ()) -> Names:
    """The headlines of some pages, of the stories they are in now, and of some other stories."""
    es, settings = get_es(), get_settings()
    names = Names()
    for doc in read_docs(es, settings.index, [p for p in page_ids if p], source=["title", "site", CLUSTER_ID]):
        if doc.get("found"):
            page = Version.from_hit(doc)
            names.pages[page.id] = headline_filter(page.title, page.site)
            if page.cluster_id:
                names.now[page.id] = page.cluster_id
    stories = [s for s in dict.fromkeys([*story_ids, *names.now.values()]) if s]
    if stories:
        res = es.search(index=settings.index, **faces(stories, source=["title", "site"]))
        for face in read_versions(res.body):
            if face.cluster_id:
                names.stories[face.cluster_id] = headline_filter(face.title, face.site)
    return names
