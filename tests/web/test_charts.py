"""The server-rendered SVG charts: well-formed, accessible, escaped, and drawn to scale."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from newsfold.web.charts import axis_top, bar_chart, fmt_number, heat_colour, heatmap, histogram, line_chart, nice_max

SVG = "{http://www.w3.org/2000/svg}"


def parse(markup) -> ET.Element:
    """The chart as XML (it must be well-formed to parse)."""
    return ET.fromstring(str(markup))


def rects(root: ET.Element, cls: str) -> list[ET.Element]:
    return [r for r in root.iter(f"{SVG}rect") if cls in (r.get("class") or "").split()]


def test_nice_max_and_number_format():
    assert [nice_max(v) for v in (0, 0.3, 1, 7, 12, 230, 2600)] == [1.0, 0.5, 1.0, 10.0, 20.0, 250.0, 5000.0]
    assert fmt_number(1234) == "1,234" and fmt_number(0.4567) == "0.46" and fmt_number(None) == "–"
    # counts get whole ticks (a quarter of the top is whole); other values the nice maximum
    assert [axis_top(v) for v in ([1], [3, 0], [8], [9], [17], [230], [0.3, 0.7])] == [4, 4, 8, 20, 20, 400, 1.0]


def test_bar_chart_draws_bars_to_scale_with_title_and_desc():
    svg = bar_chart([("alpha", 10), ("beta", 5), ("gamma", 0)], title="Pages per site", chart_id="c1")
    root = parse(svg)
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == "c1-title c1-desc"
    assert root.find(f"{SVG}title").text == "Pages per site"
    assert "alpha: 10" in root.find(f"{SVG}desc").text
    bars = rects(root, "nf-bar")
    assert len(bars) == 3
    widths = [float(b.get("width")) for b in bars]
    assert widths[0] == pytest.approx(2 * widths[1], rel=0.01)  # 10 is twice 5 on a linear scale
    assert widths[2] <= 1.0  # zero still shows a hairline
    # every bar group has a tooltip
    assert [g.find(f"{SVG}title").text for g in root.iter(f"{SVG}g")] == ["alpha: 10", "beta: 5", "gamma: 0"]


def test_bar_chart_respects_max_value_and_value_format():
    svg = bar_chart([("a", 0.5)], title="Share", chart_id="c2", max_value=1.0, value_format=lambda v: f"{v:.0%}")
    root = parse(svg)
    full = bar_chart([("a", 1.0)], title="Share", chart_id="c3", max_value=1.0)
    assert float(rects(root, "nf-bar")[0].get("width")) == pytest.approx(
        float(rects(parse(full), "nf-bar")[0].get("width")) / 2, rel=0.01
    )
    assert "50%" in str(svg)


def test_labels_are_escaped_and_long_labels_shortened():
    hostile = '<script>alert("x")</script> & more'
    svg = bar_chart([(hostile, 3)], title="<b>t</b>", chart_id="c4")
    text = str(svg)
    assert "<script>" not in text and "<b>" not in text
    root = parse(svg)  # still well-formed
    assert root.find(f"{SVG}title").text == "<b>t</b>"
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert any(label.endswith("…") and len(label) <= 28 for label in labels)
    # the tooltip keeps the whole label
    assert root.find(f"{SVG}g").find(f"{SVG}title").text.startswith(hostile)


def test_empty_charts_say_so():
    for svg in (
        bar_chart([], title="Nothing", chart_id="e1", empty_message="Nothing yet."),
        histogram([0, 0.5, 1], [("a", [0, 0])], title="Nothing", chart_id="e2", empty_message="Nothing yet."),
        line_chart([], title="Nothing", chart_id="e3", empty_message="Nothing yet."),
    ):
        root = parse(svg)
        assert [t.text for t in root.iter(f"{SVG}text")] == ["Nothing yet."]
        assert not list(root.iter(f"{SVG}rect"))


def test_histogram_groups_series_per_bin_with_legend():
    edges = [0, 0.25, 0.5, 0.75, 1.0]
    svg = histogram(edges, [("accepted", [0, 1, 4, 8]), ("rejected", [6, 2, 0, 0])], title="Sim", chart_id="h1")
    root = parse(svg)
    accepted, rejected = rects(root, "nf-series-0"), rects(root, "nf-series-1")
    assert len(accepted) == 4 + 1 and len(rejected) == 4 + 1  # one bar per bin plus the legend key
    heights = [float(r.get("height")) for r in accepted[:4]]
    assert heights[3] == pytest.approx(2 * heights[2], rel=0.01)
    assert heights[0] == 0
    tips = [r.find(f"{SVG}title").text for r in accepted[:4]]
    assert tips[3] == "accepted, 0.75–1: 8"
    assert "accepted" in [t.text for t in root.iter(f"{SVG}text")]


def test_histogram_rejects_mismatched_counts():
    with pytest.raises(ValueError, match="3 counts for 2 bins"):
        histogram([0, 1, 2], [("a", [1, 2, 3])], title="x", chart_id="h2")


def test_line_chart_plots_every_point_with_a_tooltip():
    points = [(f"2024-05-{d:02d}", v) for d, v in zip(range(1, 21), [0, 5, 10] * 6 + [20, 1], strict=True)]
    root = parse(line_chart(points, title="Rate", chart_id="l1", y_label="pages / 1d"))
    line = next(root.iter(f"{SVG}polyline"))
    coords = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
    assert len(coords) == 20
    xs = [x for x, _ in coords]
    assert xs == sorted(xs)
    ys = dict(zip([p[0] for p in points], [y for _, y in coords], strict=True))
    assert ys["2024-05-19"] < ys["2024-05-03"] < ys["2024-05-01"]  # higher values are drawn higher up
    dots = list(root.iter(f"{SVG}circle"))
    assert dots[18].find(f"{SVG}title").text == "2024-05-19: 20"
    tick_labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "2024-05-01" in tick_labels and "pages / 1d" in tick_labels
    assert sum(1 for t in tick_labels if t.startswith("2024-05")) <= 10  # not every point is labelled


def test_heatmap_cells_titles_links_and_colours():
    labels = ["one.test: <A>", "two.test: B", "three.test: C"]
    matrix = [[1.0, 0.9, 0.2], [0.9, 1.0, None], [0.2, None, 1.0]]
    svg = heatmap(labels, matrix, title="Sim", chart_id="hm", cell_href=lambda i, j: f"/compare?a={i}&b={j}")
    root = parse(svg)
    assert root.get("role") == "group"
    cells = rects(root, "nf-cell")
    assert len(cells) == 9
    links = list(root.iter(f"{SVG}a"))
    assert len(links) == 6  # no link on the diagonal
    assert links[0].get("href") == "/compare?a=0&b=1"
    assert "&amp;b=1" in str(svg)  # the ampersand is escaped in the attribute
    assert links[0].find(f"{SVG}title").text == "1. one.test: <A> × 2. two.test: B: 90%"
    titles = [e.text for e in root.iter(f"{SVG}title")]
    assert "2. two.test: B × 3. three.test: C: –" in titles
    fills = {(c.get("x"), c.get("y")): c.get("fill") for c in cells}
    assert len(set(fills.values())) == 4  # 1.0, 0.9, 0.2 and "no value" differ
    assert heat_colour(None) == "#c8c8c8" and heat_colour(0) != heat_colour(1)


def test_heatmap_rejects_a_matrix_of_the_wrong_shape():
    with pytest.raises(ValueError, match="2 x 2"):
        heatmap(["a", "b"], [[1.0]], title="x", chart_id="bad")


def test_stacked_bars_keep_each_series_colour():
    import xml.etree.ElementTree as ET

    from newsfold.web.charts import stacked_bar_chart

    svg = str(stacked_bar_chart([("a.test", [3, 1]), ("b.test", [0, 2])], ["own", "carried"], title="t",
                                chart_id="c"))  # fmt: skip
    ET.fromstring(svg)
    assert svg.count('class="nf-series-0"') == 3 and svg.count('class="nf-series-1"') == 3  # legend + two bars
    assert "a.test: 3 own, 1 carried" in svg
    assert "No data yet." in str(stacked_bar_chart([("a", [0, 0])], ["x", "y"], title="t", chart_id="d"))
    with pytest.raises(ValueError, match="2 series"):
        stacked_bar_chart([("a", [1])], ["x", "y"], title="t", chart_id="e")
