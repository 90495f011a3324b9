"""The story timeline chart (web.charts.timeline)."""

from __future__ import annotations

from newsfold.web.charts import timeline


def test_timeline_draws_one_bar_per_interval_and_labelled_markers():
    svg = str(timeline([("9 Mar 08:00", 2), ("9 Mar 20:00", 0), ("10 Mar 08:00", 3)], title="When versions appeared",
                       chart_id="tl", markers=[(0, "first: a.test <b>")]))  # fmt: skip
    assert svg.count("<rect") == 3
    assert "9 Mar 08:00: 2 version(s)" in svg and "10 Mar 08:00: 3 version(s)" in svg
    assert "first: a.test &lt;b&gt;" in svg and "<b>" not in svg
    assert svg.count("<polygon") == 1


def test_timeline_without_dated_versions_says_so():
    empty = str(timeline([("x", 0)], title="t", chart_id="e"))
    assert "No dated versions." in empty and "<rect" not in empty
