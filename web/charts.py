"""Server-rendered SVG charts: bar charts, histogram, line chart, heat map and a story's timeline.

Pure functions from numbers to an SVG string (``Markup``, safe to insert in a
template): no JavaScript, no external library, nothing fetched from a CDN.
Every label is escaped. Each chart has a ``<title>`` and ``<desc>`` (named by
``aria-labelledby``); pages show the same numbers in a table next to it for
screen readers and copying. Colours are presentation attributes that
``admin.css`` may override through the ``nf-*`` classes (dark mode).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import Markup

from newsfold.web.svg import (
    FONT,
    SERIES_COLOURS,
    attrs,
    axis_top,
    empty_chart,
    fmt_number,
    nice_max,
    short,
    svg_document,
    text,
    tooltip,
    y_axis,
)


def bar_chart(
    items: Sequence[tuple[str, float]],
    *,
    title: str,
    chart_id: str,
    value_format: Callable[[float], str] = fmt_number,
    max_value: float | None = None,
    width: int = 640,
    empty_message: str = "No data yet.",
) -> Markup:
    """A horizontal bar chart, one bar per ``(label, value)`` in the given order.

    Args:
        items: labels and values (negative values are drawn as 0).
        title: the chart's accessible title.
        chart_id: a page-unique id for the ``<svg>`` (its title and desc ids derive from it).
        value_format: formats the value written after each bar and in its tooltip.
        max_value: the value of a full-length bar (``nice_max`` of the largest value by default).
        width: drawing width in pixels (the SVG scales down on narrow screens).
        empty_message: shown instead of bars when ``items`` is empty.

    Returns:
        The SVG markup.
    """
    if not items:
        return empty_chart(chart_id, title, empty_message)
    bar_h, gap, top = 20, 6, 8
    label_w = min(220, 10 + FONT * 0.6 * max(len(short(label)) for label, _ in items))
    value_w = 70
    plot_w = max(60, width - label_w - value_w)
    top_value = max_value if max_value is not None else nice_max(max(v for _, v in items))
    height = top + len(items) * (bar_h + gap) + gap
    body = []
    for k, (label, value) in enumerate(items):
        y = top + k * (bar_h + gap)
        length = plot_w * max(0.0, min(1.0, value / top_value)) if top_value else 0.0
        shown = value_format(value)
        bar = attrs(x=label_w, y=y, width=max(length, 1.0), height=bar_h, class_="nf-bar", fill=SERIES_COLOURS[0])
        body.append(
            "<g>"
            + tooltip(f"{label}: {shown}")
            + text(label_w - 6, y + bar_h * 0.7, short(label), text_anchor="end", class_="nf-label")
            + f"<rect{bar}/>"
            + text(label_w + length + 4, y + bar_h * 0.7, shown, class_="nf-value")
            + "</g>"
        )
    desc = "; ".join(f"{label}: {value_format(value)}" for label, value in items)
    return svg_document(chart_id, width, height, title, desc, body)


def stacked_bar_chart(
    items: Sequence[tuple[str, Sequence[float]]],
    series: Sequence[str],
    *,
    title: str,
    chart_id: str,
    width: int = 640,
    empty_message: str = "No data yet.",
) -> Markup:
    """Horizontal bars, one per ``(label, values)``, each split into its ``series`` parts, with a legend.

    Raises:
        ValueError: an item does not have one value per series.
    """
    for label, values in items:
        if len(values) != len(series):
            raise ValueError(f"item {label!r} has {len(values)} values for {len(series)} series")
    if not items or not any(v for _, values in items for v in values):
        return empty_chart(chart_id, title, empty_message)
    bar_h, gap, top = 20, 6, 26
    label_w = min(220, 10 + FONT * 0.6 * max(len(short(label)) for label, _ in items))
    value_w = 90
    plot_w = max(60, width - label_w - value_w)
    top_value = nice_max(max(sum(values) for _, values in items))
    height = top + len(items) * (bar_h + gap) + gap
    body = []
    x = label_w
    for s, name in enumerate(series):  # the legend
        colour = SERIES_COLOURS[s % len(SERIES_COLOURS)]
        body.append(f"<rect{attrs(x=x, y=6, width=12, height=12, class_=f'nf-series-{s}', fill=colour)}/>"
                    + text(x + 16, 16, name, class_="nf-label"))  # fmt: skip
        x += 24 + FONT * 0.6 * len(name)
    for k, (label, values) in enumerate(items):
        y = top + k * (bar_h + gap)
        parts = [text(label_w - 6, y + bar_h * 0.7, short(label), text_anchor="end", class_="nf-label")]
        x = label_w
        for s, value in enumerate(values):
            length = plot_w * max(0.0, value) / top_value if top_value else 0.0
            # the series' class, not "nf-bar": the stylesheet paints each series in its own colour
            rect = attrs(x=x, y=y, width=max(length, 0.0), height=bar_h, class_=f"nf-series-{s}",
                          fill=SERIES_COLOURS[s % len(SERIES_COLOURS)])  # fmt: skip
            parts.append(f"<rect{rect}>{tooltip(f'{label}: {fmt_number(value)} {series[s]}')}</rect>")
            x += length
        shown = " / ".join(fmt_number(v) for v in values)
        parts.append(text(x + 4, y + bar_h * 0.7, shown, class_="nf-value"))
        body.append("<g>" + "".join(parts) + "</g>")
    desc = "; ".join(f"{label}: " + ", ".join(f"{fmt_number(v)} {n}" for n, v in zip(series, values, strict=True))
                     for label, values in items)  # fmt: skip
    return svg_document(chart_id, width, height, title, desc, body)


def histogram(
    edges: Sequence[float],
    series: Sequence[tuple[str, Sequence[int]]],
    *,
    title: str,
    chart_id: str,
    x_label: str = "",
    y_label: str = "",
    edge_format: Callable[[float], str] = fmt_number,
    width: int = 640,
    height: int = 240,
    empty_message: str = "No data yet.",
) -> Markup:
    """Vertical bars over contiguous bins, one bar per series in each bin (grouped), with a legend.

    Args:
        edges: the ``n + 1`` bin edges of ``n`` bins.
        series: ``(name, counts)`` with ``n`` counts each.
        title: the chart's accessible title.
        chart_id: a page-unique id for the ``<svg>``.
        x_label: caption of the horizontal axis.
        y_label: caption of the vertical axis.
        edge_format: formats the edges in tick labels and tooltips.
        width: drawing width.
        height: drawing height.
        empty_message: shown when every count is 0.

    Returns:
        The SVG markup.

    Raises:
        ValueError: a series does not have one count per bin.
    """
    bins = len(edges) - 1
    for name, counts in series:
        if len(counts) != bins:
            raise ValueError(f"series {name!r} has {len(counts)} counts for {bins} bins")
    if bins < 1 or not any(c for _, counts in series for c in counts):
        return empty_chart(chart_id, title, empty_message, width)
    left, right, top, bottom = 48, 8, 24, 40 + (16 if len(series) > 1 else 0)
    plot_w, plot_h = width - left - right, height - top - bottom
    y0 = top + plot_h
    top_value = axis_top([c for _, counts in series for c in counts])
    body = y_axis(left, y0, plot_h, plot_w, top_value, y_label)
    bin_w = plot_w / bins
    spans = [f"{edge_format(edges[b])}–{edge_format(edges[b + 1])}" for b in range(bins)]
    body += _grouped_bars(series, spans, left=left, y0=y0, bin_w=bin_w, plot_h=plot_h, top_value=top_value)
    step = max(1, math.ceil(bins / 10))
    for b in range(0, bins + 1, step):
        body.append(text(left + b * bin_w, y0 + 14, edge_format(edges[b]), text_anchor="middle", class_="nf-muted"))
    if x_label:
        body.append(text(left + plot_w / 2, y0 + 30, x_label, text_anchor="middle", class_="nf-muted"))
    if len(series) > 1:
        body += _legend_below([name for name, _ in series], x=left, y=height - 12)
    desc = "; ".join(f"{name}: " + ", ".join(f"{spans[b]} {counts[b]}" for b in range(bins)) for name, counts in series)
    return svg_document(chart_id, width, height, title, desc, body)


def _grouped_bars(
    series: Sequence[tuple[str, Sequence[int]]], spans: Sequence[str], *, left: float, y0: float, bin_w: float,
    plot_h: float, top_value: float,
) -> list[str]:
    """One bar per series in each bin, side by side, each with a tooltip naming its series, bin and count."""
    bar_w = max(1.0, (bin_w - 2) / len(series))
    out = []
    for b, span in enumerate(spans):
        x = left + b * bin_w
        for s, (name, counts) in enumerate(series):
            h = plot_h * counts[b] / top_value
            rect = attrs(x=x + 1 + s * bar_w, y=y0 - h, width=bar_w, height=max(h, 0.0), class_=f"nf-series-{s}",
                         fill=SERIES_COLOURS[s % len(SERIES_COLOURS)])  # fmt: skip
            out.append(f"<rect{rect}>{tooltip(f'{name}, {span}: {fmt_number(counts[b])}')}</rect>")
    return out


def _legend_below(names: Sequence[str], *, x: float, y: float) -> list[str]:
    """A swatch and the name of each series, in a row from ``(x, y)``."""
    out = []
    for s, name in enumerate(names):
        colour = SERIES_COLOURS[s % len(SERIES_COLOURS)]
        out.append(f"<rect{attrs(x=x, y=y, width=10, height=10, class_=f'nf-series-{s}', fill=colour)}/>")
        out.append(text(x + 14, y + 9, name, class_="nf-label"))
        x += 24 + FONT * 0.6 * len(name)
    return out


def line_chart(
    points: Sequence[tuple[str, float]],
    *,
    title: str,
    chart_id: str,
    y_label: str = "",
    width: int = 640,
    height: int = 220,
    empty_message: str = "No data yet.",
) -> Markup:
    """A line over evenly spaced points ``(label, value)`` (a time series with a fixed interval).

    About eight of the labels are written under the axis; every point has a
    tooltip with its label and value.

    Returns:
        The SVG markup.
    """
    if not points:
        return empty_chart(chart_id, title, empty_message, width)
    left, right, top, bottom = 48, 12, 24, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    y0 = top + plot_h
    top_value = axis_top([v for _, v in points])
    body = y_axis(left, y0, plot_h, plot_w, top_value, y_label)
    step_x = plot_w / max(1, len(points) - 1)
    coords = [(left + k * step_x, y0 - plot_h * max(0.0, v) / top_value) for k, (_, v) in enumerate(points)]
    if len(points) == 1:
        coords = [(left + plot_w / 2, coords[0][1])]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    body.append(f"<polyline{attrs(points=path, fill='none', class_='nf-line', stroke=SERIES_COLOURS[0])}/>")
    for (x, y), (label, value) in zip(coords, points, strict=True):
        dot = attrs(cx=x, cy=y, r=3, class_="nf-dot", fill=SERIES_COLOURS[0])
        body.append(f"<circle{dot}>{tooltip(f'{label}: {fmt_number(value)}')}</circle>")
    every = max(1, math.ceil(len(points) / 8))
    for k in range(0, len(points), every):
        body.append(text(coords[k][0], y0 + 16, short(points[k][0], 16), text_anchor="middle", class_="nf-muted"))
    desc = "; ".join(f"{label}: {fmt_number(value)}" for label, value in points)
    return svg_document(chart_id, width, height, title, desc, body)


def heat_colour(value: float | None) -> str:
    """A cell colour from pale (0) to deep blue (1); grey for no value."""
    if value is None:
        return "#c8c8c8"
    t = max(0.0, min(1.0, float(value)))
    low, high = (240, 244, 250), (8, 48, 107)
    r, g, b = (round(lo + (hi - lo) * t) for lo, hi in zip(low, high, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(
    labels: Sequence[str],
    matrix: Sequence[Sequence[float | None]],
    *,
    title: str,
    chart_id: str,
    cell_href: Callable[[int, int], str | None] | None = None,
    value_format: Callable[[float | None], str] = lambda v: "–" if v is None else f"{round(v * 100)}%",
) -> Markup:
    """A square heat map of pairwise scores in [0, 1]; rows and columns are labelled 1..n.

    Every cell has a ``<title>`` naming both pages and the score. With
    ``cell_href``, off-diagonal cells are links (reachable with the keyboard)
    to, for example, a side-by-side comparison. ``labels`` (the page names)
    go into the tooltips; the axis shows the numbers, which the page's legend
    table explains.

    Returns:
        The SVG markup.

    Raises:
        ValueError: the matrix is not n x n for n labels.
    """
    n = len(labels)
    if len(matrix) != n or any(len(row) != n for row in matrix):
        raise ValueError(f"the matrix must be {n} x {n} for {n} labels")
    if n == 0:
        return empty_chart(chart_id, title, "No pages to compare.")
    cell = max(12, min(44, 540 // n))
    margin = 28
    size = margin + n * cell + 4
    body = []
    for k in range(n):
        centre = margin + k * cell + cell / 2
        body.append(text(centre, margin - 8, str(k + 1), text_anchor="middle", class_="nf-muted"))
        body.append(text(margin - 6, centre + 4, str(k + 1), text_anchor="end", class_="nf-muted"))
    show_numbers = cell >= 30
    for i in range(n):
        for j in range(n):
            value = matrix[i][j]
            tip = f"{i + 1}. {labels[i]} × {j + 1}. {labels[j]}: {value_format(value)}"
            shape = _heat_cell(value, x=margin + j * cell, y=margin + i * cell, cell=cell, number=show_numbers)
            href = cell_href(i, j) if cell_href is not None and i != j else None
            if href:
                body.append(f"<a{attrs(href=href, class_='nf-cell-link')}>{tooltip(tip)}{shape}</a>")
            else:
                body.append(f"<g>{tooltip(tip)}{shape}</g>")
    desc = f"Pairwise similarity of {n} pages; darker is more similar."
    return svg_document(chart_id, size, size, title, desc, body, role="group" if cell_href else "img")


def _heat_cell(value: float | None, *, x: float, y: float, cell: int, number: bool) -> str:
    """One square of the heat map, with its score written on it when ``number`` (ink chosen for contrast)."""
    shape = f"<rect{attrs(x=x, y=y, width=cell - 1, height=cell - 1, fill=heat_colour(value), class_='nf-cell')}/>"
    if number and value is not None:
        ink = "light" if value >= 0.55 else "dark"
        fill = "#ffffff" if ink == "light" else "#1d1d1f"
        label = str(round(value * 100))
        shape += text(x + cell / 2, y + cell / 2 + 4, label, text_anchor="middle", fill=fill, font_size=10,
                      class_=f"nf-ink-{ink}")  # fmt: skip
    return shape


def timeline(
    buckets: Sequence[tuple[str, int]],
    *,
    title: str,
    chart_id: str,
    markers: Sequence[tuple[int, str]] = (),
    width: int = 640,
    height: int = 180,
    empty_message: str = "No dated versions.",
) -> Markup:
    """When the versions of a story appeared: one bar per interval, with labelled markers above some intervals.

    Args:
        buckets: ``(interval label, versions)`` for contiguous, equal intervals, oldest first.
        title: the chart's accessible title.
        chart_id: a page-unique id for the ``<svg>``.
        markers: ``(bucket index, label)``, e.g. where the first publisher is.
        width: drawing width.
        height: drawing height.
        empty_message: shown when no interval has a version.

    Returns:
        The SVG markup.
    """
    if not buckets or not any(count for _, count in buckets):
        return empty_chart(chart_id, title, empty_message, width)
    left, right, top, bottom = 48, 12, 34, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    y0 = top + plot_h
    top_value = axis_top([count for _, count in buckets])
    body = y_axis(left, y0, plot_h, plot_w, top_value, "versions")
    bin_w = plot_w / len(buckets)
    for k, (label, count) in enumerate(buckets):
        h = plot_h * count / top_value
        rect = attrs(x=left + k * bin_w + 1, y=y0 - h, width=max(1.0, bin_w - 2), height=max(h, 0.0),
                      class_="nf-bar", fill=SERIES_COLOURS[0])  # fmt: skip
        body.append(f"<rect{rect}>{tooltip(f'{label}: {fmt_number(count)} version(s)')}</rect>")
    for k, label in markers:
        if not 0 <= k < len(buckets):
            continue
        x = left + (k + 0.5) * bin_w
        height_k = plot_h * buckets[k][1] / top_value
        tip_y = y0 - height_k - 4
        points = f"{x - 5:.1f},{tip_y - 8:.1f} {x + 5:.1f},{tip_y - 8:.1f} {x:.1f},{tip_y:.1f}"
        anchor = "start" if x < left + plot_w / 2 else "end"
        body.append(
            f"<g class='nf-marker'>{tooltip(label)}"
            f"<polygon{attrs(points=points, fill=SERIES_COLOURS[1], class_='nf-series-1')}/>"
            + text(x + (-8 if anchor == "end" else 8), max(12.0, tip_y - 10), short(label, 40),
                    text_anchor=anchor, class_="nf-label")  # fmt: skip
            + "</g>"
        )
    for k in sorted({0, len(buckets) - 1}):
        anchor = "start" if k == 0 else "end"
        x = left + (k * bin_w if k == 0 else (k + 1) * bin_w)
        body.append(text(x, y0 + 16, short(buckets[k][0], 24), text_anchor=anchor, class_="nf-muted"))
    desc = "; ".join(f"{label}: {count}" for label, count in buckets if count)
    if markers:
        desc += ". " + "; ".join(label for _, label in markers)
    return svg_document(chart_id, width, height, title, desc, body)
