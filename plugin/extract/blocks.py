"""The page's text blocks after trafilatura: the doubt test, the recovery pass, the fallback, the headline line,
the rows of a layout table around a CJK article.

The start and end of the text (menus, date bars, "most read" lists) are trimmed by ``plugin.extract.edges``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lxml import etree

from newsfold.plugin.text import cjk_sentences

if TYPE_CHECKING:
    from lxml.html import HtmlElement

# trafilatura drops paragraphs inside the right container when a wrapper's class
# looks like boilerplate to it ("widget", "embed", "meta", "button"...): whole
# tables, the second half of an article, the sections of a page builder. This
# pass finds the container from what trafilatura kept and adds back the dropped
# text runs that look like the article's own blocks.

_INLINE_TAGS = frozenset(
    "a abbr acronym b bdi bdo big br cite code data del dfn em font i img ins kbd mark nobr q s samp small "
    "span strike strong sub sup time tt u var wbr".split()
)
# never recovered: not prose (code, forms, media) or page furniture by tag
_NOT_PROSE = frozenset(
    "script style noscript template svg math head title iframe object embed canvas video audio picture map "
    "select option textarea button input label form nav aside footer figure figcaption menu dialog fieldset "
    "pre".split()
)
# blocks recovered on their tag alone; other blocks only when they repeat a kept sibling's tag and class
_CONTENT_TAGS = frozenset(("p", "li", "h2", "h3", "h4", "h5", "h6", "td", "th", "blockquote"))
# class/id words of furniture that lives inside article containers
_FURNITURE_WORDS = frozenset(
    "comment comments share sharing social newsletter subscribe subscription signup related recommended promo "
    "sponsor sponsored advert advertisement ad ads author bio byline breadcrumb breadcrumbs nav navigation menu "
    "cookie consent tags sidebar popup modal footer caption credit credits".split()
)
# a text run this long (and not mostly links) reads as a paragraph; counted in UTF-8 bytes, so that a
# CJK character, which carries about as much as a short Latin word, weighs three Latin letters
_PROSE_BYTES = 80
_MIN_PROSE_SHARE = 0.25  # a fast result shorter than this share of the page's prose gets a second opinion
_MAX_PROSE_MULTIPLE = 3  # ... and so does one this many times longer than the prose
_CONTAINER_SHARE = 0.8  # the container holds this share of the kept text
_ANCHOR_CHARS = 20  # kept runs shorter than this may match by accident: not used to place the container
_MAX_LINK_SHARE = 0.5  # link-dense runs are menus and teasers
# a teaser's cut-off lede, or a "Loading..." placeholder
_TRUNCATED = re.compile(r"(?:\.\.\.|…)\]?\s*$")
_VISIBLE_TEXT = etree.XPath(".//text()[normalize-space()]")
_NONWORD = re.compile(r"[\W_]+")
_ATTR_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")

#: a run of visible text, ``[owner element, its text nodes, characters inside links]``, extended in place
TextRun = list[Any]
#: a run scored against the extracted text: ``(owner, text, match key, kept by trafilatura, link share)``
_ScoredRun = tuple["HtmlElement", str, str, bool, float]


def match_key(text: str) -> str:
    """Letters and digits only: the same text whatever spacing and punctuation trafilatura gave it."""
    return _NONWORD.sub("", text).casefold()


def text_runs(tree: HtmlElement) -> list[TextRun]:
    """The page's visible text in document order, as runs ``[owner, text nodes, link chars]``.

    A run's owner is its nearest non-inline ancestor, so a run is the text one
    block shows between two nested blocks: the unit trafilatura keeps or drops.
    """
    info: dict[
        HtmlElement, tuple[HtmlElement | None, bool]
    ] = {}  # element -> (owner, inside a link); owner None when not prose

    def lookup(el: HtmlElement) -> tuple[HtmlElement | None, bool]:
        hit = info.get(el)
        if hit is not None:
            return hit
        path: list[HtmlElement] = []
        cur: HtmlElement | None = el
        while cur is not None and cur not in info:
            path.append(cur)
            cur = cur.getparent()
        owner, link = info[cur] if cur is not None else (el, False)
        for e in reversed(path):
            tag = e.tag if isinstance(e.tag, str) else ""
            if owner is None or not tag or tag in _NOT_PROSE:
                owner, link = None, False
            elif tag in _INLINE_TAGS:
                link = link or tag == "a"
            else:
                owner = e  # a block inside a link (a teaser card) is still link text
            info[e] = (owner, link)
        return info[el]

    body = tree.find(".//body")
    runs: list[TextRun] = []
    last: TextRun | None = None
    for node in _VISIBLE_TEXT(tree if body is None else body):
        el = node.getparent()
        if node.is_tail:
            el = el.getparent()
            if el is None:
                continue
        owner, link = info.get(el) or lookup(el)
        if owner is None:
            continue
        if last is not None and last[0] is owner:
            last[1].append(node)
            last[2] += len(node) if link else 0
        else:
            last = [owner, [node], len(node) if link else 0]
            runs.append(last)
    return runs


class _Attrs:
    """Cached class/id words of elements (``sectionIntro`` -> section, intro)."""

    def __init__(self) -> None:
        self.cache: dict[HtmlElement, frozenset[str]] = {}

    def __call__(self, el: HtmlElement) -> frozenset[str]:
        words = self.cache.get(el)
        if words is None:
            value = f"{el.get('class') or ''} {el.get('id') or ''}"
            words = frozenset(w.casefold() for w in _ATTR_WORD.findall(_CAMEL.sub(" ", value)))
            self.cache[el] = words
        return words


def prose_bytes(runs: list[TextRun]) -> int:
    """UTF-8 bytes of the page's prose: its text runs that read as paragraphs (long, not mostly links)."""
    prose = 0
    for _owner, nodes, link_chars in runs:
        run = " ".join(" ".join(nodes).split())
        if link_chars * 2 < len(run) and (size := len(run.encode())) >= _PROSE_BYTES:
            prose += size
    return prose


def needs_second_opinion(text: str, prose: int) -> bool:
    """Whether trafilatura's fast result is doubtful enough to pay for its full cascade.

    The page's prose (:func:`prose_bytes`) is the text of its blocks that
    read as paragraphs: long runs (:data:`_PROSE_BYTES`) that are not mostly
    links. A result covering less than a quarter of it has probably missed the
    article (trafilatura settled on a teaser or a lede); one three times
    longer is mostly not prose (lists of links, short lines, a whole-page
    dump). Only then do readability and justext get a say, as in
    trafilatura's default mode; elsewhere they rarely change the text and
    cost a third of the time.
    """
    size = len(text.encode())
    return size < prose * _MIN_PROSE_SHARE or size > prose * _MAX_PROSE_MULTIPLE


def paragraph_block(runs: list[TextRun]) -> str:
    """The text of the page's largest block of paragraphs: the fallback when trafilatura finds (almost) nothing.

    Each prose run (long, not mostly links) scores its owner's parent with its
    size and the grandparent with half of it, as readability scores
    candidates; the best-scored element's runs that are not mostly links are
    its text, one per line. Cheap, and it needs no class names: it finds
    an article that trafilatura's rules turned down (a container whose class
    reads as boilerplate, text in table cells or bare ``div`` elements).

    Args:
        runs: the page's :func:`text_runs`.

    Returns:
        The block's text, or ``""`` when the page has no prose.
    """
    score: dict[HtmlElement, float] = {}
    for owner, nodes, link_chars in runs:
        run = " ".join(" ".join(nodes).split())
        if link_chars * 2 >= len(run) or (size := len(run.encode())) < _PROSE_BYTES:
            continue
        parent = owner.getparent()
        if parent is None:
            parent = owner
        score[parent] = score.get(parent, 0) + size
        grandparent = parent.getparent()
        if grandparent is not None:
            score[grandparent] = score.get(grandparent, 0) + size / 2
    if not score:
        return ""
    best = max(score, key=score.__getitem__)
    lines = []
    for owner, nodes, link_chars in runs:
        if owner is not best and not any(el is best for el in owner.iterancestors()):
            continue
        run = " ".join(" ".join(nodes).split())
        if run and link_chars * 2 < len(run):
            lines.append(run)
    return "\n".join(lines)


def recover_dropped_blocks(tree: HtmlElement, text: str, *, runs: list[TextRun] | None = None) -> str:
    """Add back the article blocks trafilatura dropped inside the article's container.

    The container is the deepest element holding 80% of the text trafilatura
    kept. Inside it, every text run trafilatura dropped is added back when it
    is not link-dense (menus, teasers), not a cut-off lede ending in an
    ellipsis, not inside an element whose class/id names furniture (comments,
    share bars, author boxes, captions...) or non-prose (code, forms,
    figures), and is either a paragraph, list item,
    subheading, table cell or quote, or a block with the same tag and class as
    a sibling whose text was kept (the sections of a page builder). Runs are
    added once, after the extracted text.

    Args:
        tree: the parsed page trafilatura extracted from (after cleanup).
        text: trafilatura's text.
        runs: the page's :func:`text_runs`, when the caller has them.

    Returns:
        The text with the recovered runs appended, one per line.
    """
    extracted = match_key(text)
    if not extracted:
        return text
    scored = _scored_runs(text_runs(tree) if runs is None else runs, extracted)
    found = _container(scored)
    if found is None:
        return text
    added = _dropped_runs(scored, *found)
    return text + "\n" + "\n".join(added) if added else text


def _scored_runs(runs: list[TextRun], extracted: str) -> list[_ScoredRun]:
    """The runs holding letters or digits: ``(owner, text, match key, kept by trafilatura, link share)`` each."""
    scored = []
    for owner, nodes, link_chars in runs:
        run = " ".join(nodes)
        key = match_key(run)
        if key:
            scored.append((owner, run, key, key in extracted, link_chars / len(run)))
    return scored


def _container(scored: list[_ScoredRun]) -> tuple[HtmlElement, dict[HtmlElement, int]] | None:
    """The article's container: the deepest element holding :data:`_CONTAINER_SHARE` of the kept text.

    Returns:
        The container, and the kept characters below each element that holds some; None when
        trafilatura kept no run long enough to place it (:data:`_ANCHOR_CHARS`).
    """
    weight: dict[HtmlElement, int] = {}  # element -> kept characters below it
    depth: dict[HtmlElement, int] = {}
    total = 0
    for owner, _run, key, kept, _ in scored:
        if kept and len(key) >= _ANCHOR_CHARS:
            total += len(key)
            chain = [owner, *owner.iterancestors()]
            for i, el in enumerate(chain):
                weight[el] = weight.get(el, 0) + len(key)
                depth[el] = len(chain) - i
    if not total:
        return None
    return max((el for el, w in weight.items() if w >= _CONTAINER_SHARE * total), key=depth.__getitem__), weight


def _dropped_runs(scored: list[_ScoredRun], container: HtmlElement, weight: dict[HtmlElement, int]) -> list[str]:
    """The runs trafilatura dropped inside ``container`` that read as the article's own blocks, once each."""
    attrs = _Attrs()
    kept_children: dict[
        HtmlElement, list[tuple[object, frozenset[str]]]
    ] = {}  # parent -> [(tag, class words)] of its children holding kept text
    added, seen = [], set()
    for owner, run, key, kept, link_share in scored:
        if kept or link_share >= _MAX_LINK_SHARE or key in seen:
            continue
        chain = []
        for el in (owner, *owner.iterancestors()):
            if el is container:
                break
            chain.append(el)
        else:
            continue  # outside the container
        if _TRUNCATED.search(run) or any(attrs(el) & _FURNITURE_WORDS for el in chain):
            continue
        if owner.tag not in _CONTENT_TAGS and not _like_kept_sibling(chain, weight, attrs, kept_children):
            continue
        seen.add(key)
        added.append(" ".join(run.split()))
    return added


def _like_kept_sibling(
    chain: list[HtmlElement],
    weight: dict[HtmlElement, int],
    attrs: _Attrs,
    kept_children: dict[HtmlElement, list[tuple[object, frozenset[str]]]],
) -> bool:
    """Whether an element on ``chain`` (up to the first one holding kept text) repeats a kept sibling."""
    for el in chain:
        if el in weight:
            return False
        parent = el.getparent()
        if parent is None:
            return False
        siblings = kept_children.get(parent)
        if siblings is None:
            siblings = kept_children[parent] = [(c.tag, attrs(c)) for c in parent if c in weight]
        words = attrs(el)
        for tag, other in siblings:
            if tag == el.tag and (other == words or (words and 2 * len(other & words) >= len(other | words))):
                return True
    return False


def drop_headline(text: str, tree: HtmlElement, title: str) -> str:
    """Drop a first line that only repeats the headline (it is ``Article.title``, not body text).

    Args:
        text: the extracted text.
        tree: the parsed page, for its ``<h1>`` headings.
        title: the page title found in the head.

    Returns:
        The text without that line; unchanged when it is the only line.
    """
    first, sep, rest = text.partition("\n")
    key = match_key(first)
    if not sep or not key or not rest.strip():
        return text
    if key == match_key(title) or any(key == match_key(" ".join(h.itertext())) for h in tree.iter("h1")):
        return rest.lstrip("\n")
    return text


_TABLE_ROW = "|"  # trafilatura writes a table row as one line of cells: "| cell | cell |"


def drop_layout_rows(text: str) -> str:
    """Drop the rows of a layout table around a Chinese or Japanese article that hold no sentence.

    Pages built with layout tables (much of the CJK web before CSS layout)
    put the article in one table cell and the site's navigation, datelines,
    link lists, comment counters and ads in the others, and trafilatura
    keeps the whole table. When the line holding the most CJK prose
    (sentences ending with a CJK stop) is a table row, the article sits in a
    cell, and the other rows are kept only when they hold such a sentence:
    navigation, link lists, captions and ads almost never do (An & Cheng).
    Text outside tables, and every table when the article is not in one, is
    left alone.

    Args:
        text: the extracted text, one block per line.

    Returns:
        The text without those rows.
    """
    if _TABLE_ROW not in text:
        return text
    lines = text.split("\n")
    prose = [sum(map(len, cjk_sentences(line))) for line in lines]
    article = max(range(len(lines)), key=prose.__getitem__)
    # the article's row must be CJK prose: most of its characters in such sentences
    if not lines[article].lstrip().startswith(_TABLE_ROW) or prose[article] * 2 < len(lines[article]):
        return text
    return "\n".join(
        line for line, n in zip(lines, prose, strict=True) if n or not line.lstrip().startswith(_TABLE_ROW)
    )
