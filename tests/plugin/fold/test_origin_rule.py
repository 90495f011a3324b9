"""The rule of plugin/fold/origin_rule.py on plain values: what a page's time and credit are believed to say."""

from __future__ import annotations

import pytest

from newsfold.plugin.fold.origin_rule import QUORUM, Version, Wire, believed_time, decide, support, weight

SEEN = "2025-03-01T12:00:00Z"


@pytest.mark.parametrize(
    ("claimed", "expected"),
    [
        ("2025-03-01T11:00:00Z", ("2025-03-01T11:00:00.000Z", False)),  # within the bound: the claim stands
        ("2025-03-01T06:00:00Z", ("2025-03-01T10:00:00.000Z", False)),  # back-dated: no earlier than seen - 2 h
        ("2025-03-01", ("2025-03-01T10:00:00.000Z", False)),  # a day: its midnight is bounded too
        ("2025-02-20T08:00:00+01:00", ("2025-02-20T07:00:00.000Z", True)),  # an archive page keeps its claim
        ("2025-03-02T11:00:00Z", ("2025-03-02T11:00:00.000Z", False)),  # up to a day ahead of its sighting
        ("2025-03-02T13:00:00Z", (None, False)),  # further ahead: undated
        ("1989-12-31T23:59:59Z", (None, False)),  # before 1990: undated
        ("0001-01-01", (None, False)),
        ("not a date", (None, False)),
        (None, (None, False)),
    ],
)  # fmt: skip
def test_a_pages_time_is_its_claim_bounded_by_its_first_sighting(claimed, expected):
    assert believed_time(claimed, seen=SEEN) == expected


def test_a_site_weighs_by_its_best_credit_and_visible_credits_outweigh_metadata():
    assert weight("dateline") == weight("credit line") == weight("byline") > weight("meta") == weight("json-ld author")
    assert support(2, 2) == QUORUM and support(3, 0) < QUORUM and support(3, 1) == QUORUM and support(1, 5) == 1.0


def test_the_decision():
    orig, late = Version("o", "a.test", None), Version("l", "c.test", "Reuters")
    one_site = [Wire("Reuters", 1.0, late)]
    assert decide(chosen=None, earliest=orig, wires=one_site) == {
        "origin_wire": None, "origin_site": "a.test", "origin_id": "o"}  # fmt: skip
    agreed = [Wire("AP", 1.5, Version("ap", "d.test", "AP")), Wire("Reuters", 2.0, late)]
    assert decide(chosen=None, earliest=orig, wires=agreed)["origin_id"] == "l"
    first = Version("f", "b.test", "AFP")
    assert decide(chosen=None, earliest=first, wires=[Wire("AFP", 0.5, first)])["origin_wire"] == "AFP"
    assert decide(chosen=orig, earliest=first, wires=agreed)["origin_site"] == "a.test"
    assert decide(chosen=None, earliest=None, wires=[]) is None
