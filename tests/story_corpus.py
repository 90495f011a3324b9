"""A small corpus of stories on several sites and days, for the stories tests (plugin, API, pages, browser)."""

from __future__ import annotations

from newsfold.plugin import ingest
from newsfold.plugin.sign.signing import TextMeta, sign_text
from tests.pages import story as paragraphs

# local paragraphs without stop words, like the made-up stories (so the copy is signed the same way)
LOCAL = [
    "Ashford councillors warned Tuesday closure costs town two bus routes plus depot staff.",
    "Ashford Gazette reporters asked operator whether drivers move towards new depot site yesterday.",
]
# an archive from years ago: the windows count back from its newest page (2015-03-10 12:00)
PAGES = [
    # ferry: 4 sites, first on a.test; b.test is a shorter copy, d.test adds two local paragraphs
    ("ferry-a", 401, "a.test", "2015-03-09T08:00:00Z", "full"),
    ("ferry-b", 401, "b.test", "2015-03-09T09:00:00Z", "short"),
    ("ferry-c", 401, "c.test", "2015-03-10T07:00:00Z", "full"),
    ("ferry-d", 401, "d.test", "2015-03-10T08:00:00Z", "local"),
    # museum: 2 sites, newer than lantern (which also has 2): ties go to the more recent story
    ("museum-a", 402, "a.test", "2015-03-10T11:00:00Z", "full"),
    ("museum-b", 402, "b.test", "2015-03-10T12:00:00Z", "full"),
    ("lantern-a", 403, "a.test", "2015-03-08T10:00:00Z", "full"),
    ("lantern-c", 403, "c.test", "2015-03-08T11:00:00Z", "full"),
    # old: 3 sites three weeks earlier, only in the 30-day and "all" windows
    ("old-a", 404, "a.test", "2015-02-17T10:00:00Z", "full"),
    ("old-b", 404, "b.test", "2015-02-17T11:00:00Z", "full"),
    ("old-c", 404, "c.test", "2015-02-18T11:00:00Z", "full"),
    # single: one German page, the newest of all
    ("single", 405, "e.test", "2015-03-10T12:00:00Z", "full"),
]


def body_of(seed: int, variant: str) -> str:
    paras = paragraphs(seed, sentences=16)
    if variant == "short":
        paras = paras[:4]
    elif variant == "local":
        paras = [*paras[:3], LOCAL[0], *paras[3:], LOCAL[1]]
    return "\n".join(paras)


def ingest_story_corpus(es, settings) -> dict[str, str]:
    """Ingest :data:`PAGES` into ``settings.index``; the cluster id of each page."""
    signed = [
        sign_text(body_of(seed, variant),
                  TextMeta(title=f"{pid} headline", url=f"https://{site}/{pid}", page_id=pid, site=site,
                           published=published, lang="de" if pid == "single" else "en"),
                  settings=settings)
        for pid, seed, site, published, variant in PAGES
    ]  # fmt: skip
    outcomes = ingest(signed, client=es, settings=settings)
    assert {o.status for o in outcomes} <= {"new", "duplicate"}
    clusters = {o.page_id: o.cluster_id for o in outcomes}
    assert len({clusters[p] for p in ("ferry-a", "ferry-b", "ferry-c", "ferry-d")}) == 1
    es.indices.refresh(index=settings.index)
    return clusters
