"""The searches the fold decides on answer from every shard or fail (``lookups.WHOLE``), never from some of them.

Elasticsearch answers a search some of whose shards failed with 200 and the other shards' hits. Here one index
behind the alias maps newsfold's fields as numbers, so its shard refuses every query of the fold while the real
index answers: a partial answer would look complete.
"""

from __future__ import annotations

import pytest
from elasticsearch import ApiError

from newsfold.plugin import ingest
from newsfold.plugin.errors import ServerError
from newsfold.plugin.fold.candidates import lookup
from newsfold.plugin.fold.regroup import relabel
from newsfold.plugin.fold.store import current_labels
from tests.pages import signed_page, story

#: the stand-in has no shard that fails on its own
realnode = pytest.mark.realnode


def _refusing_index(es, settings) -> str:
    """An index behind the alias (not its write index) whose fold fields are numbers: the fold's term queries on
    them fail on its shard (``number_format_exception``)."""
    name = f"{settings.index}-refusing"
    numbers = {"type": "long"}
    es.indices.create(index=name, mappings={"properties": {"newsfold": {"properties": {
        "cluster_id": numbers, "bands": {"properties": {"terms": numbers}}}}}})  # fmt: skip
    es.indices.put_alias(index=name, name=settings.index)
    return name


@realnode
def test_a_band_lookup_a_shard_refuses_fails_instead_of_answering_from_the_others(es, settings):
    first = signed_page(settings, "w1", "Harbour strike", story(801), site="a.test")
    ingest([first], client=es, settings=settings)
    _refusing_index(es, settings)
    copy = signed_page(settings, "w2", "Harbour strike ends", story(801), site="b.test")
    with pytest.raises(ServerError, match="band lookup failed for w2"):
        lookup([copy], client=es, settings=settings)


@realnode
def test_a_relabel_a_shard_refuses_moves_nothing_and_fails(es, settings):
    ingest([signed_page(settings, "m1", "Ferry", story(802), site="a.test")], client=es, settings=settings)
    ingest([signed_page(settings, "m2", "Museum", story(803), site="a.test")], client=es, settings=settings)
    _refusing_index(es, settings)
    with pytest.raises(ApiError):
        relabel("m2", "m1", client=es, settings=settings)
    assert current_labels(["m1", "m2"], client=es, settings=settings) == {"m1": "m1", "m2": "m2"}


@realnode
def test_a_search_of_a_shard_not_started_yet_waits_for_it_instead_of_answering_without_it(es, settings):
    """A new index behind the alias whose primary is not started (allocated nowhere until the search waits): the
    search waits for it, as reads by id do, and answers from both indices."""
    import logging

    from newsfold.plugin.fold import by_id

    ingest([signed_page(settings, "s1", "Ferry", story(804), site="a.test")], client=es, settings=settings)
    late = f"{settings.index}-late"
    es.indices.create(index=late, settings={"index.routing.allocation.require._name": "nowhere"},
                      wait_for_active_shards="0")  # fmt: skip
    es.indices.put_alias(index=late, name=settings.index)

    class Start(logging.Handler):  # lifts the filter once the search says it waits
        def emit(self, record):
            if "not started" in record.getMessage():
                es.indices.put_settings(index=late, settings={"index.routing.allocation.require._name": None})

    handler, level = Start(), by_id.log.level
    by_id.log.addHandler(handler)
    by_id.log.setLevel(logging.INFO)
    try:
        res = by_id.search_whole(es, settings.index, query={"match_all": {}})
    finally:
        by_id.log.removeHandler(handler)
        by_id.log.setLevel(level)
    assert res["_shards"]["failed"] == 0 and res["_shards"]["successful"] == res["_shards"]["total"]
    assert [h["_id"] for h in res["hits"]["hits"]] == ["s1"]


@realnode
def test_a_reindex_read_a_shard_refuses_fails_instead_of_leaving_its_pages_out(es, settings):
    """The period reindex reads its old index by scroll: a page a failed shard left out would be missing from the
    rebuilt index once the alias moves."""
    from newsfold.indexer.jobs.reindex_chunks import scan

    ingest([signed_page(settings, "r1", "Ferry", story(805), site="a.test")], client=es, settings=settings)
    _refusing_index(es, settings)
    with pytest.raises(ApiError):
        list(scan(es, settings.index, {"term": {"newsfold.cluster_id": "r1"}}, size=10))


def test_a_scroll_page_some_shards_failed_is_an_error_the_workers_retry():
    from newsfold.plugin.fold.by_id import whole

    answered = {"_shards": {"total": 3, "successful": 3, "failed": 0}, "hits": {"hits": []}}
    assert whole(answered, "reading x") is answered
    failed = {"_shards": {"total": 3, "successful": 2, "failed": 1, "failures": [{"reason": {"type": "node_lost"}}]}}
    with pytest.raises(ServerError, match=r"reading x: 1 of 3 shards failed") as raised:
        whole(failed, "reading x")
    assert raised.value.status == 503
