"""Shared reads and writes of stored pages (plugin.fold.store), against a real server."""

from __future__ import annotations

import logging

import pytest

from newsfold.indexer.jobs.reindex_chunks import restore_ingested
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.fold.document import Outcome, fold_update
from newsfold.plugin.fold.store import bulk_failures, bulk_write, cluster_page_ids, current_labels
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from tests.pages import page, story


def _ingest_two(es, settings) -> None:
    text = story(61)
    pages = [
        Page(id=i, html=page("Mayor opens bridge", text, site=f"{i}.test"), url=f"https://{i}.test/a") for i in "ab"
    ]
    ingest([sign_page(p, settings) for p in pages], client=es, settings=settings)


def _update(settings, page_id: str, **fields) -> dict:
    return {"_op_type": "update", "_index": settings.index, "_id": page_id, "doc": fields}


def test_current_labels_and_cluster_members(es, settings):
    _ingest_two(es, settings)
    labels = current_labels(["a", "b", "gone"], client=es, settings=settings)
    assert labels == {"a": "a", "b": "a"}  # a missing page is left out
    members = cluster_page_ids(["a", "zz"], client=es, settings=settings)
    assert sorted(members["a"]) == ["a", "b"]
    assert members["zz"] == []


def test_bulk_failures_skip_missing_pages_unless_asked(es, settings):
    _ingest_two(es, settings)
    actions = [
        {"_op_type": "update", "_index": settings.index, "_id": "a", "doc": fold_update(representative=True)},
        {"_op_type": "update", "_index": settings.index, "_id": "gone", "doc": fold_update(representative=True)},
    ]
    assert bulk_failures(es, actions, settings=settings) == {}
    assert set(bulk_failures(es, actions, settings=settings, missing_ok=False)) == {"gone"}


def test_bulk_write_raises_with_the_reason(es, settings):
    _ingest_two(es, settings)
    with pytest.raises(RuntimeError, match="test write failed for 1 page"):
        bulk_write(es, [_update(settings, "a", ingested="not a date")], settings=settings, what="test write")


def test_restore_ingested_reports_refused_updates(es, settings, caplog):
    """A reindex used to throw these errors away."""
    _ingest_two(es, settings)
    outcomes = [Outcome("a", "new", cluster_id="a"), Outcome("b", "duplicate", cluster_id="a")]
    with caplog.at_level(logging.WARNING, logger="newsfold.indexer.jobs.reindex_chunks"):
        refused = restore_ingested(es, settings, outcomes, {"a": "2024-05-01T10:00:00+00:00", "b": "not a date"})
    assert refused == 1
    assert "failed, first b" in caplog.text
    assert es.get(index=settings.index, id="a")["_source"]["ingested"].startswith("2024-05-01")
