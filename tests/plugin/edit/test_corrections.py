"""Editor corrections: pure constrained decisions, and each correction against a real server."""

from __future__ import annotations

import datetime as dt

import pytest

from newsfold.plugin.edit.correction_log import CorrectionError, list_corrections
from newsfold.plugin.edit.corrections import (
    corrections_index,
    mark_not_duplicates,
    merge_clusters,
    reapply_corrections,
    set_representative,
    split_page,
)
from newsfold.plugin.fold.batch import ingest, prepare, reconcile, write
from newsfold.plugin.fold.cluster import Constraints, Match, decide, pair, recluster_labels
from newsfold.plugin.fold.constraints import resolve
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.fold.regroup import enforce_constraints, relabel
from newsfold.plugin.fold.store import current_labels
from newsfold.plugin.search import queries
from newsfold.plugin.settings import Settings
from tests.pages import signed_page, story

ED = "editor@example.test"


def _partition(labels: dict[str, str]) -> set[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for pid, cluster in labels.items():
        groups.setdefault(cluster, set()).add(pid)
    return {frozenset(g) for g in groups.values()}


def _copies(settings, ids, seed, title="Storm closes harbour"):
    paras = story(seed)
    return [signed_page(settings, pid, f"{title} ({pid})", paras) for pid in ids]


# ------------------------------------------------------------------ names and settings
def test_corrections_index_is_a_side_index_and_can_be_pinned():
    s = Settings(index="news")
    assert corrections_index(s) == "news-corrections"
    assert corrections_index(s.replace(index="news-rebuild", corrections_index="news-corrections")) == (
        "news-corrections"
    )
    with pytest.raises(ValueError, match="corrections_index must be"):
        s.replace(corrections_index="news")
    with pytest.raises(ValueError, match="corrections_index must be"):
        Settings.from_env({"NEWSFOLD_CORRECTIONS_INDEX": "news-*"})


# ------------------------------------------------------------------ pure: constrained decisions
def test_decide_without_constraints_is_unchanged():
    edges = [("n", Match("p", "c9", 0.9, 0.9)), ("n", Match("m1", "c2", 0.8, 0.8))]
    d = decide(["n"], edges)
    assert (d.cluster_of, d.merges) == ({"n": "c2"}, {"c9": "c2"})
    assert decide(["n"], edges, Constraints()).cluster_of == d.cluster_of


def test_decide_never_joins_clusters_a_cannot_link_spans():
    """A new page similar to both sides of a split joins the more similar side only."""
    edges = [("n", Match("p", "c9", 0.9, 0.9)), ("n", Match("m1", "c2", 0.8, 0.8))]
    rules = Constraints(cannot_link=frozenset({pair("p", "m5")}), clusters={"p": "c9", "m5": "c2"})
    d = decide(["n"], edges, rules)
    assert d.cluster_of == {"n": "c9"} and d.merges == {}
    assert d.best["n"].page_id == "p"


def test_decide_cannot_link_inside_a_batch_is_greedy_by_similarity():
    edges = [
        ("a", Match("b", "b", 0.9, 0.9)),
        ("b", Match("c", "c", 0.8, 0.8)),
        ("a", Match("c", "c", 0.7, 0.7)),
    ]
    rules = Constraints(cannot_link=frozenset({pair("a", "c")}))
    d = decide(["c", "b", "a"], edges, rules)
    assert d.cluster_of == {"a": "a", "b": "a", "c": "c"}
    assert d.best["a"].page_id == "b"
    assert "b" not in d.best  # its only listed copy ended in the other group


def test_decide_must_link_joins_an_indexed_partner_and_a_batch_partner():
    rules = Constraints(must_link=(("x", "y"), ("w", "x")), clusters={"y": "c7"})
    d = decide(["x", "w"], [], rules)
    assert d.cluster_of == {"x": "c7", "w": "c7"}


def test_recluster_labels_split_keeps_the_cluster_id_with_its_page():
    ids = ["m1", "m2", "m3", "p"]
    edges = [(a, Match(b, "m1", 0.95, 0.95)) for i, a in enumerate(ids) for b in ids[i + 1 :]]
    split_p = Constraints(cannot_link=frozenset(pair("p", m) for m in ("m1", "m2", "m3")))
    assert recluster_labels("m1", ids, edges, split_p) == {"m1": "m1", "m2": "m1", "m3": "m1", "p": "p"}
    split_m1 = Constraints(cannot_link=frozenset(pair("m1", m) for m in ("m2", "m3", "p")))
    assert recluster_labels("m1", ids, edges, split_m1) == {"m1": "m1", "m2": "m2", "m3": "m2", "p": "m2"}
    # no member is named like the cluster: the largest group keeps the id
    assert recluster_labels("zz", ids, edges, split_p) == {"m1": "zz", "m2": "zz", "m3": "zz", "p": "p"}


def test_recluster_labels_must_links_first_latest_decision_wins():
    ids = ["a", "b", "c", "d"]
    edges = [("a", Match("b", "a", 0.9, 0.9)), ("c", Match("d", "a", 0.9, 0.9))]
    assert set(recluster_labels("a", ids, edges).values()) == {"a", "c"}
    merged = Constraints(must_link=(("b", "c"),))
    assert set(recluster_labels("a", ids, edges, merged).values()) == {"a"}
    # the latest must-link comes first; an older one that would join a cannot-link pair is skipped
    conflict = Constraints(must_link=(("b", "c"), ("a", "b")), cannot_link=frozenset({pair("a", "c")}))
    labels = recluster_labels("a", ["a", "b", "c"], [], conflict)
    assert labels["b"] == labels["c"] != labels["a"]


def test_resolve_latest_decision_wins_per_pair_and_page():
    docs = [
        {"id": "2", "at": "2024-01-02T00:00:00.000+00:00", "kind": "merge", "released": [{"a": "y", "b": "x"}],
         "must_link": [{"a": "x", "b": "z"}]},
        {"id": "1", "at": "2024-01-01T00:00:00.000+00:00", "kind": "split", "cannot_link": [{"a": "x", "b": "y"}]},
        {"id": "3", "at": "2024-01-03T00:00:00.000+00:00", "kind": "representative", "pages": ["x"],
         "not_representative": ["y"]},
        {"id": "4", "at": "2024-01-04T00:00:00.000+00:00", "kind": "representative", "pages": ["y"],
         "not_representative": ["x"]},
    ]  # fmt: skip
    rules = resolve(docs)
    assert rules.cannot_link == frozenset() and rules.must_link == (("x", "z"),)
    assert rules.representative == {"x": False, "y": True}
    assert resolve(docs[1:2]).cannot("y", "x")
    assert resolve(docs, {"q"}).is_empty()  # only decisions naming the asked pages


def test_collapsed_search_prefers_the_representative():
    body = queries.collapsed_search("flood")
    assert body["query"]["bool"]["should"] == [
        {
            "constant_score": {
                "filter": {"term": {"newsfold.representative": True}},
                "boost": queries.REPRESENTATIVE_BOOST,
            }
        }
    ]
    assert body["query"]["bool"]["must"][0]["simple_query_string"]["query"] == "flood"
    assert "sort" not in body and body["collapse"] == {"field": "newsfold.cluster_id"}
    by_date = queries.collapsed_search("", sort="date")
    assert [next(iter(s)) for s in by_date["sort"]] == ["published", "newsfold.representative", "ingested"]
    assert queries.collapsed_search("flood", representative_boost=0)["query"]["bool"]["should"] == []


# ------------------------------------------------------------------ against the server
def test_split_page_and_later_copies_do_not_rejoin(es, settings):
    pages = _copies(settings, ["p1", "p2", "p3", "p4"], seed=101)
    assert {o.cluster_id for o in ingest(pages, client=es, settings=settings)} == {"p1"}
    c = split_page("p3", user=ED, client=es, settings=settings, note="a different storm")
    assert (c.kind, c.pages, c.clusters, c.user, c.note) == ("split", ["p3"], ["p1"], ED, "a different storm")
    assert sorted(c.cannot_link) == [("p1", "p3"), ("p2", "p3"), ("p3", "p4")]
    assert current_labels(["p1", "p2", "p3", "p4"], client=es, settings=settings) == {
        "p1": "p1",
        "p2": "p1",
        "p3": "p3",
        "p4": "p1",
    }
    res = es.search(index=settings.index, **queries.collapsed_search(""))  # visible at once: no refresh
    assert queries.story_count(res) == 2
    # later copies, similar to both sides, join one side and never fold the two back together
    state = prepare(_copies(settings, ["p9"], seed=101), client=es, settings=settings)
    assert state.constraints.cannot("p1", "p3") and state.decision.merges == {}
    later = _copies(settings, ["p0", "p5"], seed=101, title="Harbour shut")
    ingest(later, client=es, settings=settings)
    labels = current_labels(["p0", "p1", "p2", "p3", "p4", "p5"], client=es, settings=settings)
    assert labels["p3"] not in {labels["p1"], labels["p2"], labels["p4"]}
    assert labels["p1"] == labels["p2"] == labels["p4"]
    assert {labels["p0"], labels["p5"]} <= set(labels.values())


def test_split_the_page_named_like_its_cluster(es, settings):
    ingest(_copies(settings, ["k1", "k2", "k3"], seed=102), client=es, settings=settings)
    split_page("k1", user=ED, client=es, settings=settings)
    assert current_labels(["k1", "k2", "k3"], client=es, settings=settings) == {"k1": "k1", "k2": "k2", "k3": "k2"}


def test_not_duplicates_in_one_cluster_and_across_clusters(es, settings):
    ingest(_copies(settings, ["a", "b", "c"], seed=103), client=es, settings=settings)
    c = mark_not_duplicates("a", "c", user=ED, client=es, settings=settings)
    assert (c.kind, c.cannot_link, c.clusters) == ("not_duplicates", [("a", "c")], ["a"])
    labels = current_labels(["a", "b", "c"], client=es, settings=settings)
    assert labels["a"] != labels["c"]
    ingest(_copies(settings, ["d"], seed=103), client=es, settings=settings)
    labels = current_labels(["a", "b", "c", "d"], client=es, settings=settings)
    assert labels["a"] != labels["c"]

    # two halves of one story in two clusters; a page holding the whole story would link them
    full = story(104, sentences=28)
    first, second = full[: len(full) // 2], full[len(full) // 2 :]
    ingest([signed_page(settings, "z-first", "First half", first)], client=es, settings=settings)
    ingest([signed_page(settings, "m-second", "Second half", second)], client=es, settings=settings)
    c = mark_not_duplicates("z-first", "m-second", user=ED, client=es, settings=settings)
    assert c.clusters == ["z-first", "m-second"]
    out = ingest([signed_page(settings, "x-full", "The whole story", full)], client=es, settings=settings)
    labels = current_labels(["z-first", "m-second", "x-full"], client=es, settings=settings)
    assert labels["z-first"] != labels["m-second"]
    assert out[0].cluster_id == labels["x-full"] in {labels["z-first"], labels["m-second"]}


def test_merge_clusters_supersedes_cannot_links_and_later_copies_follow(es, settings):
    ingest(
        _copies(settings, ["a1", "a2"], seed=105) + _copies(settings, ["b1", "b2"], seed=106),
        client=es,
        settings=settings,
    )
    assert set(current_labels(["a1", "a2", "b1", "b2"], client=es, settings=settings).values()) == {"a1", "b1"}
    earlier = mark_not_duplicates("a2", "b2", user="first-editor", client=es, settings=settings)
    c = merge_clusters("b1", "a1", user=ED, client=es, settings=settings, note="same event")
    assert (c.kind, c.clusters, c.pages, c.must_link, c.released) == (
        "merge",
        ["b1", "a1"],
        ["b1", "a1"],
        [("a1", "b1")],
        [("a2", "b2")],
    )
    assert set(current_labels(["a1", "a2", "b1", "b2"], client=es, settings=settings).values()) == {
        "a1"
    }  # the smaller id survives
    _, log = list_corrections(client=es, settings=settings, page_id="a2")
    marked = {x.id: x.superseded_by for x in log}
    assert marked == {earlier.id: [c.id], c.id: []}
    # a later copy of either story joins the merged cluster, and the released cannot-link does not split it
    ingest(_copies(settings, ["b3"], seed=106), client=es, settings=settings)
    assert set(current_labels(["a1", "a2", "b1", "b2", "b3"], client=es, settings=settings).values()) == {"a1"}


def _shown(es, settings, q):
    res = es.search(index=settings.index, **queries.collapsed_search(q, size=10))
    return {h["_source"]["newsfold"]["cluster_id"]: h["_id"] for h in res["hits"]["hits"]}


def _searched(es, settings, q):
    """What the search page and the API show: story id -> the shown version."""
    from newsfold.web.actions.search_params import SearchParams
    from newsfold.web.actions.search_results import run_search, search_body

    params = SearchParams(q=q)
    result = run_search(es, settings, params, search_body(params, page_size=10), page_size=10)
    return {r["cluster_id"]: r["id"] for r in result.results}


def test_representative_is_shown_and_survives_a_changed_reingest(es, settings):
    paras = story(107)
    word = paras[0].split()[0].lower()  # in every copy's body; only r2 and r3 also have it in the title
    titles = {"r1": "Report", "r2": f"{word} {word} news", "r3": f"{word} {word} latest"}
    for pid in ("r1", "r2", "r3"):  # one batch each: r3 is the newest
        ingest([signed_page(settings, pid, titles[pid], paras)], client=es, settings=settings)
    ingest(_copies(settings, ["o1"], seed=108), client=es, settings=settings)
    # without a representative, the newest copy is shown by date and a copy with the word in its title by relevance
    assert _shown(es, settings, "")["r1"] == "r3"
    assert _shown(es, settings, word)["r1"] != "r1"
    first = set_representative("r1", user=ED, client=es, settings=settings)
    flags = {
        d["_id"]: d["_source"]["newsfold"].get("representative")
        for d in es.mget(index=settings.index, ids=["r1", "r2", "r3", "o1"])["docs"]
    }
    assert flags == {"r1": True, "r2": False, "r3": False, "o1": None}
    assert _shown(es, settings, "")["r1"] == "r1"
    # by relevance its boost only nudges it (r2 and r3 have the word twice in their titles); the search shows it
    # in its story's place
    assert _searched(es, settings, word)["r1"] == "r1"
    second = set_representative("r3", user=ED, client=es, settings=settings)
    assert es.get(index=settings.index, id="r1")["_source"]["newsfold"]["representative"] is False
    changed = signed_page(settings, "r3", titles["r3"], paras + ["An update was added to this report at noon."])
    assert ingest([changed], client=es, settings=settings)[0].status != "unchanged"
    assert es.get(index=settings.index, id="r3")["_source"]["newsfold"]["representative"] is True
    _, log = list_corrections(client=es, settings=settings, cluster_id="r1")
    assert [(x.id, x.superseded_by) for x in log] == [(second.id, []), (first.id, [second.id])]


def test_corrections_survive_a_rebuild_into_a_fresh_index(es, settings):
    corpus = (
        _copies(settings, ["s1", "s2", "s3", "s4"], seed=111)
        + _copies(settings, ["t1", "t2", "t3"], seed=112)
        + _copies(settings, ["u1", "u2"], seed=113)
        + _copies(settings, ["v1"], seed=114)
    )
    ingest(corpus, client=es, settings=settings)
    split_page("s3", user=ED, client=es, settings=settings)
    mark_not_duplicates("t1", "t3", user=ED, client=es, settings=settings)
    merge_clusters("u1", "v1", user=ED, client=es, settings=settings)
    set_representative("s2", user=ED, client=es, settings=settings)
    ids = [p.page_id for p in corpus]
    corrected = _partition(current_labels(ids, client=es, settings=settings))
    assert frozenset({"s3"}) in corrected and frozenset({"u1", "u2", "v1"}) in corrected

    # the rebuild: another index, the same corrections; pages arrive in another order and batching
    rebuilt = settings.replace(index=f"{settings.index}-rebuild", corrections_index=corrections_index(settings))
    ensure_index(es, rebuilt)
    try:
        order = list(reversed(corpus))
        for start in range(0, len(order), 3):
            ingest(order[start : start + 3], client=es, settings=rebuilt)
        assert _partition(current_labels(ids, client=es, settings=rebuilt)) == corrected
        assert es.get(index=rebuilt.index, id="s2")["_source"]["newsfold"].get("representative") is True
        total, _ = list_corrections(client=es, settings=rebuilt)
        assert total == 4
    finally:
        drop_index(es, rebuilt)


def test_corrections_made_during_a_rebuild_are_reapplied_after_it(es, settings):
    corpus = (
        _copies(settings, ["s1", "s2", "s3"], seed=161)
        + _copies(settings, ["t1", "t2"], seed=162)
        + _copies(settings, ["u1"], seed=163)
    )
    ids = [p.page_id for p in corpus]
    ingest(corpus, client=es, settings=settings)
    rebuilt = settings.replace(index=f"{settings.index}-rebuild", corrections_index=corrections_index(settings))
    ensure_index(es, rebuilt)
    try:
        ingest(corpus, client=es, settings=rebuilt)  # these pages were rebuilt before the corrections existed
        start = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        split_page("s2", user=ED, client=es, settings=settings)
        merge_clusters("t1", "u1", user=ED, client=es, settings=settings)
        set_representative("s3", user=ED, client=es, settings=settings)
        corrected = _partition(current_labels(ids, client=es, settings=settings))
        assert _partition(current_labels(ids, client=es, settings=rebuilt)) != corrected
        assert reapply_corrections(client=es, settings=rebuilt, since=start) == 3
        assert _partition(current_labels(ids, client=es, settings=rebuilt)) == corrected
        assert es.get(index=rebuilt.index, id="s3")["_source"]["newsfold"]["representative"] is True
        reapply_corrections(client=es, settings=rebuilt)  # idempotent
        assert _partition(current_labels(ids, client=es, settings=rebuilt)) == corrected
    finally:
        drop_index(es, rebuilt)


def test_log_lists_who_when_what_newest_first(es, settings):
    assert list_corrections(client=es, settings=settings) == (0, [])  # no corrections index yet
    ingest(
        _copies(settings, ["g1", "g2", "g3"], seed=121) + _copies(settings, ["h1"], seed=122),
        client=es,
        settings=settings,
    )
    made = [
        split_page("g3", user="ann", client=es, settings=settings, note="  wrong story  "),
        set_representative("g2", user="bob", client=es, settings=settings),
        merge_clusters("g3", "h1", user="cy", client=es, settings=settings),
    ]
    total, log = list_corrections(client=es, settings=settings)
    assert total == 3
    assert [x.id for x in log] == [c.id for c in reversed(made)]
    assert [(x.kind, x.user) for x in log] == [("merge", "cy"), ("representative", "bob"), ("split", "ann")]
    assert log[2].note == "wrong story" and log[2].at.startswith("20")
    assert log[0].as_dict()["must_link"] == [["g3", "h1"]]
    assert [x.kind for x in list_corrections(client=es, settings=settings, cluster_id="g1")[1]] == [
        "representative",
        "split",
    ]
    assert [x.kind for x in list_corrections(client=es, settings=settings, page_id="h1")[1]] == ["merge"]
    total, page2 = list_corrections(client=es, settings=settings, offset=1, size=1)
    assert total == 3 and [x.kind for x in page2] == ["representative"]
    with pytest.raises(CorrectionError, match="out of range"):
        list_corrections(client=es, settings=settings, size=0)


def test_invalid_corrections_are_refused_with_a_message(es, settings):
    ingest(
        _copies(settings, ["e1", "e2"], seed=131) + _copies(settings, ["f1"], seed=132), client=es, settings=settings
    )
    cases = [
        (lambda: split_page("nope", user=ED, client=es, settings=settings), "unknown page 'nope'"),
        (lambda: split_page("f1", user=ED, client=es, settings=settings), "alone in cluster"),
        (lambda: split_page("e1", user=" ", client=es, settings=settings), "user is required"),
        (lambda: merge_clusters("e1", "e1", user=ED, client=es, settings=settings), "same cluster"),
        (lambda: merge_clusters("e1", "nope", user=ED, client=es, settings=settings), "unknown cluster 'nope'"),
        (lambda: mark_not_duplicates("e1", "e1", user=ED, client=es, settings=settings), "itself"),
        (lambda: set_representative("e1", user=ED, note="x" * 3000, client=es, settings=settings), "limit is 2000"),
    ]
    for call, message in cases:
        with pytest.raises(CorrectionError, match=message):
            call()
    assert list_corrections(client=es, settings=settings)[0] == 0
    assert current_labels(["e1", "e2", "f1"], client=es, settings=settings) == {"e1": "e1", "e2": "e1", "f1": "f1"}


def test_relabel_refuses_a_merge_a_cannot_link_spans(es, settings):
    ingest(_copies(settings, ["j1"], seed=141) + _copies(settings, ["k1"], seed=142), client=es, settings=settings)
    mark_not_duplicates("j1", "k1", user=ED, client=es, settings=settings)
    assert relabel("k1", "j1", client=es, settings=settings) == 0
    assert current_labels(["j1", "k1"], client=es, settings=settings) == {"j1": "j1", "k1": "k1"}


def test_correction_made_while_a_batch_is_in_flight_is_honoured(es, settings):
    """The batch decides before the correction exists and writes after it: the check after the write repairs it."""
    ingest(_copies(settings, ["y"], seed=151) + _copies(settings, ["x"], seed=152), client=es, settings=settings)
    batch = prepare(_copies(settings, ["x"], seed=151), client=es, settings=settings)  # x rewritten as a copy of y
    assert batch.decision.cluster_of == {"x": "y"}
    mark_not_duplicates("x", "y", user=ED, client=es, settings=settings)  # x and y are apart now: nothing to split
    write(batch, client=es, settings=settings)
    assert current_labels(["x", "y"], client=es, settings=settings) == {
        "x": "y",
        "y": "y",
    }  # the race put them together
    reconcile(batch, client=es, settings=settings)
    enforce_constraints([p.page_id for p in batch.pages], client=es, settings=settings)
    labels = current_labels(["x", "y"], client=es, settings=settings)
    assert labels["x"] != labels["y"]
