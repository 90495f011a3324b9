"""SVG drawing shared by the charts: escaped attributes, text and tooltips, an accessible document, the vertical axis.

Everything written into a drawing passes through :func:`attrs`, :func:`text`
or :func:`tooltip`, which escape it; :func:`svg_document` gives every chart
its ``<title>`` and ``<desc>`` (named by ``aria-labelledby``). The charts
themselves are ``web/charts.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


def short(label: str, limit: int = MAX_LABEL_CHARS) -> str:
    """``label`` cut to ``limit`` characters with an ellipsis (the drawing's; tables show labels whole)."""
    label = str(label)
    return label if len(label) <= limit else label[: limit - 1] + "…"


def attrs(**values) -> str:
    """SVG attributes, escaped (``class_`` -> ``class``, ``text_anchor`` -> ``text-anchor``; None left out)."""
    out = []
    for name, value in values.items():
        if value is None:
            continue
        name = name.rstrip("_").replace("_", "-")
        if isinstance(value, float):
            value = f"{value:.2f}".rstrip("0").rstrip(".")
        out.append(f' {name}="{escape(str(value))}"')
    return "".join(out)


def svg_document(
    chart_id: str, width: int, height: int, title: str, desc: str, body: list[str], *, role: str = "img"
) -> Markup:
    """The ``<svg>`` of a chart: its accessible ``<title>`` and ``<desc>``, then ``body``."""
    title_id, desc_id = f"{chart_id}-title", f"{chart_id}-desc"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg"{attrs(id=chart_id, class_="chart", role=role)}'
        f"{attrs(viewBox=f'0 0 {width} {height}', width=width, height=height)}"
        f"{attrs(aria_labelledby=f'{title_id} {desc_id}', font_size=FONT)}>"
        f"<title{attrs(id=title_id)}>{escape(title)}</title><desc{attrs(id=desc_id)}>{escape(desc)}</desc>"
    )
    return Markup(head + "".join(body) + "</svg>")


def empty_chart(chart_id: str, title: str, message: str, width: int = 480) -> Markup:
    """A chart with nothing to draw: ``message`` in its place."""
    label = f"<text{attrs(x=width / 2, y=34, text_anchor='middle', class_='nf-muted', fill='#5f6368')}>"
    return svg_document(chart_id, width, 60, title, message, [label + f"{escape(message)}</text>"])


def text(x: float, y: float, label: str, **extra) -> str:
    """A ``<text>`` element at ``(x, y)`` with ``label`` escaped."""
    return f"<text{attrs(x=x, y=y, **extra)}>{escape(label)}</text>"


def tooltip(label: str) -> str:
    """A ``<title>`` child: what a pointer over its parent shows."""
    return f"<title>{escape(label)}</title>"


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


def tick(value: float) -> str:
    """An axis tick's label: whole numbers with thousands separators, others with at most two decimals."""
    return fmt_number(value) if float(value).is_integer() else f"{value:.2f}".rstrip("0").rstrip(".")


def y_axis(x0: float, y0: float, plot_h: float, plot_w: float, top_value: float, y_label: str) -> list[str]:
    """Five grid lines from 0 to ``top_value`` with their tick labels, and the axis caption."""
    out = []
    for k in range(5):
        value = top_value * k / 4
        y = y0 - plot_h * k / 4
        out.append(f"<line{attrs(x1=x0, y1=y, x2=x0 + plot_w, y2=y, class_='nf-grid', stroke='#dadce0')}/>")
        out.append(text(x0 - 4, y + 4, tick(value), text_anchor="end", class_="nf-muted", fill="#5f6368"))
    if y_label:
        out.append(text(4, 12, y_label, class_="nf-muted", fill="#5f6368"))
    return out
