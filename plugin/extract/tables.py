"""Layout tables turned into blocks before trafilatura; data tables stay tables.

Pages of the table era lay a whole page out in nested tables: trafilatura
would write it as ``| cell | cell |`` rows. :func:`unlayout_tables` tells
layout tables from data tables (:func:`_layout_kind`), drops the labels of a
page's frame and turns ``<br><br>``-separated cell text into paragraphs.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from newsfold.plugin.extract.cleanup import link_density, remove_element, word_count

if TYPE_CHECKING:
    from lxml.html import HtmlElement

_TABLE_PARTS = ("tbody", "thead", "tfoot", "tr", "td", "th")
_CELL_BLOCKS = ("p", "ul", "ol", "dl", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "form")
_NUMBER = re.compile(r"^[\s$€£¥%+\-−–.,:/()\d]*\d[\s$€£¥%+\-−–.,:/()\d]*$")
_SENTENCE_END = re.compile(r"[.!?。！？]['\"’”」』)]*\s*$")
_PROSE_CELL_CHARS = 300  # a cell holding this much text holds paragraphs, not a datum
_CHROME_CHARS = 50  # a cell with less text than this, not ending a sentence, is a label of the page's frame


def _own(el: HtmlElement, table: HtmlElement) -> bool:
    """Whether a table part belongs to ``table`` itself, not to a table nested in one of its cells."""
    for anc in el.iterancestors("table"):
        return anc is table
    return False


def _layout_kind(table: HtmlElement) -> str | None:
    """What a table lays out: ``"frame"`` (a page or its columns), ``"bar"`` (a menu or a strip), or None (data).

    Signals that hold across sites and eras, the first that applies
    deciding: a table nesting tables, or with a cell holding a paragraph's
    worth of text, is a frame; a header row (``th``) or numeric columns make
    data (results, prices); mostly link text, one row or one column make a
    bar; a regular grid (rows of the same number of cells: a comparison, a
    recipe) is data; cells holding blocks (paragraphs, lists, headings) make
    a frame; anything else is data.
    """
    rows = [r for r in table.iter("tr") if _own(r, table)]
    if not rows:
        return None
    if table.find(".//table") is not None:
        return "frame"
    cells = [c for r in rows for c in r if c.tag in ("td", "th")]
    if any(len(" ".join(c.text_content().split())) >= _PROSE_CELL_CHARS for c in cells):
        return "frame"
    has_header = any(c.tag == "th" for c in rows[0]) or table.find("thead") is not None
    numeric = sum(1 for c in cells if _NUMBER.match(c.text_content() or ""))
    if has_header or numeric * 4 >= len(cells):
        return None
    if link_density(table) >= 0.5:
        return "bar"
    widths = [sum(1 for c in r if c.tag in ("td", "th")) for r in rows]
    if len(rows) < 2 or max(widths) < 2:
        return "bar"
    if len(rows) >= 3 and widths.count(max(set(widths), key=widths.count)) >= 0.8 * len(rows):
        return None  # a regular grid
    for cell in cells:
        blocks = [b for b in cell.iter(_CELL_BLOCKS) if b is not cell]
        if sum(b.tag == "p" for b in blocks) >= 2 or any(b.tag != "p" and word_count(b) for b in blocks):
            return "frame"
    return None


def _is_chrome_cell(cell: HtmlElement, kind: str) -> bool:
    """Whether a cell of a page frame is a label of the frame: a place, a date, a temperature, a separator.

    Menus are left to trafilatura's link-density test and to
    :func:`~newsfold.plugin.extract.edges.trim_edges`: a cell of links can be a listing's content.
    """
    if kind != "frame":
        return False
    text = " ".join(cell.text_content().split())
    return bool(text) and len(text) < _CHROME_CHARS and not _SENTENCE_END.search(text) and cell.find(".//a") is None


def unlayout_tables(tree: HtmlElement) -> int:
    """Turn layout tables into plain blocks and drop their frame cells; data tables stay tables.

    trafilatura writes every table it keeps as ``| cell | cell |`` rows, so a
    page built from nested layout tables comes out as rows of menu items,
    weather and date labels and side columns, the article squeezed into one
    cell. A layout table (:func:`_layout_kind`) becomes ``div`` blocks, the
    article's paragraphs among them; its leaf cells that are menus or short
    labels (:func:`_is_chrome_cell`) are removed. Tables inside the article
    that hold data keep their rows.

    Returns:
        The number of tables turned into blocks.
    """
    kinds: dict[HtmlElement, str | None] = {}
    for table in tree.iter("table"):  # document order: an outer table is judged before the tables in its cells
        kind = _layout_kind(table)
        outer = next(table.iterancestors("table"), None)
        if kind == "bar" and outer is not None and kinds.get(outer) == "frame":
            kind = "frame"  # a strip inside the page's frame is part of the frame
        kinds[table] = kind
    layout = [(t, kind) for t, kind in kinds.items() if kind]
    if not layout:
        return 0
    parts, chrome = [], []
    for table, kind in layout:
        for el in table.iter(_TABLE_PARTS):
            if _own(el, table):
                parts.append(el)
                if el.tag in ("td", "th") and el.find(".//table") is None and _is_chrome_cell(el, kind):
                    chrome.append(el)
    for el in chrome:
        remove_element(el)
    for el in [*(t for t, _kind in layout), *parts]:
        el.tag = "div"
    for el in parts:
        if el.getparent() is not None and el.find("br") is not None:
            _paragraphs_from_breaks(el)
    return len(layout)


_BLOCK_TAGS = frozenset(("p", "div", "table", "ul", "ol", "dl", "blockquote", "pre", "form", "hr", "center"))
_BLOCK_TAGS |= frozenset(f"h{n}" for n in range(1, 7))


def _paragraphs_from_breaks(cell: HtmlElement) -> None:
    """Turn a former table cell's text split by ``<br><br>`` into ``<p>`` elements, as readability does.

    Pages of the table era write an article as one cell of inline text and
    pairs of line breaks; trafilatura reads such a cell as one block (or line
    by line). The cell's inline content between two consecutive breaks (or a
    block child) becomes one paragraph; block children stay where they are.
    """
    children = list(cell)
    if not any(a.tag == "br" and _breaks_follow(a) for a in children):
        return
    from lxml import html as lxml_html

    out: list[HtmlElement] = []  # the cell's new children
    current: HtmlElement | None = None
    lead = cell.text
    cell.text = None

    def para() -> HtmlElement:
        nonlocal current
        if current is None:
            current = lxml_html.Element("p")
            out.append(current)
        return current

    if lead and lead.strip():
        para().text = lead
    pending_break = None
    for child in children:
        cell.remove(child)
        tail, child.tail = child.tail, None
        if child.tag == "br":
            if pending_break is not None and not (pending_break.tail or "").strip():
                current, pending_break = None, None  # two breaks in a row: a new paragraph
            else:
                if current is not None:
                    current.append(child)
                pending_break = child
            if tail and tail.strip():
                p = para()
                if len(p):
                    p[-1].tail = (p[-1].tail or "") + tail
                else:
                    p.text = (p.text or "") + tail
                pending_break = None
            continue
        pending_break = None
        if child.tag in _BLOCK_TAGS:
            out.append(child)
            current = None
            if tail and tail.strip():
                para().text = tail
            continue
        p = para()
        p.append(child)
        child.tail = tail
    for el in out:
        if el.tag == "p" and len(el) and el[-1].tag == "br" and not (el[-1].tail or "").strip():
            el.remove(el[-1])
        cell.append(el)


def _breaks_follow(br: HtmlElement) -> bool:
    """Whether a ``<br>`` is followed by another with only white space between."""
    nxt = br.getnext()
    return nxt is not None and nxt.tag == "br" and not (br.tail or "").strip()
