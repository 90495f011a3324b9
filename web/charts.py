"""Server-rendered SVG charts: bar chart, histogram, line chart and heat map.

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

from markupsafe import Markup, escape

SERIES_COLOURS = ("#3b6fb6", "#d9822b", "#4d9a6a", "#9c5bb5")
FONT = 12
#: a label longer than this is cut with an ellipsis in the drawing (the table shows it whole)
MAX_LABEL_CHARS = 28


def fmt_number(value: float | None) -> str:
    """``1234`` -> ``1,234``; ``0.4567`` -> ``0.46``; None -> an en dash."""
    if value is None:
        return "–"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def nice_max(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^k at or above ``value`` (1 for nothing to show)."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        candidate = step * 10**exponent
        if candidate >= value * (1 - 1e-12):
            return float(candidate)
    return float(10 ** (exponent + 1))


def _short(label: str, limit: int = MAX_LABEL_CHARS) -> str:
    label = str(label)
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _attrs(**attrs) -> str:
    out = []
    for name, value in attrs.items():
        if value is None:
            continue
        name = name.rstrip("_").replace("_", "-")
        if isinstance(value, float):
            value = f"{value:.2f}".rstrip("0").rstrip(".")
        out.append(f' {name}="{escape(str(value))}"')
    return "".join(out)


def _svg(
    chart_id: str, width: int, height: int, title: str, desc: str, body: list[str], *, role: str = "img"
) -> Markup:
    title_id, desc_id = f"{chart_id}-title", f"{chart_id}-desc"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg"{_attrs(id=chart_id, class_="chart", role=role)}'
        f"{_attrs(viewBox=f'0 0 {width} {height}', width=width, height=height)}"
        f"{_attrs(aria_labelledby=f'{title_id} {desc_id}', font_size=FONT)}>"
        f"<title{_attrs(id=title_id)}>{escape(title)}</title><desc{_attrs(id=desc_id)}>{escape(desc)}</desc>"
    )
    return Markup(head + "".join(body) + "</svg>")


def _empty(chart_id: str, title: str, message: str, width: int = 480) -> Markup:
    text = f"<text{_attrs(x=width / 2, y=34, text_anchor='middle', class_='nf-muted', fill='#5f6368')}>"
    return _svg(chart_id, width, 60, title, message, [text + f"{escape(message)}</text>"])


def _text(x: float, y: float, label: str, **attrs) -> str:
    return f"<text{_attrs(x=x, y=y, **attrs)}>{escape(label)}</text>"


def _tooltip(text: str) -> str:
    return f"<title>{escape(text)}</title>"


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
        return _empty(chart_id, title, empty_message)
    bar_h, gap, top = 20, 6, 8
    label_w = min(220, 10 + FONT * 0.6 * max(len(_short(label)) for label, _ in items))
    value_w = 70
    plot_w = max(60, width - label_w - value_w)
    top_value = max_value if max_value is not None else nice_max(max(v for _, v in items))
    height = top + len(items) * (bar_h + gap) + gap
    body = []
    for k, (label, value) in enumerate(items):
        y = top + k * (bar_h + gap)
        length = plot_w * max(0.0, min(1.0, value / top_value)) if top_value else 0.0
        shown = value_format(value)
        bar = _attrs(x=label_w, y=y, width=max(length, 1.0), height=bar_h, class_="nf-bar", fill=SERIES_COLOURS[0])
        body.append(
            "<g>"
            + _tooltip(f"{label}: {shown}")
            + _text(label_w - 6, y + bar_h * 0.7, _short(label), text_anchor="end", class_="nf-label")
            + f"<rect{bar}/>"
            + _text(label_w + length + 4, y + bar_h * 0.7, shown, class_="nf-value")
            + "</g>"
        )
    desc = "; ".join(f"{label}: {value_format(value)}" for label, value in items)
    return _svg(chart_id, width, height, title, desc, body)


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
        return _empty(chart_id, title, empty_message)
    bar_h, gap, top = 20, 6, 26
    label_w = min(220, 10 + FONT * 0.6 * max(len(_short(label)) for label, _ in items))
    value_w = 90
    plot_w = max(60, width - label_w - value_w)
    top_value = nice_max(max(sum(values) for _, values in items))
    height = top + len(items) * (bar_h + gap) + gap
    body = []
    x = label_w
    for s, name in enumerate(series):  # the legend
        colour = SERIES_COLOURS[s % len(SERIES_COLOURS)]
        body.append(f"<rect{_attrs(x=x, y=6, width=12, height=12, class_=f'nf-series-{s}', fill=colour)}/>"
                    + _text(x + 16, 16, name, class_="nf-label"))  # fmt: skip
        x += 24 + FONT * 0.6 * len(name)
    for k, (label, values) in enumerate(items):
        y = top + k * (bar_h + gap)
        parts = [_text(label_w - 6, y + bar_h * 0.7, _short(label), text_anchor="end", class_="nf-label")]
        x = label_w
        for s, value in enumerate(values):
            length = plot_w * max(0.0, value) / top_value if top_value else 0.0
            # the series' class, not "nf-bar": the stylesheet paints each series in its own colour
            rect = _attrs(x=x, y=y, width=max(length, 0.0), height=bar_h, class_=f"nf-series-{s}",
                          fill=SERIES_COLOURS[s % len(SERIES_COLOURS)])  # fmt: skip
            parts.append(f"<rect{rect}>{_tooltip(f'{label}: {fmt_number(value)} {series[s]}')}</rect>")
            x += length
        shown = " / ".join(fmt_number(v) for v in values)
        parts.append(_text(x + 4, y + bar_h * 0.7, shown, class_="nf-value"))
        body.append("<g>" + "".join(parts) + "</g>")
    desc = "; ".join(f"{label}: " + ", ".join(f"{fmt_number(v)} {n}" for n, v in zip(series, values, strict=True))
                     for label, values in items)  # fmt: skip
    return _svg(chart_id, width, height, title, desc, body)


def axis_top(values: Sequence[float]) -> float:
    """The value at the top of a vertical axis with four tick steps.

    ``nice_max`` of the largest value; for whole numbers (counts) the
    smallest 4 x (1, 2 or 5) x 10^k at or above it, so every tick is whole.
    """
    largest = max(values, default=0)
    if not all(float(v).is_integer() for v in values):
        return nice_max(largest)
    step = nice_max(largest / 4) if largest > 4 else 1.0
    if math.isclose(step / 10 ** math.floor(math.log10(step)), 2.5):
        step *= 2  # a quarter of 2.5 x 10^k is not whole
    return 4 * step


def _tick(value: float) -> str:
    return fmt_number(value) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")


def _y_axis(x0: float, y0: float, plot_h: float, plot_w: float, top_value: float, y_label: str) -> list[str]:
    out = []
    for k in range(5):
        value = top_value * k / 4
        y = y0 - plot_h * k / 4
        out.append(f"<line{_attrs(x1=x0, y1=y, x2=x0 + plot_w, y2=y, class_='nf-grid', stroke='#dadce0')}/>")
        out.append(_text(x0 - 4, y + 4, _tick(value), text_anchor="end", class_="nf-muted", fill="#5f6368"))
    if y_label:
        out.append(_text(4, 12, y_label, class_="nf-muted", fill="#5f6368"))
    return out


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
        return _empty(chart_id, title, empty_message, width)
    left, right, top, bottom = 48, 8, 24, 40 + (16 if len(series) > 1 else 0)
    plot_w, plot_h = width - left - right, height - top - bottom
    y0 = top + plot_h
    top_value = axis_top([c for _, counts in series for c in counts])
    body = _y_axis(left, y0, plot_h, plot_w, top_value, y_label)
    bin_w = plot_w / bins
    bar_w = max(1.0, (bin_w - 2) / len(series))
    for b in range(bins):
        x = left + b * bin_w
        for s, (name, counts) in enumerate(series):
            h = plot_h * counts[b] / top_value
            tip = f"{name}, {edge_format(edges[b])}–{edge_format(edges[b + 1])}: {fmt_number(counts[b])}"
            rect = _attrs(
                x=x + 1 + s * bar_w,
                y=y0 - h,
                width=bar_w,
                height=max(h, 0.0),
                class_=f"nf-series-{s}",
                fill=SERIES_COLOURS[s % len(SERIES_COLOURS)],
            )
            body.append(f"<rect{rect}>{_tooltip(tip)}</rect>")
    step = max(1, math.ceil(bins / 10))
    for b in range(0, bins + 1, step):
        body.append(_text(left + b * bin_w, y0 + 14, edge_format(edges[b]), text_anchor="middle", class_="nf-muted"))
    if x_label:
        body.append(_text(left + plot_w / 2, y0 + 30, x_label, text_anchor="middle", class_="nf-muted"))
    if len(series) > 1:
        x = left
        for s, (name, _) in enumerate(series):
            colour = SERIES_COLOURS[s % len(SERIES_COLOURS)]
            body.append(
                f"<rect{_attrs(x=x, y=height - 12, width=10, height=10, class_=f'nf-series-{s}', fill=colour)}/>"
            )
            body.append(_text(x + 14, height - 3, name, class_="nf-label"))
            x += 24 + FONT * 0.6 * len(name)
    desc = "; ".join(
        f"{name}: " + ", ".join(f"{edge_format(edges[b])}–{edge_format(edges[b + 1])} {counts[b]}" for b in range(bins))
        for name, counts in series
    )
    return _svg(chart_id, width, height, title, desc, body)


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
        return _empty(chart_id, title, empty_message, width)
    left, right, top, bottom = 48, 12, 24, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    y0 = top + plot_h
    top_value = axis_top([v for _, v in points])
    body = _y_axis(left, y0, plot_h, plot_w, top_value, y_label)
    step_x = plot_w / max(1, len(points) - 1)
    coords = [(left + k * step_x, y0 - plot_h * max(0.0, v) / top_value) for k, (_, v) in enumerate(points)]
    if len(points) == 1:
        coords = [(left + plot_w / 2, coords[0][1])]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
    body.append(f"<polyline{_attrs(points=path, fill='none', class_='nf-line', stroke=SERIES_COLOURS[0])}/>")
    for (x, y), (label, value) in zip(coords, points, strict=True):
        dot = _attrs(cx=x, cy=y, r=3, class_="nf-dot", fill=SERIES_COLOURS[0])
        body.append(f"<circle{dot}>{_tooltip(f'{label}: {fmt_number(value)}')}</circle>")
    every = max(1, math.ceil(len(points) / 8))
    for k in range(0, len(points), every):
        body.append(_text(coords[k][0], y0 + 16, _short(points[k][0], 16), text_anchor="middle", class_="nf-muted"))
    desc = "; ".join(f"{label}: {fmt_number(value)}" for label, value in points)
    return _svg(chart_id, width, height, title, desc, body)


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
        return _empty(chart_id, title, "No pages to compare.")
    cell = max(12, min(44, 540 // n))
    margin = 28
    size = margin + n * cell + 4
    body = []
    for k in range(n):
        centre = margin + k * cell + cell / 2
        body.append(_text(centre, margin - 8, str(k + 1), text_anchor="middle", class_="nf-muted"))
        body.append(_text(margin - 6, centre + 4, str(k + 1), text_anchor="end", class_="nf-muted"))
    show_numbers = cell >= 30
    for i in range(n):
        for j in range(n):
            value = matrix[i][j]
            colour = heat_colour(value)
            tip = f"{i + 1}. {labels[i]} × {j + 1}. {labels[j]}: {value_format(value)}"
            rect = _attrs(
                x=margin + j * cell, y=margin + i * cell, width=cell - 1, height=cell - 1, fill=colour, class_="nf-cell"
            )
            shape = f"<rect{rect}/>"
            if show_numbers and value is not None:
                ink = "light" if value >= 0.55 else "dark"
                cx, cy = margin + j * cell + cell / 2, margin + i * cell + cell / 2 + 4
                shape += _text(
                    cx,
                    cy,
                    str(round(value * 100)),
                    text_anchor="middle",
                    fill="#ffffff" if ink == "light" else "#1d1d1f",
                    font_size=10,
                    class_=f"nf-ink-{ink}",
                )
            href = cell_href(i, j) if cell_href is not None and i != j else None
            if href:
                body.append(f"<a{_attrs(href=href, class_='nf-cell-link')}>{_tooltip(tip)}{shape}</a>")
            else:
                body.append(f"<g>{_tooltip(tip)}{shape}</g>")
    desc = f"Pairwise similarity of {n} pages; darker is more similar."
    return _svg(chart_id, size, size, title, desc, body, role="group" if cell_href else "img")


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
        return _empty(chart_id, title, empty_message, width)
    left, right, top, bottom = 48, 12, 34, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    y0 = top + plot_h
    top_value = axis_top([count for _, count in buckets])
    body = _y_axis(left, y0, plot_h, plot_w, top_value, "versions")
    bin_w = plot_w / len(buckets)
    for k, (label, count) in enumerate(buckets):
        h = plot_h * count / top_value
        rect = _attrs(x=left + k * bin_w + 1, y=y0 - h, width=max(1.0, bin_w - 2), height=max(h, 0.0),
                      class_="nf-bar", fill=SERIES_COLOURS[0])  # fmt: skip
        body.append(f"<rect{rect}>{_tooltip(f'{label}: {fmt_number(count)} version(s)')}</rect>")
    for k, label in markers:
        if not 0 <= k < len(buckets):
            continue
        x = left + (k + 0.5) * bin_w
        height_k = plot_h * buckets[k][1] / top_value
        tip_y = y0 - height_k - 4
        points = f"{x - 5:.1f},{tip_y - 8:.1f} {x + 5:.1f},{tip_y - 8:.1f} {x:.1f},{tip_y:.1f}"
        anchor = "start" if x < left + plot_w / 2 else "end"
        body.append(
            f"<g class='nf-marker'>{_tooltip(label)}"
            f"<polygon{_attrs(points=points, fill=SERIES_COLOURS[1], class_='nf-series-1')}/>"
            + _text(x + (-8 if anchor == "end" else 8), max(12.0, tip_y - 10), _short(label, 40),
                    text_anchor=anchor, class_="nf-label")  # fmt: skip
            + "</g>"
        )
    for k in sorted({0, len(buckets) - 1}):
        anchor = "start" if k == 0 else "end"
        x = left + (k * bin_w if k == 0 else (k + 1) * bin_w)
        body.append(_text(x, y0 + 16, _short(buckets[k][0], 24), text_anchor=anchor, class_="nf-muted"))
    desc = "; ".join(f"{label}: {count}" for label, count in buckets if count)
    if markers:
        desc += ". " + "; ".join(label for _, label in markers)
    return _svg(chart_id, width, height, title, desc, body)
