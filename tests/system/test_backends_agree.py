"""The real node and the stand-in give the same answers where both should agree (``--backend elasticsearch``).

One host index, built the way docs/embedding.md tells a host to (component
template, index template, the host's own documents, then ``ingest`` and
partial updates), is filled the same way on the session's real node and on
a fresh osmem stand-in. Then the same requests go to both: cluster ids, a
folded search (collapse, inner hits, story totals), highlighting, paging,
``msearch``, a host's partial update and the ``_meta`` check. Where the
engines may differ (relevance scores), only what a reader sees is compared.
"""

from __future__ import annotations

import uuid

import pytest

from newsfold.embedded import EmbeddedElasticsearch
from newsfold.plugin import (
    TextMeta,
    component_template,
    fold_query,
    fold_search,
    folded_hits,
    ingest,
    sign_text,
    story_count,
)
from newsfold.plugin.client import build_client
from tests.pages import story

pytestmark = pytest.mark.realnode

SECTIONS = ("politics", "sport", "weather")


def _build(client, settings, host: str) -> dict[str, str]:
    """The host index with three stories of three copies each and three lone pages; the outcomes' statuses."""
    client.cluster.put_component_template(name=f"{host}-newsfold", **component_template(settings))
    client.indices.put_index_template(
        name=host, index_patterns=[host], composed_of=[f"{host}-newsfold"],
        template={"settings": {"number_of_shards": 1, "number_of_replicas": 0, "refresh_interval": "100ms"},
                  "mappings": {"properties": {"headline": {"type": "text"}, "section": {"type": "keyword"},
                                              "body": {"type": "text"}, "published": {"type": "date"}}}},
    )  # fmt: skip
    client.indices.create(index=host)
    docs = []
    for s in range(3):
        for c in range(3):
            paras = story(700 + s)
            docs.append(
                (f"s{s}c{c}", f"Harbour story {s} as told by site {c}", paras, SECTIONS[s], f"2026-03-0{s + 1}")
            )
    for n in range(3):
        docs.append((f"lone{n}", f"A lone harbour report {n}", story(760 + n), "local", f"2026-03-0{n + 4}"))
    statuses = {}
    for doc_id, headline, paras, section, published in docs:  # one page per call: the same order on both engines
        text = "\n\n".join(paras)
        client.index(
            index=host,
            id=doc_id,
            document={
                "headline": headline,
                "section": section,
                "body": text,
                "published": f"{published}T0{len(statuses) % 10}:00:00Z",
            },
        )
        signed = sign_text(text, TextMeta(title=headline, page_id=doc_id), settings=settings)
        (outcome,) = ingest([signed], client=client, settings=settings, index=host)
        statuses[doc_id] = outcome.status
    client.indices.refresh(index=host)
    return statuses


def _drop(client, host: str) -> None:
    client.options(ignore_status=404).indices.delete(index=host)
    client.options(ignore_status=404).indices.delete_index_template(name=host)
    client.options(ignore_status=404).cluster.delete_component_template(name=f"{host}-newsfold")


@pytest.fixture
def both(settings):
    """(real client, stand-in client, host index name, statuses on each)."""
    standin = EmbeddedElasticsearch()
    real = build_client(settings)
    other = build_client(settings.replace(elasticsearch_url=standin.url))
    host = f"agree-{uuid.uuid4().hex[:10]}"
    try:
        statuses = (_build(real, settings, host), _build(other, settings, host))
        yield real, other, host, statuses
    finally:
        _drop(real, host)
        real.close()
        other.close()
        standin.close()


def _labels(client, host: str) -> dict[str, str]:
    res = client.search(index=host, size=100, source=["newsfold.cluster_id"], query={"match_all": {}})
    return {h["_id"]: h["_source"]["newsfold"]["cluster_id"] for h in res["hits"]["hits"]}


def _stories(response) -> list[tuple[str, list[str], int]]:
    return [
        (s["hit"]["_id"], sorted(v["_id"] for v in s["versions"]), s["other_versions"]) for s in folded_hits(response)
    ]


BY_DATE = [{"published": "desc"}]


def test_ingest_gives_the_same_outcomes_and_clusters(both):
    real, other, host, (on_real, on_standin) = both
    assert on_real == on_standin
    assert sorted(on_real.values()).count("new") == 6  # three stories and three lone pages
    assert _labels(real, host) == _labels(other, host)
    assert len(set(_labels(real, host).values())) == 6


def test_folded_search_collapse_inner_hits_and_story_totals_agree(both):
    real, other, host, _ = both
    body = {"query": {"match_all": {}}, "sort": BY_DATE, "size": 10}
    answers = [fold_search(c, body, index=host, versions=3) for c in (real, other)]
    assert _stories(answers[0]) == _stories(answers[1])
    assert [story_count(a) for a in answers] == [6, 6]
    assert [a["hits"]["total"]["value"] for a in answers] == [12, 12]  # hits.total counts documents


def test_a_text_query_finds_the_same_stories_with_highlights(both):
    real, other, host, _ = both
    body = {
        "query": {"match": {"headline": {"query": "harbour story", "operator": "and"}}},
        "size": 10,
        "highlight": {"fields": {"headline": {}}},
    }
    answers = [fold_search(c, body, index=host) for c in (real, other)]
    groups = [{frozenset([s, *versions]) for s, versions, _ in _stories(a)} for a in answers]
    assert groups[0] == groups[1]  # the same stories; which copy heads each may differ with the engines' scores
    assert [story_count(a) for a in answers] == [3, 3]
    for answer in answers:
        fragments = [f for hit in answer["hits"]["hits"] for f in hit.get("highlight", {}).get("headline", [])]
        assert fragments and all("<em>" in f for f in fragments)


def test_paging_two_stories_at_a_time_walks_the_same_order(both):
    real, other, host, _ = both
    walks = []
    for client in (real, other):
        seen = []
        for start in range(0, 8, 2):
            res = fold_search(client, {"query": {"match_all": {}}, "sort": BY_DATE, "from": start, "size": 2},
                              index=host)  # fmt: skip
            seen += [h["_id"] for h in res["hits"]["hits"]]
        walks.append(seen)
    assert walks[0] == walks[1]
    assert len(walks[0]) == len(set(walks[0])) == 6  # no repeats, no gaps


def test_msearch_and_a_story_level_aggregation_agree(both):
    real, other, host, _ = both
    bodies = [fold_query({"query": {"term": {"section": s}}, "sort": BY_DATE, "size": 5}) for s in SECTIONS]
    searches = [part for body in bodies for part in ({"index": host}, body)]
    answers = [c.msearch(searches=searches)["responses"] for c in (real, other)]
    assert [[_stories(r) for r in a] for a in answers][0] == [[_stories(r) for r in a] for a in answers][1]
    assert [story_count(r) for r in answers[0]] == [1, 1, 1]


def test_a_host_partial_update_keeps_the_fold_fields_on_both(both):
    real, other, host, _ = both
    for client in (real, other):
        client.update(index=host, id="s0c1", doc={"section": "world"}, refresh="wait_for")
    docs = [c.get(index=host, id="s0c1")["_source"] for c in (real, other)]
    assert docs[0]["section"] == docs[1]["section"] == "world"
    clocked = ("folded", "first_seen", "committed_by")  # when, by the clock; a commit's own random token
    fold = [{k: v for k, v in d["newsfold"].items() if k not in clocked} for d in docs]
    assert fold[0] == fold[1] and all(d["newsfold"]["folded"] and d["newsfold"]["first_seen"] for d in docs)
    assert docs[0]["newsfold"]["cluster_id"] == _labels(real, host)["s0c0"]


def test_a_signature_that_does_not_fit_the_index_is_refused_on_both(both, settings):
    real, other, host, _ = both
    wrong = settings.replace(seed=settings.seed + 1)
    signed = sign_text("\n\n".join(story(799)), TextMeta(page_id="odd"), settings=wrong)
    errors = []
    for client in (real, other):
        with pytest.raises(RuntimeError) as err:
            ingest([signed], client=client, settings=wrong, index=host)
        errors.append(str(err.value))
    assert errors[0] == errors[1] and "seed" in errors[0]
