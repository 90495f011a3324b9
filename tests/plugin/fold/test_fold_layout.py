"""Fold layout 8: the signature stored once as band tokens (``newsfold.bands``), and pages of layout 7 beside it.

A page's band keys are the terms of a multi-field of its stored signature, so
Elasticsearch derives them again from ``_source`` on every write: a host's
partial update of its own fields, or a force-merge, leaves the page findable.
An index upgraded in place from layout 7 keeps its older pages (``band_keys``
and a 32-bit ``signature``) until a reindex; lookups ask both fields while
such an index is searched, and signatures of both layouts compare alike.
"""

from __future__ import annotations

import copy
import uuid

import numpy as np
import pytest

from newsfold.plugin import Version, component_template, ingest
from newsfold.plugin.fold.by_id import behind
from newsfold.plugin.fold.document import CLUSTER_ID, FOLD, VERSION_SOURCE, own_document, read_signature
from newsfold.plugin.fold.index import FOLD_LAYOUT, drop_index, fold_meta, index_body
from newsfold.plugin.sign.signature import band_keys, band_tokens, jaccard, tokens_signature, truncate
from tests.pages import signed_page, story


def _copies(settings, prefix, seed, n):
    return [
        signed_page(settings, f"{prefix}{i}", f"Story {seed} on site {i}", story(seed), site=f"site{i}.test")
        for i in range(n)
    ]


def test_band_tokens_hold_the_signature_at_its_stored_precision(settings):
    (page,) = _copies(settings, "t", 3, 1)
    values = page.signature.hashvalues
    tokens = band_tokens(values, bands=settings.bands, rows=settings.rows)
    assert tokens == page.band_keys and len(tokens) == settings.bands
    stored = tokens_signature(" ".join(tokens))
    assert np.array_equal(stored, truncate(values))  # every value, read back
    assert np.array_equal(truncate(stored), stored)  # truncating again changes nothing
    # the order of values is kept (containment reads it), and so is equality, to 20 significant bits
    order = np.argsort(values, kind="stable")
    assert np.all(np.diff(stored[order].astype(np.int64)) >= 0)
    assert len(" ".join(tokens)) == settings.bands * (4 * settings.rows + 1) - 1  # 8 characters a band


def test_a_host_partial_update_leaves_the_page_findable_after_a_force_merge(es, settings):
    host = f"host-{uuid.uuid4().hex[:10]}"
    template = component_template(settings)["template"]["mappings"]
    mappings = {"properties": {"headline": {"type": "text"}, "section": {"type": "keyword"}, **template["properties"]},
                "_meta": template["_meta"]}  # fmt: skip
    es.indices.create(index=host, mappings=mappings)
    try:
        first, copy_ = _copies(settings, "h", 5, 2)
        es.index(index=host, id=first.page_id, document={"headline": "Harbour", "section": "news"}, refresh=True)
        assert ingest([first], client=es, settings=settings, index=host)[0].status == "new"
        assert es.get(index=host, id=first.page_id)["_version"] == 2  # the host's write, then newsfold's one write
        # the host edits its own field with a partial update, and its segments are merged
        es.update(index=host, id=first.page_id, doc={"section": "economy"}, refresh=True)
        es.indices.forcemerge(index=host, max_num_segments=1)
        es.indices.refresh(index=host)
        stored = es.get(index=host, id=first.page_id)["_source"]
        assert stored["section"] == "economy" and stored[FOLD]["bands"] == " ".join(first.band_keys)
        # a page newsfold writes for the first time stores no empty fields (nothing of its own to clear), and its
        # story's commit did not write it again: the mark is in the founding index
        assert [k for k, v in stored[FOLD].items() if v is None] == [] and "band_keys" not in stored[FOLD]
        assert stored[FOLD]["founding"] == first.page_id
        (outcome,) = ingest([copy_], client=es, settings=settings, index=host)
        assert (outcome.status, outcome.matched_id) == ("duplicate", first.page_id)
    finally:
        es.options(ignore_status=404).indices.delete(index=f"{host},{host}-corrections,{host}-founding")


def _layout_7(settings) -> dict:
    """The mappings of an index made by fold layout 7 (no ``bands``)."""
    mappings = copy.deepcopy(index_body(settings)["mappings"])
    del mappings["properties"][FOLD]["properties"]["bands"]
    mappings["_meta"]["newsfold"] = {**fold_meta(settings), "fold_layout": 7}
    return mappings


def _as_layout_7(page, settings, cluster_id: str) -> dict:
    """The document fold layout 7 wrote for a page: 32-bit signature and ``band_keys``, no ``bands``."""
    doc = own_document(page, cluster_id=cluster_id, match=None, ingested="2026-11-01T10:00:00Z")
    fold = doc[FOLD]
    del fold["bands"]
    fold["band_keys"] = band_keys(page.signature.hashvalues, bands=settings.bands, rows=settings.rows)
    fold["signature"] = page.signature.encode()
    return doc


def test_an_alias_over_both_layouts_finds_copies_of_older_pages(es, settings):
    mine = settings.replace(index=f"{settings.index}-mixed")
    old = f"{mine.index}-000001"
    es.indices.create(index=old, mappings=_layout_7(mine), aliases={mine.index: {"is_write_index": True}})
    try:
        older, copy_, later = _copies(mine, "m", 7, 3)
        es.index(index=old, id=older.page_id, document=_as_layout_7(older, mine, "story-7"), refresh=True)
        # the first ingest upgrades the index in place; its older page is still found by its band keys
        (outcome,) = ingest([copy_], client=es, settings=mine, index=mine.index)
        assert (outcome.status, outcome.cluster_id, outcome.matched_id) == ("duplicate", "story-7", older.page_id)
        meta = es.indices.get_mapping(index=old)[old]["mappings"]["_meta"]["newsfold"]
        assert meta["fold_layout"] == FOLD_LAYOUT and meta["legacy_bands"] is True
        assert behind(es, mine.index).legacy == {old}
        # a new period at layout 8 behind the same alias: both are searched, and the copy joins the story
        new = f"{mine.index}-000002"
        body = index_body(mine)
        es.indices.create(index=new, settings=body["settings"], mappings=body["mappings"])
        es.indices.update_aliases(actions=[
            {"add": {"index": old, "alias": mine.index, "is_write_index": False}},
            {"add": {"index": new, "alias": mine.index, "is_write_index": True}},
        ])  # fmt: skip
        assert behind(es, mine.index).legacy == {old}
        (outcome,) = ingest([later], client=es, settings=mine, index=mine.index)
        assert (outcome.status, outcome.cluster_id) == ("duplicate", "story-7")
        # both layouts' signatures read back, and compare as the fresh ones do
        stored_old = es.get(index=old, id=older.page_id)["_source"]
        stored_new = es.get(index=new, id=later.page_id)["_source"]
        assert "bands" not in stored_old[FOLD] and stored_new[FOLD]["bands"]
        a, b = read_signature(stored_old), read_signature(stored_new)
        assert a is not None and b is not None
        assert jaccard(a, b) == jaccard(older.signature, later.signature)
        es.indices.refresh(index=mine.index)
        hits = es.search(index=mine.index, query={"term": {CLUSTER_ID: "story-7"}}, source=VERSION_SOURCE)
        versions = [Version.from_hit(h) for h in hits["hits"]["hits"]]
        assert {v.id for v in versions} == {older.page_id, copy_.page_id, later.page_id}
        assert all(v.signature is not None for v in versions)  # the version records read both layouts
        # re-ingesting the older page (as a host moving its own indices does) rewrites it at layout 8, in its story
        (again,) = ingest([older], client=es, settings=mine, index=mine.index)
        assert (again.status, again.cluster_id) == ("updated", "story-7")
        rewritten = es.get(index=old, id=older.page_id)["_source"][FOLD]
        assert rewritten["bands"] == " ".join(older.band_keys) and not rewritten.get("band_keys")
        assert ingest([older], client=es, settings=mine, index=mine.index)[0].status == "unchanged"
    finally:
        drop_index(es, mine)


@pytest.mark.parametrize("rows", [2, 3])
def test_values_beyond_the_bands_are_stored_in_a_last_token(settings, rows):
    mine = settings.replace(bands=40, rows=rows)
    (page,) = _copies(mine, "r", 9, 1)
    assert len(page.band_keys) == 41 and page.band_keys[-1].startswith("~")
    assert np.array_equal(tokens_signature(" ".join(page.band_keys)), truncate(page.signature.hashvalues))
