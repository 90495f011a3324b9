"""Which version a result shows: pure, from hits as Elasticsearch returns them."""

from __future__ import annotations

from newsfold.plugin.search.shown_version import shown_version
from newsfold.plugin.sign.passages import passage_keys

TEXT = "\n".join(f"Paragraph {i} tells of the harbour council and its budget for the year ahead." for i in range(8))
SHORT = "\n".join(TEXT.split("\n")[:4])


def _hit(pid: str, text: str, score: float | None = None, **fold) -> dict:
    source = {"newsfold": {"cluster_id": "s", "passages": passage_keys(text), **fold}}
    return {"_id": pid, "_source": source, "_score": score}


REFS = {"s": _hit("full", TEXT)}


def test_a_shorter_hit_gives_way_to_a_full_version_that_matches():
    hit = _hit("short", SHORT, 3.0)
    versions = [_hit("full", TEXT, 2.7), hit]
    assert shown_version(hit, versions, REFS)["_id"] == "full"


def test_a_shorter_hit_stays_when_it_matched_clearly_better_or_alone():
    hit = _hit("short", SHORT, 3.0)
    assert shown_version(hit, [_hit("full", TEXT, 2.0), hit], REFS)["_id"] == "short"
    assert shown_version(hit, [_hit("full", TEXT, 0.0), hit], REFS)["_id"] == "short"
    assert shown_version(hit, [_hit("full", TEXT, None), hit], REFS)["_id"] == "short"


def test_a_full_hit_stays_and_an_editors_choice_wins():
    full = _hit("full", TEXT, 1.0)
    assert shown_version(full, [full, _hit("short", SHORT, 9.0)], REFS) is full
    chosen = _hit("short", SHORT, 0.0, representative=True)
    assert shown_version(full, [full, chosen], REFS) is chosen


def test_the_origin_counts_as_the_whole_story():
    hit = _hit("short", SHORT, 3.0, origin_id="short")
    assert shown_version(hit, [_hit("full", TEXT, 3.0), hit], REFS) is hit
