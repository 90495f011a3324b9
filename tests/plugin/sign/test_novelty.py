"""The novelty rule (plugin.sign.passages, plugin.sign.novelty) on hand-made versions of one story."""

from __future__ import annotations

import base64
import json
import random
import zlib

import pytest

from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.novelty import marked_passages, relation
from newsfold.plugin.sign.passages import (
    KEYS_VERSION,
    MAX_TOKENS,
    Layout,
    b85decode,
    b85encode,
    passage_keys,
    sentences,
)
from newsfold.plugin.sign.signing import TextMeta, sign_text
from tests.pages import story

REFERENCE = story(901, sentences=16)  # 8 paragraphs of 2 sentences
LOCAL = [
    "Councillors in Ashford said on Tuesday that the closure would cost the town two bus routes and a depot.",
    "The Ashford Gazette asked the operator whether drivers would be moved to the new site but had no answer.",
]


def text(paragraphs: list[str]) -> str:
    return "\n".join(paragraphs)


def rel(version: list[str], reference: list[str] = REFERENCE):
    return relation(passage_keys(text(reference)), passage_keys(text(version)))


def test_pure_copy_is_a_full_copy():
    found = rel(list(REFERENCE))
    assert (found.kind, found.held, found.added_paragraphs, found.added_sentences) == ("copy", 1.0, 0, 0)
    assert found.label() == "full copy"


def test_truncated_copy_is_shorter_and_says_how_much_it_holds():
    found = rel(REFERENCE[:4])
    assert found.kind == "shorter"
    assert 0.4 < found.held < 0.6
    assert found.label() == f"shorter (holds {int(found.held * 100)}%)"
    assert not found.adds


def test_copy_with_two_local_paragraphs_adds_two_paragraphs():
    found = rel([*REFERENCE[:3], LOCAL[0], *REFERENCE[3:], LOCAL[1]])
    assert found.kind == "adds"
    assert (found.added_paragraphs, found.added_sentences) == (2, 0)
    assert found.held == 1.0
    assert found.label() == "adds 2 paragraphs"
    assert found.as_json() == {"kind": "adds", "label": "adds 2 paragraphs", "held": 1.0, "added_paragraphs": 2,
                               "added_sentences": 0}  # fmt: skip


def test_local_sentence_inside_a_paragraph_counts_as_a_sentence():
    version = list(REFERENCE)
    version[2] = version[2] + " " + LOCAL[0]
    found = rel(version)
    assert (found.kind, found.added_paragraphs, found.added_sentences) == ("adds", 0, 1)
    assert found.label() == "adds 1 sentence"


def test_changed_headline_only_is_a_full_copy():
    """The headline is not part of the article text: a local headline changes nothing."""
    body = text(REFERENCE)
    a = sign_text(body, TextMeta(title="Harbour ferry strike ends", lang="en"), settings=Settings())
    b = sign_text(body, TextMeta(title="Strike over: ferries sail again in Ashford", lang="en"), settings=Settings())
    assert a.passages == passage_keys(body)
    found = relation(a.passages, b.passages)
    assert found.kind == "copy"
    assert found.label() == "full copy"


def test_shorter_and_adding_at_once():
    found = rel([*REFERENCE[:3], LOCAL[0]])
    assert found.kind == "shorter_adds"
    assert found.label().startswith("shorter (holds ") and found.label().endswith(", adds 1 paragraph")


def test_case_punctuation_and_paragraph_breaks_do_not_count():
    joined = [" ".join(REFERENCE[i : i + 2]).upper().replace(".", "!") for i in range(0, len(REFERENCE), 2)]
    found = rel(joined)
    assert found.kind == "copy"
    split = [s for p in REFERENCE for s in sentences(p)]
    assert rel(split).kind == "copy"


def test_the_reference_itself_and_missing_keys():
    keys = passage_keys(text(REFERENCE))
    assert relation(keys, keys, same=True).kind == "reference"
    assert relation(None, keys) is None
    assert relation(keys, {}) is None
    assert relation(keys, {"v": KEYS_VERSION + 1, "keys": keys["keys"]}) is None  # another scheme
    assert relation(keys, {"v": 1, "chunks": "ab:3", "sentences": ["3"]}) is None
    assert relation(keys, {"v": 2, "chunks": "ab:x", "sentences": ["3"]}) is None  # malformed
    assert relation(keys, {"v": 2, "chunks": "ab:4", "sentences": ["3"]}) is None  # shapes disagree
    assert relation(keys, {"v": 2, "chunks": "ab:3", "sentences": ["3"]}).kind == "shorter"  # layout 2 is read
    packed = base64.b85decode(keys["keys"])
    n = len(Layout.of_stored(keys).chunks)
    hashes, counts = packed[: 1 + 4 * n], zlib.decompress(packed[1 + 4 * n :], -15)

    def deflated(data: bytes) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        return packer.compress(data) + packer.flush()

    assert packed[0] == n < 128 and hashes + deflated(counts) == packed
    for bad in (
        'not base85 "',
        keys["keys"][:-3],  # cut short
        packed[:1] + packed[1 + 4 :],  # one hash missing
        hashes + deflated(counts + b"\x05"),  # one sentence too many: shapes disagree
        hashes + deflated(counts + b"\x85"),  # a varint cut short
        hashes + deflated(counts)[:-2],  # the deflated counts cut short
        hashes + deflated(counts) + b"\x00",  # something after them
        hashes + b"\xff\xff",  # not deflated
        b"\x00" + deflated(b""),  # no passage
        b"\x01\x00\x00\x00\x00" + deflated(b"\x00"),  # a passage of no tokens
        b"\x01\x00\x00\x00\x00" + deflated(b"\x80" * 200_000),  # inflates to more than any text's counts
        17,
    ):
        value = bad if isinstance(bad, str | int) else base64.b85encode(bad).decode()
        assert relation(keys, {"v": KEYS_VERSION, "keys": value}) is None, bad
    assert passage_keys("  \n ... \n") is None


def v2_form(keys: dict) -> dict:
    """The same keys as layout 2 stored them (pages ingested before layout 3)."""
    layout = Layout.of_stored(keys)
    return {
        "v": 2,
        "chunks": " ".join(f"{h:08x}:{n}" for h, n in layout.chunks),
        "sentences": [" ".join(map(str, p)) for p in layout.shape],
    }


def test_stored_form_is_compact_and_round_trips():
    keys = passage_keys(text(REFERENCE))
    assert set(keys) == {"v", "keys"} and keys["v"] == KEYS_VERSION == 3
    layout = Layout.of_stored(keys)
    assert layout == Layout.of_text(text(REFERENCE))
    assert len(layout.shape) == len(REFERENCE)
    tokens = sum(len(p.split()) for p in REFERENCE)
    assert sum(map(sum, layout.shape)) == tokens
    assert len(json.dumps(keys)) < len(json.dumps(v2_form(keys))) * 0.6  # about 6 bytes a passage, not 13
    assert len(json.dumps(keys)) < tokens * 1.2
    assert Layout.of_stored(v2_form(keys)) == layout


def test_long_sentences_and_passages_round_trip():
    """Counts above 127 take more than one byte: a 300-token sentence, a 150-token passage, 2,000 passages."""
    repeated = " ".join(["word"] * 150)  # one window repeated: it cuts everywhere or nowhere
    body = text([" ".join(f"w{i}" for i in range(300)), repeated + ".", " ".join(f"x{i}." for i in range(2000))])
    layout = Layout.of_text(body)
    assert layout.shape[:2] == ((300,), (150,)) and len(layout.shape[2]) == 2000
    assert max(n for _, n in layout.chunks) > 150 and len(layout.chunks) > 2000
    assert Layout.of_stored(layout.stored()) == layout


def test_base85_is_the_standard_librarys():
    for size in [*range(12), 1000, 4097]:
        raw = bytes(random.Random(size).randrange(256) for _ in range(size))
        assert b85encode(raw) == base64.b85encode(raw).decode()
        assert b85decode(b85encode(raw)) == raw
    for bad in ("ab cd", "~~~~~", "é", '"'):
        with pytest.raises(ValueError):
            b85decode(bad)


def test_long_text_is_keyed_on_its_beginning():
    words = " ".join(["word"] * 10) + "."
    keys = passage_keys("\n".join([words] * (MAX_TOKENS // 10 + 50)))
    assert sum(map(sum, Layout.of_stored(keys).shape)) == MAX_TOKENS


VERSIONS = {
    "copy": list(REFERENCE),
    "shorter": REFERENCE[:4],
    "adds": [*REFERENCE[:3], LOCAL[0], *REFERENCE[3:], LOCAL[1]],
    "shorter_adds": [*REFERENCE[:3], LOCAL[0]],
    "one sentence": [*REFERENCE[:2], REFERENCE[2] + " " + LOCAL[0], *REFERENCE[3:]],
}


@pytest.mark.parametrize("name", VERSIONS)
def test_a_story_mixing_layouts_2_and_3_compares_as_one_layout(name):
    """A reference stored before layout 3 and a version stored after (and the other way) relate as before."""
    ref, ver = passage_keys(text(REFERENCE)), passage_keys(text(VERSIONS[name]))
    found = relation(ref, ver)
    assert found.kind == name.replace("one sentence", "adds")
    assert relation(v2_form(ref), ver) == relation(ref, v2_form(ver)) == relation(v2_form(ref), v2_form(ver)) == found
    marked = marked_passages(text(VERSIONS[name]), ref)
    assert marked_passages(text(VERSIONS[name]), v2_form(ref)) == marked


def test_cjk_text_is_compared_by_characters():
    ref = [
        "今天上午，市政府宣布新的公交线路将于下个月开通。",
        "市民表示欢迎，并希望票价保持不变。",
        "专家认为这将缓解交通拥堵。",
    ]
    assert rel(ref[:1], ref).kind == "shorter"
    assert rel(ref, ref).kind == "copy"
    assert rel([*ref, "本报记者在现场看到，许多居民排队咨询新线路的站点信息。"], ref).adds


@pytest.mark.parametrize("version", [[*REFERENCE[:3], LOCAL[0], *REFERENCE[3:], LOCAL[1]]])
def test_marked_passages_mark_what_the_relation_counts(version):
    marked = marked_passages(text(version), passage_keys(text(REFERENCE)))
    added = [" ".join(p.text for p in row) for row in marked if any(p.added for p in row)]
    assert added == LOCAL
    assert [p.text for row in marked for p in row] == [s for para in version for s in sentences(para)]
    assert not any(p.added for row in marked_passages(text(version), None) for p in row)


def test_a_stop_standing_alone_ends_a_passage_as_it_does_inside_a_line():
    # an elision line ("...") between two lines of a listing; a copy runs the three lines together
    listing = [
        "rsync -t -l -r -c ps:jtk/ www-jefftk-com/ --delete-after",
        "...",
        "rsync -t -l -r -c ps:kf/ www-kingfisherband-com/ --delete-after",
    ]
    reference = [REFERENCE[0], *listing, REFERENCE[1]]
    merged = [REFERENCE[0], " ".join(listing), REFERENCE[1]]
    assert rel(merged, reference).kind == "copy"
    assert rel(reference, merged).kind == "copy"
