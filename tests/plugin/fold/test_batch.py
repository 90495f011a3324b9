"""Ingest against a real server speaking the Elasticsearch API (stand-in or ELASTICSEARCH_URL)."""

from __future__ import annotations

import pytest

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.batch import finish, ingest, prepare, reconcile, write
from newsfold.plugin.fold.candidates import lookup
from newsfold.plugin.fold.store import current_labels
from newsfold.plugin.search import queries
from tests.pages import page, signed_page, story


def _signed(settings, pid, title, paras, site="a.example"):
    return signed_page(settings, pid, title, paras, site=site)


def test_copies_fold_into_one_story_and_search_counts_stories(es, settings):
    s1, s2 = story(11), story(12)
    pages = [
        _signed(settings, "a1", "Storm closes harbour", s1, "a.example"),
        _signed(settings, "b1", "Harbour shut as storm hits", s1, "b.example"),
        _signed(settings, "c1", "Council votes on budget", s2, "c.example"),
    ]
    out = {o.page_id: o for o in ingest(pages, client=es, settings=settings)}
    assert out["a1"].cluster_id == out["b1"].cluster_id == "a1"
    assert out["c1"].status == "new" and out["c1"].cluster_id == "c1"
    assert (out["a1"].status, out["b1"].status) == ("new", "duplicate")
    assert out["b1"].matched_id == "a1" and out["b1"].similarity > 0.9
    stored = {d["_id"]: d["_source"]["newsfold"] for d in es.mget(index=settings.index, ids=["a1", "b1"])["docs"]}
    assert stored["a1"].get("matched_id") is None  # the story's first page is no copy
    assert stored["b1"]["matched_id"] == "a1"
    es.indices.refresh(index=settings.index)
    res = es.search(index=settings.index, **queries.collapsed_search(""))
    assert res["hits"]["total"]["value"] == 3
    assert queries.story_count(res) == 2
    assert len(res["hits"]["hits"]) == 2


def test_reingest_changes_nothing(es, settings):
    pages = [_signed(settings, f"p{i}", f"Title {i}", story(20 + i)) for i in range(3)]
    first = {o.page_id: o.cluster_id for o in ingest(pages, client=es, settings=settings)}
    before = es.get(index=settings.index, id="p0")
    again = ingest(pages, client=es, settings=settings)
    assert {o.status for o in again} == {"unchanged"}
    assert {o.page_id: o.cluster_id for o in again} == first
    after = es.get(index=settings.index, id="p0")
    assert after["_seq_no"] == before["_seq_no"]  # not even rewritten
    assert es.count(index=settings.index)["count"] == 3


def test_page_linking_two_clusters_merges_them(es, settings):
    full = story(30, sentences=28)
    first, second = full[: len(full) // 2], full[len(full) // 2 :]
    ingest([_signed(settings, "z-first", "First half", first)], client=es, settings=settings)
    ingest([_signed(settings, "m-second", "Second half", second)], client=es, settings=settings)
    assert current_labels(["z-first", "m-second"], client=es, settings=settings) == {
        "z-first": "z-first",
        "m-second": "m-second",
    }
    out = ingest([_signed(settings, "x-full", "The whole story", full)], client=es, settings=settings)
    assert out[0].cluster_id == "m-second"  # the smaller cluster id survives
    assert set(current_labels(["z-first", "m-second", "x-full"], client=es, settings=settings).values()) == {"m-second"}


def test_interleaved_batches_end_in_one_cluster(es, settings):
    """Two workers ingest copies of one story at the same moment.

    Both look up before either has written, exactly what near-real-time
    search produces when two batches run within one refresh interval: each
    decides "new story". The reconcile step after the wait_for write folds them.
    """
    paras = story(40)
    batch_a = prepare([_signed(settings, "copy-a", "Wire story", paras, "a.example")], client=es, settings=settings)
    batch_b = prepare(
        [_signed(settings, "copy-b", "Same wire story", paras, "b.example")], client=es, settings=settings
    )
    assert batch_a.decision.cluster_of == {"copy-a": "copy-a"}
    assert batch_b.decision.cluster_of == {"copy-b": "copy-b"}  # b did not see a: the race is real
    write(batch_a, client=es, settings=settings)
    write(batch_b, client=es, settings=settings)
    assert current_labels(["copy-a", "copy-b"], client=es, settings=settings) == {
        "copy-a": "copy-a",
        "copy-b": "copy-b",
    }
    reconcile(batch_a, client=es, settings=settings)
    reconcile(batch_b, client=es, settings=settings)
    assert current_labels(["copy-a", "copy-b"], client=es, settings=settings) == {
        "copy-a": "copy-a",
        "copy-b": "copy-a",
    }
    outcomes = {o.page_id: o.cluster_id for o in finish(batch_b, client=es, settings=settings)}
    assert outcomes == {"copy-b": "copy-a"}


def test_reconcile_lookup_leaves_out_the_pages_own_cluster(es, settings):
    paras = story(45)
    copies = [_signed(settings, f"own-{x}", "Wire story", paras, f"{x}.example") for x in "abc"]
    ingest(copies[:2], client=es, settings=settings)
    probe = copies[2]
    assert {c.page_id for c in lookup([probe], client=es, settings=settings)[probe.page_id]} == {"own-a", "own-b"}
    found = lookup([probe], client=es, settings=settings, exclude_clusters={probe.page_id: "own-a"})
    assert found[probe.page_id] == []  # both candidates are in cluster own-a
    found = lookup([probe], client=es, settings=settings, exclude_clusters={probe.page_id: "elsewhere"})
    assert {c.page_id for c in found[probe.page_id]} == {"own-a", "own-b"}


def test_three_way_race_with_merge_in_flight(es, settings):
    """A third batch links two clusters while their own copies are still being written."""
    s = story(50, sentences=28)
    half1, half2 = s[: len(s) // 2], s[len(s) // 2 :]
    ba = prepare([_signed(settings, "h1", "Part one", half1)], client=es, settings=settings)
    bb = prepare([_signed(settings, "h2", "Part two", half2)], client=es, settings=settings)
    bc = prepare([_signed(settings, "h3", "Everything", s)], client=es, settings=settings)
    for state in (bc, ba, bb):
        write(state, client=es, settings=settings)
    for state in (bb, bc, ba):
        reconcile(state, client=es, settings=settings)
    assert set(current_labels(["h1", "h2", "h3"], client=es, settings=settings).values()) == {"h1"}


def test_bad_pages_are_rejected_and_the_batch_goes_on(es, settings):
    from newsfold.indexer.pages import sign_batch

    good = page("Fine page", story(60))
    payloads = [
        {"id": "ok", "html": good},
        {"id": "empty", "html": ""},
        {"id": "pdf", "html_b64": "JVBERi0xLjQKJeLjz9MK"},
        {"id": "scripts", "html": "<html><body><script>x()</script></body></html>"},
        {"id": "missing", "html_path": "/nonexistent/page.html"},
    ]
    signed, rejected, _ = sign_batch(payloads, settings, stats=None)
    assert [p.page_id for p in signed] == ["ok"]
    assert {o.page_id: o.reason for o in rejected} == {
        "empty": "empty",
        "pdf": "not_html",
        "scripts": "no_article",
        "missing": "unreadable",
    }
    out = ingest(signed, client=es, settings=settings)
    assert [o.status for o in out] == ["new"]
    assert es.count(index=settings.index)["count"] == 1


def test_index_meta_records_signature_parameters(es, settings):
    from newsfold.plugin.fold.index import ensure_index

    name = ensure_index(es, settings)
    assert ensure_index(es, settings) == name  # idempotent; concurrent creators get "already exists"
    es.options(ignore_status=400).indices.create(index=f"{settings.index}-000001")
    meta = es.indices.get_mapping(index=settings.index)[name]["mappings"]["_meta"]["newsfold"]
    assert meta["hash_scheme"] == "affine32" and meta["datasketch"] == "2.0.0"
    assert (meta["num_perm"], meta["bands"], meta["rows"]) == (settings.num_perm, settings.bands, settings.rows)


def test_index_built_with_other_parameters_is_refused(es, settings):

    from newsfold.plugin.fold.index import ensure_index

    with pytest.raises(RuntimeError, match="seed: index has 1, settings say 2"):
        ensure_index(es, settings.replace(seed=2))


def test_a_delivery_killed_between_write_and_reconcile_is_repaired_by_the_next_one(es, settings):
    """Two racing batches miss each other; the one written last dies before its reconcile.

    Its page comes back ``unchanged`` on the next delivery, which used to skip
    the lookup, so the two copies stayed in two clusters for good.
    """
    text = story(71)
    first = prepare([_signed(settings, "k2", "Dam opens", text, "b.example")], client=es, settings=settings)
    last = prepare([_signed(settings, "k1", "Dam opens today", text, "a.example")], client=es, settings=settings)
    write(first, client=es, settings=settings)
    reconcile(first, client=es, settings=settings)  # the other copy is not written yet: nothing to merge
    write(last, client=es, settings=settings)  # ... and its worker dies here, before reconcile
    assert current_labels(["k1", "k2"], client=es, settings=settings) == {"k1": "k1", "k2": "k2"}
    again = {
        o.page_id: o
        for o in ingest([_signed(settings, "k1", "Dam opens today", text, "a.example")], client=es, settings=settings)
    }
    # the delivery that died never reported its story: the next one commits it and reports it new, once
    assert again["k1"].status == "new" and again["k1"].cluster_id == "k1"
    assert current_labels(["k1", "k2"], client=es, settings=settings) == {"k1": "k1", "k2": "k1"}


def test_a_delivery_killed_after_its_commit_reports_new_when_delivered_again(es, settings):
    """A batch commits its story, then dies before it returns (the whole cluster stopped, found on a cluster).

    Delivered again under the same name, the founder is unchanged and its
    story already committed: it used to come back ``unchanged``, and the job
    never counted the story's ``new``. Another delivery still sees it unchanged.
    """
    pages = [_signed(settings, "f1", "Bridge reopens", story(72)), _signed(settings, "f2", "Bridge reopens", story(72))]
    state = prepare(pages, client=es, settings=settings)
    write(state, client=es, settings=settings)
    reconcile(state, client=es, settings=settings)
    outcomes = {o.page_id: o.status for o in finish(state, client=es, settings=settings, delivery="job-7:batch-3")}
    assert outcomes == {"f1": "new", "f2": "duplicate"}  # ... and the worker dies here, before it reports
    again = {o.page_id: o for o in ingest(pages, client=es, settings=settings, delivery="job-7:batch-3")}
    assert (again["f1"].status, again["f1"].cluster_id) == ("new", "f1")
    assert again["f2"].status == "unchanged"
    for other in ("job-8:batch-3", None):
        assert {o.status for o in ingest(pages, client=es, settings=settings, delivery=other)} == {"unchanged"}


def test_a_delivery_name_reused_for_another_batch_reports_no_story_new_again(es, settings):
    """Issue 39, item 6: the commit mark was the name's alone, so a later call reusing the name over an unchanged
    founder reported its story ``new`` a second time. The mark is bound to the batch's pages (ids and contents):
    another batch, or a changed page, under the same name is another delivery; the same batch is a redelivery."""
    founder = _signed(settings, "r1", "Harbour wall repaired", story(74))
    other = _signed(settings, "r2", "Orchard fire contained", story(75))
    first = {o.page_id: o.status for o in ingest([founder, other], client=es, settings=settings, delivery="feed-1")}
    assert first == {"r1": "new", "r2": "new"}
    for batch in ([founder], [other], [founder, _signed(settings, "r3", "Tram line extended", story(76))]):
        again = {o.page_id: o.status for o in ingest(batch, client=es, settings=settings, delivery="feed-1")}
        assert again["r1" if batch[0] is founder else "r2"] == "unchanged", again
    assert {o.status for o in ingest([founder, other], client=es, settings=settings, delivery="feed-1")} == {"new"}


@pytest.mark.parametrize("delivery, message", [(7, "delivery must be str or None"), ("", "1 to 256"),
                                               ("x" * 257, "1 to 256")])  # fmt: skip
def test_ingest_checks_its_delivery_name(es, settings, delivery, message):
    with pytest.raises(InputError, match=message):
        ingest([_signed(settings, "d1", "Title", story(73))], client=es, settings=settings, delivery=delivery)


def test_pages_refused_for_a_passing_reason_are_retried_not_rejected(es, settings):
    """A full disk's block (429) or a node lost (503) refuses each write of a bulk: the batch must be tried again
    (a ServerError with that status, which the workers retry), never its pages rejected as `index_failed`."""

    from newsfold.plugin.errors import ServerError
    from newsfold.plugin.fold.by_id import behind

    concrete = behind(es, settings.index).write
    es.indices.put_settings(index=concrete, settings={"index.blocks.read_only_allow_delete": True})
    try:
        with pytest.raises(ServerError) as err:
            ingest([signed_page(settings, "held-1", "Tram line opens", story(31))], client=es,
                   settings=settings.replace(es_max_retries=0))  # the client would wait out 429s first
        assert err.value.status == 429
    finally:
        es.indices.put_settings(index=concrete, settings={"index.blocks.read_only_allow_delete": None})
    outcomes = ingest([signed_page(settings, "held-1", "Tram line opens", story(31))], client=es, settings=settings)
    assert [o.status for o in outcomes] == ["new"]  # the batch tried again, once the block is gone
