"""Issue 31: every correction can be undone; later corrections that conflict keep their decisions."""

from __future__ import annotations

import copy

import pytest

from newsfold.plugin.edit.correction_log import CorrectionError
from newsfold.plugin.edit.corrections import mark_not_duplicates, merge_clusters, set_representative, split_page
from newsfold.plugin.edit.undo import undo_correction
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.index import corrections_index, mapping_file
from newsfold.plugin.fold.store import current_labels
from tests.pages import signed_page, story

ED = "editor@example.test"


def _copies(settings, ids, seed, title="Storm closes harbour"):
    return [signed_page(settings, pid, f"{title} ({pid})", story(seed)) for pid in ids]


def _labels(es, settings, ids):
    return current_labels(ids, client=es, settings=settings)


def _flags(es, settings, ids):
    return {p: es.get(index=settings.index, id=p)["_source"]["newsfold"].get("representative") for p in ids}


def test_a_split_undone_rejoins_the_page(es, settings):
    """Fails before the fix: there was no undo (plugin.edit.undo did not exist)."""
    ids = ["p1", "p2", "p3", "p4"]
    ingest(_copies(settings, ids, seed=101), client=es, settings=settings)
    split = split_page("p1", user=ED, client=es, settings=settings)
    assert _labels(es, settings, ids) == {"p1": "p1", "p2": "p2", "p3": "p2", "p4": "p2"}
    done = undo_correction(split.id, user=ED, client=es, settings=settings, note="wrong page")
    assert done.correction.kind == "undo" and done.correction.undoes == split.id
    assert sorted(done.correction.released) == [("p1", "p2"), ("p1", "p3"), ("p1", "p4")]
    assert (done.kept, done.apart) == ([], [])
    assert _labels(es, settings, ids) == {p: "p1" for p in ids}  # as before the split
    with pytest.raises(CorrectionError, match="undone already"):
        undo_correction(split.id, user=ED, client=es, settings=settings)
    with pytest.raises(CorrectionError, match="is an undo"):
        undo_correction(done.correction.id, user=ED, client=es, settings=settings)
    with pytest.raises(CorrectionError, match="unknown correction"):
        undo_correction("nope", user=ED, client=es, settings=settings)


def test_a_split_undone_keeps_a_later_conflicting_correction(es, settings):
    ids = ["q1", "q2", "q3"]
    ingest(_copies(settings, ids, seed=104), client=es, settings=settings)
    split = split_page("q3", user=ED, client=es, settings=settings)
    later = mark_not_duplicates("q3", "q2", user=ED, client=es, settings=settings)
    done = undo_correction(split.id, user=ED, client=es, settings=settings)
    assert done.kept == [later.id] and done.correction.released == [("q1", "q3")]
    labels = _labels(es, settings, ids)
    assert labels["q1"] == labels["q2"] != labels["q3"]  # q3 may not join q2: the later decision stands
    assert done.apart == [labels["q1"]]


def test_a_merge_undone_separates_the_stories_into_their_earlier_memberships(es, settings):
    ingest(_copies(settings, ["x1", "x2"], seed=105, title="Budget passes"), client=es, settings=settings)
    ingest(_copies(settings, ["y1", "y2"], seed=106), client=es, settings=settings)
    before = _labels(es, settings, ["x1", "x2", "y1", "y2"])
    x, y = before["x1"], before["y1"]
    assert x != y
    merge = merge_clusters(x, y, user=ED, client=es, settings=settings)
    assert merge.before == {x: ["x1", "x2"], y: ["y1", "y2"]}
    assert len(set(_labels(es, settings, ["x1", "x2", "y1", "y2"]).values())) == 1
    done = undo_correction(merge.id, user=ED, client=es, settings=settings)
    assert done.correction.released == [merge.must_link[0]]
    assert _labels(es, settings, ["x1", "x2", "y1", "y2"]) == before


def test_not_duplicates_and_representative_undone(es, settings):
    ids = ["a", "b", "c"]
    ingest(_copies(settings, ids, seed=103), client=es, settings=settings)
    mark = mark_not_duplicates("a", "c", user=ED, client=es, settings=settings)
    assert _labels(es, settings, ["a", "c"])["a"] != _labels(es, settings, ["a", "c"])["c"]
    undo_correction(mark.id, user=ED, client=es, settings=settings)
    assert len(set(_labels(es, settings, ids).values())) == 1
    set_representative("a", user=ED, client=es, settings=settings)
    second = set_representative("b", user=ED, client=es, settings=settings)
    undo_correction(second.id, user=ED, client=es, settings=settings)
    assert _flags(es, settings, ids) == {"a": True, "b": False, "c": False}  # the first choice again


def test_an_undo_adds_its_fields_to_a_corrections_index_made_before_them(es, settings):
    body = copy.deepcopy(mapping_file("corrections"))
    for name in ("undoes", "representative", "before"):
        del body["mappings"]["properties"][name]
    es.indices.create(index=corrections_index(settings), **body)
    ingest(_copies(settings, ["r1", "r2"], seed=107), client=es, settings=settings)
    split = split_page("r2", user=ED, client=es, settings=settings)
    undo_correction(split.id, user=ED, client=es, settings=settings)
    assert len(set(_labels(es, settings, ["r1", "r2"]).values())) == 1
