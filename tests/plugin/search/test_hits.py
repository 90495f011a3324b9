"""The records of hits: a Version read once from a raw hit, a story's shown version chosen once."""

from __future__ import annotations

import dataclasses

import pytest

from newsfold.plugin import StoryHit, Version, story_hits
from newsfold.plugin.hits import PUBLIC_FIELDS
from newsfold.plugin.search.story_face import face_key


def _hit(page_id: str, *, cluster: str = "s1", image: str | None = None, score: float = 1.0, **fold) -> dict:
    source = {"title": f"T {page_id}", "url": f"https://a.example/{page_id}", "site": "a.example", "lang": "en",
              "published": "2026-01-02", "lede": "L", "image": image,
              "newsfold": {"cluster_id": cluster, **fold}}  # fmt: skip
    return {"_id": page_id, "_score": score, "_source": source, "highlight": {"body": ["<mark>x</mark>"]}}


def test_a_version_reads_every_public_field_and_the_fold_fields_once():
    v = Version.from_hit(_hit("p1", origin_id="p0", origin_site="b.example", wire="AP", representative=True))
    assert v.public() == {name: _hit("p1")["_source"][name] for name in PUBLIC_FIELDS}
    assert (v.id, v.cluster_id, v.wire, v.representative) == ("p1", "s1", "AP", True)
    assert v.origin is not None and v.origin.as_json() == {"wire": None, "site": "b.example", "id": "p0"}
    assert v.fragments == ("<mark>x</mark>",) and v.score == 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.title = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("image", "shown"),
    [("https://cdn.example.com/a.jpg", "https://cdn.example.com/a.jpg"), ("https://127.0.0.1/a.jpg", None),
     ("javascript:alert(1)", None), (None, None)],
)  # fmt: skip
def test_a_version_shows_only_a_picture_on_a_public_host(image, shown):
    assert Version.from_hit(_hit("p1", image=image)).image == shown


def test_a_bad_signature_reads_as_none():
    assert Version.from_hit(_hit("p1", signature="not base64!", shingle_count=3)).signature is None


def test_a_story_shows_its_face_and_lists_its_other_versions():
    res = {"hits": {"hits": [_hit("short")]}}
    versions = {"aggregations": {"clusters": {"buckets": [{
        "key": "s1", "doc_count": 3, "reference": {"hits": {"hits": [_hit("chosen", representative=True)]}},
        "face": {"hits": {"hits": [_hit("chosen", representative=True)]}},
        "versions": {"hits": {"hits": [_hit("chosen", representative=True), _hit("short"), _hit("other")]}},
    }]}}}  # fmt: skip
    (found,) = story_hits(res, versions)
    assert isinstance(found, StoryHit)
    assert (found.shown.id, found.matched.id, found.size) == ("chosen", "short", 3)
    assert [v.id for v in found.versions] == ["short", "other"]
    assert found.shown.fragments == ("<mark>x</mark>",)  # the passage that matched, shown under the face
    (alone,) = story_hits(res)  # no listing of the versions: the hit is its own face
    assert (alone.shown, alone.versions, alone.size) == (alone.matched, (), 1)


def test_the_face_key_ranks_as_the_rule_says():
    def source(words: int, published: str, **fold) -> dict:
        return {"published": published, "newsfold": {"token_count": words, **fold}}

    chosen, full, early_full, short = (source(50, "2024-01-03", representative=True), source(90, "2024-01-02"),
                                       source(90, "2024-01-01"), source(40, "2024-01-01"))  # fmt: skip
    ranked = sorted([short, full, chosen, early_full], key=face_key)
    assert ranked == [chosen, early_full, full, short]
