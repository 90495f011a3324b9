"""A host index over its life (issue 21): stories outlive their pages, deletes, lost fold fields, outcomes to count.

Runs on both backends; on the real node the racing writers meet near-real-time search.
"""

from __future__ import annotations

import random
import threading

import pytest

from newsfold.plugin import delete_pages, ingest, regroup_clusters, unfolded_documents
from newsfold.plugin.fold.batch import finish, prepare, reconcile, write
from newsfold.plugin.fold.store import current_labels
from newsfold.plugin.search import queries
from tests.backends import REAL_ES
from tests.pages import signed_page, story


def _copies(settings, prefix: str, seed: int, n: int, *, first: int = 0) -> list:
    return [
        signed_page(settings, f"{prefix}{i}", f"Story {seed} on site {i}", story(seed), site=f"site{i}.test")
        for i in range(first, first + n)
    ]


def _labels(es, settings, ids) -> dict[str, str]:
    return current_labels(ids, client=es, settings=settings)


def _stories(es, settings) -> int:
    es.indices.refresh(index=settings.index)
    return queries.story_count(es.search(index=settings.index, **queries.collapsed_search("")))


def test_the_founder_rewritten_with_other_text_leaves_its_story_and_the_story_keeps_its_name(es, settings):
    ingest(_copies(settings, "f", 301, 3), client=es, settings=settings)
    assert set(_labels(es, settings, ["f0", "f1", "f2"]).values()) == {"f0"}
    rewritten = signed_page(settings, "f0", "Something else entirely", story(302), site="site0.test")
    (out,) = ingest([rewritten], client=es, settings=settings)
    assert out.status == "new" and out.cluster_id not in ("f0", None)  # its new text is a new story
    assert out.cluster_id.startswith("f0~")
    labels = _labels(es, settings, ["f0", "f1", "f2"])
    assert labels["f1"] == labels["f2"] == "f0"  # the old copies stay one story, under its name
    assert labels["f0"] == out.cluster_id
    assert _stories(es, settings) == 2


def test_a_changed_page_that_stays_in_its_story_is_updated_not_new(es, settings):
    (alone,) = ingest(_copies(settings, "up", 305, 1), client=es, settings=settings)
    assert (alone.status, alone.cluster_id) == ("new", "up0")
    edited = signed_page(settings, "up0", "Story 305, corrected", story(305)[:-1], site="site0.test")
    (again,) = ingest([edited], client=es, settings=settings)
    assert (again.status, again.cluster_id) == ("updated", "up0")  # one story, reported new once
    ingest(_copies(settings, "up", 305, 2, first=1), client=es, settings=settings)
    copy_edit = signed_page(settings, "up1", "Story 305 on site 1, edited", story(305)[1:], site="site1.test")
    (third,) = ingest([copy_edit], client=es, settings=settings)
    assert (third.status, third.cluster_id) == ("updated", "up0")
    assert _stories(es, settings) == 1


def test_a_deleted_founder_leaves_its_story_whole_and_coming_back_joins_it(es, settings):
    ingest(_copies(settings, "d", 311, 3), client=es, settings=settings)
    outcomes = delete_pages(["d0", "nope"], client=es, settings=settings)
    assert [(o.page_id, o.status, o.cluster_id) for o in outcomes] == [
        ("d0", "deleted", "d0"),
        ("nope", "missing", None),
    ]
    assert _labels(es, settings, ["d1", "d2"]) == {"d1": "d0", "d2": "d0"}
    assert _stories(es, settings) == 1
    (back,) = ingest(_copies(settings, "d", 311, 1), client=es, settings=settings)
    assert (back.status, back.cluster_id) == ("duplicate", "d0")  # it joined its old story: not a new one
    other = signed_page(settings, "d0", "Unrelated", story(312), site="site0.test")
    delete_pages(["d0"], client=es, settings=settings)
    (again,) = ingest([other], client=es, settings=settings)
    assert again.status == "new" and again.cluster_id != "d0"  # the name is still the old story's
    assert _labels(es, settings, ["d1", "d2"]) == {"d1": "d0", "d2": "d0"}


def _bridge(settings, prefix: str, seed: int):
    """Two cut copies of one story (its first and last 60 %) and the whole story: each cut copy is contained
    in the whole, but they share only a fifth of the text, too little to be copies of each other."""
    base = story(seed)
    cut = len(base) * 3 // 5
    head = signed_page(settings, f"{prefix}-a", "First part", base[:cut], site="a.test")
    tail = signed_page(settings, f"{prefix}-c", "Last part", base[-cut:], site="c.test")
    whole = signed_page(settings, f"{prefix}-w", "Whole", base, site="w.test")
    return head, tail, whole


def test_deleting_the_page_that_bridged_two_groups_splits_the_story(es, settings):
    head, tail, whole = _bridge(settings, "b", 321)
    for p in (whole, head, tail):
        ingest([p], client=es, settings=settings)
    assert set(_labels(es, settings, ["b-a", "b-w", "b-c"]).values()) == {"b-w"}
    delete_pages(["b-w"], client=es, settings=settings)
    after = _labels(es, settings, ["b-a", "b-c"])
    assert after["b-a"] != after["b-c"]  # nothing holds them together now
    assert "b-w" in after.values()  # one group keeps the story's name


def test_regroup_clusters_checks_its_arguments(es, settings):
    with pytest.raises(TypeError, match="cluster_ids"):
        regroup_clusters("abc", client=es, settings=settings)
    with pytest.raises(ValueError, match=r"page_ids\[1\]"):
        delete_pages(["ok", ""], client=es, settings=settings)
    assert regroup_clusters([], client=es, settings=settings) == {}


def test_a_full_index_request_drops_the_fold_fields_and_the_check_names_the_document(es, settings):
    ingest(_copies(settings, "u", 331, 2), client=es, settings=settings)
    assert unfolded_documents(client=es, index=settings.index) == {"count": 0, "ids": []}
    es.index(index=settings.index, id="u1", document={"title": "rewritten by the host"}, refresh="wait_for")
    assert unfolded_documents(client=es, index=settings.index) == {"count": 1, "ids": ["u1"]}
    es.update(index=settings.index, id="u0", doc={"title": "a partial update keeps them"}, refresh="wait_for")
    assert unfolded_documents(client=es, index=settings.index)["ids"] == ["u1"]
    with pytest.raises(ValueError, match="size"):
        unfolded_documents(client=es, index=settings.index, size=-1)


def test_a_story_reported_new_is_never_merged_into_a_later_one(es, settings):
    """Two writers found the same story; the second becomes visible only after the first reported ``new``.

    The second's reconcile finds the first: its own pending story yields to the committed one (before, the
    smaller name survived and both calls said ``new``)."""
    late = prepare(_copies(settings, "r", 341, 1, first=0), client=es, settings=settings)  # "r0": the smaller name
    early = prepare(_copies(settings, "r", 341, 1, first=1), client=es, settings=settings)
    write(early, client=es, settings=settings)
    reconcile(early, client=es, settings=settings)
    (first,) = finish(early, client=es, settings=settings)
    write(late, client=es, settings=settings)
    reconcile(late, client=es, settings=settings)
    (second,) = finish(late, client=es, settings=settings)
    assert (first.status, first.cluster_id) == ("new", "r1")
    assert (second.status, second.cluster_id, second.matched_id) == ("duplicate", "r1", "r1")
    assert _labels(es, settings, ["r0", "r1"]) == {"r0": "r1", "r1": "r1"}


def test_two_writers_that_see_each_other_report_one_new(es, settings):
    one = prepare(_copies(settings, "m", 351, 1, first=0), client=es, settings=settings)
    two = prepare(_copies(settings, "m", 351, 1, first=1), client=es, settings=settings)
    write(one, client=es, settings=settings)
    write(two, client=es, settings=settings)
    reconcile(two, client=es, settings=settings)
    reconcile(one, client=es, settings=settings)
    outcomes = finish(two, client=es, settings=settings) + finish(one, client=es, settings=settings)
    assert sorted(o.status for o in outcomes) == ["duplicate", "new"]
    assert len({o.cluster_id for o in outcomes}) == 1


def test_a_page_joining_two_reported_stories_says_merged_and_names_the_one_that_ended(es, settings):
    head, tail, whole = _bridge(settings, "j", 361)
    a, c = ingest([head], client=es, settings=settings), ingest([tail], client=es, settings=settings)
    assert (a[0].status, a[0].cluster_id, c[0].status, c[0].cluster_id) == ("new", "j-a", "new", "j-c")
    (bridge,) = ingest([whole], client=es, settings=settings)
    assert (bridge.status, bridge.cluster_id, bridge.merged_clusters) == ("merged", "j-a", ["j-c"])
    assert set(_labels(es, settings, ["j-a", "j-c", "j-w"]).values()) == {"j-a"}


@pytest.mark.parametrize("writers", [3])
def test_racing_writers_report_exactly_one_new_per_story(es, settings, writers):
    """Copies of 12 stories from 4 sites, shuffled, in batches of 1-3, from racing threads: at the end, one
    ``new`` outcome per story that exists, carrying that story's final cluster id."""
    pages = [p for seed in range(12) for p in _copies(settings, f"s{seed}-", 400 + seed, 4)]
    random.Random(21).shuffle(pages)
    shares = [pages[n::writers] for n in range(writers)]
    outcomes: list = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer(mine: list) -> None:
        rng = random.Random(len(mine))
        try:
            while mine:
                size = rng.randint(1, 3)
                batch, mine[:size] = mine[:size], []
                got = ingest(batch, client=es, settings=settings)
                with lock:
                    outcomes.extend(got)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(share,)) for share in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    labels = _labels(es, settings, [p.page_id for p in pages])
    stories = set(labels.values())
    assert len(stories) == 12
    new = [o for o in outcomes if o.status == "new"]
    merged_away = [c for o in outcomes if o.status == "merged" for c in o.merged_clusters]
    assert len(new) - len(merged_away) == len(stories)
    assert {o.cluster_id for o in new} - set(merged_away) == stories
    assert all(labels[o.page_id] == o.cluster_id for o in new if o.cluster_id not in merged_away)


def test_story_level_facets_count_stories_and_unfolded_documents(es, settings):
    from newsfold.plugin.search.queries import story_buckets, with_story_counts

    for seed in (371, 372):
        ingest(_copies(settings, f"fc{seed}-", seed, 2), client=es, settings=settings)
    es.index(index=settings.index, id="loose", document={"title": "not folded", "lang": "en"}, refresh="wait_for")
    aggs = with_story_counts({"langs": {"terms": {"field": "lang"}}})
    res = es.search(index=settings.index, size=0, aggs=aggs)
    assert story_buckets(res["aggregations"]["langs"]) == [{"key": "en", "stories": 3, "documents": 5}]
    with pytest.raises(TypeError, match="aggs"):
        with_story_counts([{"terms": {"field": "lang"}}])


def test_other_versions_are_counted_matching_and_in_the_whole_index(es, settings):
    from newsfold.plugin import fold_search, folded_hits

    ingest(_copies(settings, "ov", 381, 3), client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    body = {"query": {"term": {"site": "site0.test"}}, "size": 5}
    (only,) = folded_hits(fold_search(es, body, index=settings.index, count_all=True))
    assert (only["other_versions_matching"], only["other_versions_all"], only["other_versions"]) == (0, 2, 0)
    (plain,) = folded_hits(fold_search(es, {"query": {"match_all": {}}}, index=settings.index))
    assert (plain["other_versions_matching"], plain["other_versions_all"]) == (2, None)
    with pytest.raises(TypeError, match="count_all"):
        fold_search(es, body, index=settings.index, count_all="yes")


def test_the_unfolded_command_names_documents_that_lost_their_fold_fields(es, settings, monkeypatch, capsys):
    import json

    from newsfold.cli import main

    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("NEWSFOLD_INDEX", settings.index)
    ingest(_copies(settings, "cu", 391, 2), client=es, settings=settings)
    assert main(["unfolded"]) == 0
    assert "every document" in capsys.readouterr().out
    es.index(index=settings.index, id="cu0", document={"title": "replaced whole"}, refresh="wait_for")
    assert main(["unfolded", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {"index": settings.index, "count": 1, "ids": ["cu0"]}
    with pytest.raises(SystemExit) as refused:
        main(["unfolded", "--show", "5000"])
    assert refused.value.code == 2 and "must be a whole number 0-1000" in capsys.readouterr().err


def test_fold_search_versions_follow_the_query_post_filter_sort_and_highlight(es, settings):
    """The versions come from one aggregation search; they must be what collapse inner hits would give."""
    from newsfold.plugin import fold_search, folded_hits

    ingest(_copies(settings, "vf", 383, 4), client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    word = story(383)[0].split()[3].strip(".,").lower()
    body = {
        "query": {"match": {"body": word}},
        "post_filter": {"bool": {"must_not": [{"term": {"site": "site2.test"}}]}},
        "sort": [{"site": "desc"}],
        "highlight": {"fields": {"body": {}}},
        "_source": ["site"],
    }
    (only,) = folded_hits(fold_search(es, body, index=settings.index, versions=2))
    assert only["hit"]["_source"]["site"] == "site3.test"  # the body's sort
    assert [v["_source"]["site"] for v in only["versions"]] == ["site1.test", "site0.test"]  # no site2: post_filter
    if REAL_ES:  # the stand-in's top_hits leaves highlight out (docs/compatibility.md)
        assert all(word in " ".join(v["highlight"]["body"]).lower() for v in only["versions"])
    assert only["other_versions_matching"] == 2


def test_story_counts_go_on_bucket_aggregations_only_and_on_nested_facets_too(es, settings):
    """A metric beside the facets used to get sub-aggregations too, and the whole folded search failed with a 400."""
    from newsfold.plugin import fold_search
    from newsfold.plugin.search.queries import STORIES_AGG, story_buckets, with_story_counts

    for seed in (373, 374):
        ingest(_copies(settings, f"nf{seed}-", seed, 2), client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    facets = {
        "newest": {"max": {"field": "published"}},
        "sites": {"terms": {"field": "site"}, "aggs": {"langs": {"terms": {"field": "lang"}}, "top": {"max": {
            "field": "published"}}}},
    }  # fmt: skip
    aggs = with_story_counts(facets)
    assert "aggs" not in aggs["newest"] and "aggs" not in aggs["sites"]["aggs"]["top"]
    assert STORIES_AGG in aggs["sites"]["aggs"]["langs"]["aggs"]
    res = fold_search(es, {"query": {"match_all": {}}, "aggs": aggs}, index=settings.index)
    site = res["aggregations"]["sites"]["buckets"][0]
    assert story_buckets(site["langs"]) == [{"key": "en", "stories": 2, "documents": 2}]
    assert {b["stories"] for b in story_buckets(res["aggregations"]["sites"])} == {2}


def test_a_commit_refused_with_a_conflict_that_took_place_is_still_this_calls_new(es, settings, monkeypatch):
    """Across a primary failover a create may answer a version conflict for a write that was applied
    (Elasticsearch's own contract): the commit reads the story's mark again and knows its own write by its token.
    Simulated here: the real create of the mark is sent, and its success reported as a conflict."""
    from newsfold.plugin.fold import founding, store

    real = store.bulk_failures

    def applied_but_refused(client, actions, **kwargs):
        real(client, actions, **kwargs)
        return {a["_id"]: "version_conflict_engine_exception" for a in actions if a.get("_op_type") == "create"}

    monkeypatch.setattr(store, "bulk_failures", applied_but_refused)
    (out,) = ingest(_copies(settings, "cas", 393, 1), client=es, settings=settings)
    assert (out.status, out.cluster_id) == ("new", "cas0")  # before: "duplicate", a story never reported new
    assert founding.pending(["cas0"], client=es, settings=settings) == {}


def test_a_founding_index_deleted_between_batches_is_made_again_with_its_mapping(es, settings):
    """A story's commit creates its mark in ``<alias>-founding``; an index deleted meanwhile (by an operator, a
    test's cleanup) is created again with its strict mapping, never left to a write that would guess one."""
    from newsfold.plugin.fold import founding
    from newsfold.plugin.fold.index import founding_index

    (out,) = ingest(_copies(settings, "fi", 394, 1), client=es, settings=settings)
    assert out.status == "new"
    es.indices.delete(index=founding_index(settings))
    (out,) = ingest(_copies(settings, "fj", 395, 1), client=es, settings=settings)
    assert (out.status, out.cluster_id) == ("new", "fj0")
    mapping = es.indices.get_mapping(index=founding_index(settings))[founding_index(settings)]["mappings"]
    assert mapping["dynamic"] == "strict" and mapping["properties"]["committed_by"]["index"] is False
    assert founding.foundings(["fj0"], client=es, settings=settings)["fj0"].state == "committed"
