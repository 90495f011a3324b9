"""Why pages share a cluster (plugin.admin.evidence, text_compare): passages, word differences, matrix, signals."""

from __future__ import annotations

import pytest

from newsfold.plugin.admin.evidence import (
    choose_representative,
    least_similar_pairs,
    membership_evidence,
    similarity_matrix,
)
from newsfold.plugin.admin.text_compare import shared_passages, word_diff
from newsfold.plugin.sign.signature import band_tokens, signed_features
from tests.pages import story
from tests.web.admin.helpers import MARKER


def test_shared_passages_and_word_diff():
    common = "the council voted to approve the new harbour budget after a long and heated debate on tuesday"
    a = f"Intro one. {common.capitalize()}. Then something else entirely happened in the town square."
    b = f"Another opening line here. {common}! A different ending follows with other words."
    passages = shared_passages(a, b, min_words=8)
    assert passages == [f"{common.capitalize()}."]  # quoted as written in the first text
    assert shared_passages(a, "nothing in common at all with the first text here", min_words=8) == []
    left, right, unchanged = word_diff("The council met.\nIt voted yes today.", "the council met!\nIt voted no today.")
    assert [s.text for s in left if s.changed] == ["yes"]
    assert [s.text for s in right if s.changed] == ["no"]
    assert "".join(s.text for s in left) == "The council met.\nIt voted yes today."
    assert unchanged == pytest.approx(12 / 14, abs=1e-4)


def test_matrix_pairs_representative_and_signals(settings):
    base = " ".join(story(11, 20))
    edited = base.replace(base.split(". ")[3], MARKER)
    sigs = [signed_features(text, settings)[0] for text in (base, base, edited)] + [None]
    matrix = similarity_matrix(sigs)
    assert matrix[0][1] == 1.0 and matrix[0][2] < 1.0 and matrix[0][3] is None and matrix[3][3] == 1.0
    pairs = least_similar_pairs(matrix)
    assert [(i, j) for i, j, _ in pairs] == [(0, 2), (1, 2), (0, 1)]  # pairs without scores are left out
    members = [
        {"id": "b", "ingested": "2024-05-02"},
        {"id": "a", "ingested": "2024-05-01"},
        {"id": "c", "ingested": "2024-05-03"},
    ]
    assert choose_representative(members) == 1  # the first seen
    members[2]["representative"] = True
    assert choose_representative(members) == 2  # an editor's choice wins
    page_a = {"id": "x", "site": "one.test", "title": "Budget Passes", "body": base}
    page_b = {"id": "y", "site": "two.test", "title": "budget  passes", "body": edited}
    ev = membership_evidence(page_a, page_b, settings, member_signature=sigs[0], reference_signature=sigs[2])
    signals = {s.name: s.matched for s in ev.signals}
    assert signals == {"jaccard": True, "containment": True, "band_keys": True, "title": True, "site": False}
    # the bands shared are counted from the two signatures: the band tokens both store
    tokens = [set(band_tokens(s.hashvalues, bands=settings.bands, rows=settings.rows)) for s in (sigs[0], sigs[2])]
    assert ev.shared_bands == len(tokens[0] & tokens[1]) >= settings.min_bands and ev.is_copy and ev.passages
    assert ev.as_dict()["signals"][0]["name"] == "jaccard"
    lonely = membership_evidence(page_a, page_b, settings, member_signature=sigs[0], reference_signature=None)
    assert lonely.jaccard is None and not lonely.is_copy
