"""The origin orders of plugin/fold/origin_order.py: the index and the in-memory decision rank alike, ties included."""

from __future__ import annotations

import random

from elasticsearch.helpers import bulk

from newsfold.plugin.fold.document import fold_of
from newsfold.plugin.fold.origin_order import earliest_first, sort_clauses, sort_key, source_value
from newsfold.plugin.fold.provenance import refresh_origins, story_origin

TIMES = ["2025-03-01T10:00:00.000Z", "2025-03-01T10:00:00.0004Z", "2025-03-01T09:00:00Z", "2025-03-01", None]
WIRES = ["Reuters", "AP", "AFP", "dpa", "PA", "PTI", "Xinhua", None, None]


def _stories(n: int = 40, seed: int = 7) -> dict[str, list[tuple[str, dict]]]:
    """Stories whose versions tie on every time (sub-millisecond differences too), miss fields, share sites and
    credit many wires; at most one version of a story has no indexed URL key, so no two versions tie on all."""
    rng = random.Random(seed)
    stories: dict[str, list[tuple[str, dict]]] = {}
    for s in range(n):
        versions = []
        for v in range(rng.randint(2, 12)):
            domain = rng.choice(["a.test", "b.test", "c.test", "d.test", "e.test", None])
            fold = {"cluster_id": f"s{s}", "site_key": domain or f"legacy{v % 3}.test", "domain": domain,
                    "believed_time": rng.choice(TIMES), "archive_aged": rng.choice([True, False, None]),
                    "wire": rng.choice(WIRES), "wire_by": rng.choice(["dateline", "meta", None]),
                    "url_key": f"u{v:02d}" if v else rng.choice([None, "x" * 2049, "u"])}  # fmt: skip
            versions.append((f"s{s}-{v}", {"published": rng.choice(TIMES), "ingested": rng.choice(TIMES[:3]),
                                           "newsfold": {k: x for k, x in fold.items() if x is not None}}))  # fmt: skip
        stories[f"s{s}"] = versions
    return stories


def test_the_index_and_memory_decide_the_same_origin_on_ties(es, settings):
    stories = _stories()
    docs = [v for versions in stories.values() for v in versions]
    bulk(es, [{"_index": settings.index, "_id": i, "_source": s} for i, s in docs], refresh=True)
    order = earliest_first()
    for cluster in stories:
        hits = es.search(index=settings.index, size=100, query={"term": {"newsfold.cluster_id": cluster}},
                         sort=sort_clauses(order))["hits"]["hits"]  # fmt: skip
        keys = [sort_key(order, source_value(h["_source"])) for h in hits]
        assert keys == sorted(keys), cluster  # the index's order is the key's
    # what the index decides (refresh_origins writes it on every page) is what memory decides
    assert refresh_origins(list(stories), client=es, settings=settings, refresh=True) == len(docs)
    stored = {h["_id"]: fold_of(h["_source"]) for h in es.search(index=settings.index, size=1000)["hits"]["hits"]}
    decided = {}
    for cluster, versions in stories.items():
        held = {(stored[i].get("origin_wire"), stored[i].get("origin_site"), stored[i]["origin_id"])
                for i, _ in versions}  # fmt: skip
        origin = story_origin(versions)
        assert origin is not None
        assert held == {(origin["origin_wire"], origin["origin_site"], origin["origin_id"])}, cluster
        decided[cluster] = origin
    # the stories exercise both rules: wire stories and site stories
    assert {o["origin_wire"] is None for o in decided.values()} == {True, False}


def test_a_wire_rank_tie_on_sites_goes_to_the_wire_more_pages_credit(es, settings):
    """Six wires, each credited visibly by two sites: five are weighed, the one fewest pages credit is not."""
    versions = []
    for w, wire in enumerate(["Aardvark", "Bee", "Cat", "Dog", "Eel", "Fox"]):
        for p in range(2 if w == 0 else 3):
            domain = "a.test" if p % 2 else "b.test"
            versions.append((f"{wire}-{p}", {"published": "2025-03-01T10:00:00Z", "ingested": "2025-03-01T10:00:00Z",
                                             "newsfold": {"cluster_id": "s", "site_key": domain, "domain": domain,
                                                          "wire": wire, "wire_by": "dateline",
                                                          "url_key": f"{wire}-{p}"}}))  # fmt: skip
    bulk(es, [{"_index": settings.index, "_id": i, "_source": s} for i, s in versions], refresh=True)
    refresh_origins(["s"], client=es, settings=settings, refresh=True)
    held = fold_of(es.get(index=settings.index, id="Aardvark-0")["_source"])
    origin = story_origin(versions)
    assert origin is not None
    assert origin["origin_wire"] == held["origin_wire"] == "Bee"
