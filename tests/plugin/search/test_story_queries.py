"""Top stories, a story's versions and version relations (plugin/search/) on a real index."""

from __future__ import annotations

import pytest

from newsfold.plugin import fold_search, folded_hits
from newsfold.plugin.edit.corrections import set_representative
from newsfold.plugin.search.story_queries import (
    MAX_STORIES,
    newest,
    page_buckets,
    read_newest,
    read_top_stories,
    top_stories,
)
from newsfold.plugin.search.story_versions import (
    STORY_SOURCE,
    read_story,
    story,
    story_times,
    timeline_bins,
)
from newsfold.plugin.search.version_relations import add_relations, references
from tests.story_corpus import ingest_story_corpus


@pytest.fixture
def corpus(es, settings):
    return ingest_story_corpus(es, settings)


def run_top(es, settings, **kwargs):
    anchor = read_newest(es.search(index=settings.index, body=newest()))
    res = es.search(index=settings.index, body=top_stories(anchor_ms=anchor, **kwargs))
    cut = {"page": kwargs.get("page", 1), "size": kwargs.get("size", 10)}
    ids = [b["key"] for b in page_buckets(res, **cut)]
    refs = es.search(index=settings.index, body=references(ids, source=STORY_SOURCE)) if ids else None
    return read_top_stories(res, refs, **cut)


def run_story(es, settings, cluster_id, *, page=1, size=20):
    index = {"index": settings.index}
    searches = [index, story(cluster_id, page=page, size=size), index, story_times(cluster_id)]
    res, times = es.msearch(searches=searches)["responses"]
    return read_story(res, times, page=page, size=size)


def names(stories):
    return [s["reference"]["id"].split("-")[0] for s in stories]


def test_top_stories_rank_by_coverage_with_ties_to_the_more_recent(es, settings, corpus):
    total, found = run_top(es, settings, window="all")
    assert total == 5
    assert names(found) == ["ferry", "old", "museum", "lantern", "single"]
    ferry = found[0]
    assert (ferry["sites"], ferry["pages"]) == (4, 4)
    assert ferry["latest"] == "2015-03-10T08:00:00Z"
    assert ferry["reference"]["id"] == "ferry-a" and ferry["reference"]["title"] == "ferry-a headline"


def test_windows_count_back_from_the_newest_page(es, settings, corpus):
    # in the last 24 hours ferry (c, d) and museum (a, b) have two sites each: museum is more recent
    assert names(run_top(es, settings, window="24h")[1]) == ["museum", "ferry", "single"]
    day = run_top(es, settings, window="24h")[1][1]
    assert (day["sites"], day["pages"]) == (2, 2)  # only ferry-c and ferry-d are in the last 24 hours
    assert names(run_top(es, settings, window="7d")[1]) == ["ferry", "museum", "lantern", "single"]
    assert names(run_top(es, settings, window="30d")[1]) == ["ferry", "old", "museum", "lantern", "single"]


def test_latest_order_filters_and_pages(es, settings, corpus):
    _, latest = run_top(es, settings, window="all", sort="latest")
    assert names(latest) == ["museum", "single", "ferry", "lantern", "old"]  # museum and single tie at 12:00
    total, german = run_top(es, settings, filters=[{"term": {"lang": "de"}}])
    assert (total, names(german)) == (1, ["single"])
    _, by_site = run_top(es, settings, filters=[{"term": {"site": "c.test"}}])
    assert names(by_site) == ["ferry", "lantern", "old"]  # each once on c.test: the most recent first
    total, second = run_top(es, settings, page=2, size=2)
    assert (total, names(second)) == (5, ["museum", "lantern"])
    assert run_top(es, settings, page=9, size=2)[1] == []


def test_builders_refuse_bad_arguments():
    with pytest.raises(ValueError, match="window must be one of 24h, 7d, 30d, all"):
        top_stories(window="1y")
    with pytest.raises(ValueError, match="sort must be 'coverage' or 'latest'"):
        top_stories(sort="relevance")
    with pytest.raises(ValueError, match="out of range"):
        top_stories(page=MAX_STORIES, size=10)
    with pytest.raises(ValueError, match="out of range"):
        story("x", page=0)
    with pytest.raises(ValueError, match="empty"):
        story("")


def test_a_story_lists_versions_oldest_first_with_their_relation(es, settings, corpus):
    cluster = corpus["ferry-a"]
    found = run_story(es, settings, cluster, size=3)
    assert (found["pages"], found["sites"], found["total_pages"]) == (4, 4, 2)
    assert found["reference"]["id"] == found["first"]["id"] == "ferry-a"
    assert [v["id"] for v in found["versions"]] == ["ferry-a", "ferry-b", "ferry-c"]
    kinds = {v["id"]: v["relation"]["kind"] for v in found["versions"]}
    assert kinds == {"ferry-a": "reference", "ferry-b": "shorter", "ferry-c": "copy"}
    assert found["versions"][0]["site"] == "a.test" and "newsfold" not in found["versions"][0]
    assert sum(b["count"] for b in found["timeline"]) == 4
    assert found["timeline_interval"] == "1h" and found["timeline"][0]["start"] == "2015-03-09T08:00:00Z"
    page2 = run_story(es, settings, cluster, page=2, size=3)
    (local,) = page2["versions"]
    assert local["relation"] == {"kind": "adds", "label": "adds 2 paragraphs", "held": 1.0, "added_paragraphs": 2,
                                 "added_sentences": 0}  # fmt: skip
    assert page2["first"]["id"] == "ferry-a"  # the first publisher is known on every page
    assert run_story(es, settings, "no-such-story") is None


def test_an_editors_representative_becomes_the_reference(es, settings, corpus):
    set_representative("ferry-d", user="editor", client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    found = run_story(es, settings, corpus["ferry-a"])
    assert found["reference"]["id"] == "ferry-d" and found["first"]["id"] == "ferry-a"
    kinds = {v["id"]: v["relation"]["label"] for v in found["versions"]}
    assert kinds["ferry-d"] == "reference" and kinds["ferry-b"].startswith("shorter (holds ")
    assert kinds["ferry-a"] != "reference"


def test_add_relations_on_a_folded_search(es, settings, corpus):
    response = fold_search(es, {"query": {"match_all": {}}, "sort": [{"published": "asc"}], "size": 10},
                           index=settings.index, versions=5)  # fmt: skip
    add_relations(es, response, index=settings.index)
    (ferry,) = [s for s in folded_hits(response) if s["hit"]["_id"] == "ferry-a"]
    assert ferry["hit"]["newsfold_relation"]["kind"] == "reference"
    labels = {v["_id"]: v["newsfold_relation"]["label"] for v in ferry["versions"]}
    assert labels["ferry-b"].startswith("shorter") and labels["ferry-d"] == "adds 2 paragraphs"
    assert labels["ferry-c"] == "full copy"


def test_timeline_bins_pick_the_shortest_interval_that_fits():
    hour = 3_600_000
    assert timeline_bins([]) == (None, [])
    name, bins = timeline_bins([0, 2 * hour, 2 * hour + 5])
    assert name == "1h" and [b["count"] for b in bins] == [1, 0, 2]
    assert bins[0]["start"] == "1970-01-01T00:00:00Z"
    name, bins = timeline_bins([0, 100 * 24 * hour], max_bins=40)
    assert name == "7d" and len(bins) <= 40 and sum(b["count"] for b in bins) == 2
