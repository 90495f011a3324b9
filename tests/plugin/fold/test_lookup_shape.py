"""The band lookup's query shape: ``terms_set`` where the server has it, one clause per key where it does not; the
same candidates either way, the most similar first (issue 36: the cheapest query shape)."""

from __future__ import annotations

from newsfold.plugin import ingest
from newsfold.plugin.client import build_client
from newsfold.plugin.fold import candidates
from tests.backends import REAL_ES
from tests.pages import signed_page, story


def test_the_lookup_finds_the_same_candidates_in_either_shape_most_shared_bands_first(es, settings):
    text, other = story(71, sentences=28), story(73, sentences=28)
    versions = [text, text[:11] + other[11:], text[:9] + other[9:], story(72)]  # ever less of it, then another story
    ingest([signed_page(settings, f"v{n}", f"Version {n}", v) for n, v in enumerate(versions)], client=es,
           settings=settings)  # fmt: skip
    es.indices.refresh(index=settings.index)
    copy = signed_page(settings, "copy", "Copy", text)
    client = build_client(settings)  # a fresh client: it tries terms_set first
    found = candidates.lookup([copy], client=client, settings=settings)["copy"]
    assert (client in candidates._REFUSE_TERMS_SET) is not REAL_ES  # only the stand-in refuses terms_set
    candidates._REFUSE_TERMS_SET.add(client)  # now the one-clause-per-key shape, on any server
    by_clauses = candidates.lookup([copy], client=client, settings=settings)["copy"]
    assert [c.page_id for c in found] == [c.page_id for c in by_clauses] == ["v0", "v1", "v2"]
    shared = [len(set(copy.band_keys) & set(signed_page(settings, f"v{n}", "", versions[n]).band_keys))
              for n in range(3)]  # fmt: skip
    assert shared[0] > shared[1] > shared[2] >= settings.min_bands  # the order is the shared bands'
