"""Fold layout 3 (``newsfold.passages``): indexes made at layout 2 keep working and are upgraded in place."""

from __future__ import annotations

import copy
import uuid

import pytest

from newsfold.plugin import TextMeta, ensure_fold_fields, ingest, sign_text
from newsfold.plugin.fold.document import FOLD, fold_mapping
from newsfold.plugin.fold.index import FOLD_LAYOUT, check_meta, ensure_index, fold_meta, index_body
from newsfold.plugin.sign.novelty import relation
from newsfold.plugin.sign.passages import passage_keys
from tests.pages import story


def layout2(settings, *, own: bool, extra_meta: dict | None = None) -> dict:
    """The mappings of an index created by the release before ``passages`` (fold layout 2)."""
    if own:
        mappings = copy.deepcopy(index_body(settings)["mappings"])
    else:
        mappings = {"properties": {"headline": {"type": "text"}, **fold_mapping()}, "_meta": {}}
    del mappings["properties"][FOLD]["properties"]["passages"]
    mappings["_meta"] = {**(extra_meta or {}), "newsfold": {**fold_meta(settings), "fold_layout": 2}}
    return mappings


def fold_properties(es, name):
    (body,) = es.indices.get_mapping(index=name).values()
    return body["mappings"]["properties"][FOLD]["properties"], body["mappings"]["_meta"]


@pytest.mark.parametrize("own", [False, True], ids=["host", "own"])
def test_ingest_into_a_layout_2_index_upgrades_it_and_stores_passages(es, settings, own):
    name = f"old-{uuid.uuid4().hex[:10]}"
    es.indices.create(index=name, mappings=layout2(settings, own=own, extra_meta={"owner": "host team"}))
    try:
        body = "\n".join(story(71))
        signed = sign_text(body, TextMeta(page_id="p1", url="https://a.test/p1"), settings=settings)
        (outcome,) = ingest([signed], client=es, settings=settings, index=name)
        assert outcome.status == "new"
        fields, meta = fold_properties(es, name)
        assert fields["passages"] == {"type": "object", "enabled": False}
        assert meta["newsfold"]["fold_layout"] == FOLD_LAYOUT
        assert meta["owner"] == "host team"  # the host's own _meta is kept
        stored = es.get(index=name, id="p1")["_source"][FOLD]["passages"]
        assert stored == passage_keys(body)
        assert relation(stored, passage_keys(body)).kind == "copy"
    finally:
        es.indices.delete(index=name)


def test_ensure_fold_fields_and_ensure_index_accept_layout_2(es, settings):
    name = f"old-{uuid.uuid4().hex[:10]}"
    es.indices.create(index=name, mappings=layout2(settings, own=False))
    try:
        assert ensure_fold_fields(es, name, settings) == [name]
        fields, meta = fold_properties(es, name)
        # its pages may hold the band keys of layouts before 8: lookups ask for those too until a reindex
        assert "passages" in fields and meta["newsfold"] == {**fold_meta(settings), "legacy_bands": True}
    finally:
        es.indices.delete(index=name)
    # newsfold's own index behind its alias, made at layout 2
    current = ensure_index(es, settings)
    es.indices.delete(index=current)
    es.indices.create(index=current, mappings=layout2(settings, own=True), aliases={settings.index: {}})
    assert ensure_index(es, settings) == current
    assert fold_properties(es, current)[1]["newsfold"]["fold_layout"] == FOLD_LAYOUT


def test_an_unknown_older_layout_is_still_refused(es, settings):
    name = f"old-{uuid.uuid4().hex[:10]}"
    mappings = layout2(settings, own=False)
    mappings["_meta"]["newsfold"]["fold_layout"] = 1
    es.indices.create(index=name, mappings=mappings)
    try:
        with pytest.raises(RuntimeError, match="fold_layout: index has 1"):
            check_meta(es, settings, name)
    finally:
        es.indices.delete(index=name)
