"""The tree before trafilatura: broken wrappers unwrapped, page furniture deleted, teaser boxes removed."""

from __future__ import annotations

import bisect
import re
from typing import TYPE_CHECKING

from lxml import etree

if TYPE_CHECKING:
    from lxml.html import HtmlElement

# Class/id tokens of blocks that are never the article: related-story and teaser
# boxes (their long ledes of other stories leak into the body: the Media Cloud
# failure), recommendation widgets, newsletter/cookie/consent banners, share bars.
_BOILER_TOKEN = re.compile(
    r"^(related|recommend|more-?(stories|articles|news|from)|read-?(more|next|also)|also-?read|see-?also|"
    r"teaser|promo|outbrain|taboola|newsletter|subscri|cookie|consent|gdpr|social-?share|share-?(bar|buttons|tools)|"
    r"most-?(read|popular|viewed)|trending)",
    re.I,
)
# Headings that open such a box, in the languages of the corpus.
_BOILER_HEADING = re.compile(
    r"^\s*(related|related (stories|articles|posts|content|links|news|coverage|reading)|more (stories|news|from|on)|"
    r"read (more|also|next)|see also|also read|you (may|might) (also )?like|recommended( for you)?|"
    r"most (read|popular|viewed)|trending( now)?|further reading|top stories|popular( now)?|"
    r"lesen sie (auch|mehr)|mehr zum thema|ver también|leia também|lire aussi|à lire aussi|leggi anche|"
    r"читайте также|相关(新闻|阅读|文章|报道)|推荐阅读|延伸阅读|热门(文章|新闻)|関連記事|관련 ?기사)\s*[:：]?\s*$",
    re.I,
)
_KEEP_TAGS = {"html", "body", "main", "article"}
# the same tokens at the start of any class/id name; searched once over all the page's class and id
# values joined by newlines (one C-level scan instead of a regex call per element)
# (lower-cased first: a case-insensitive pattern costs twice as much)
_BOILER_ATTR = re.compile(r"(?<!\S)(?:" + _BOILER_TOKEN.pattern[2:-1] + ")")
_CLASS_ID_VALUES = etree.XPath("//@class|//@id")
# blocks that can hold a one-line "Related stories" heading
_HEADING_TAGS = ("h2", "h3", "h4", "h5", "h6", "strong", "b", "p", "div", "span")
_HEADING_CHARS = 60  # longer text is not a heading


def _boiler_named(tree: HtmlElement) -> list[HtmlElement]:
    """Elements whose class or id starts a name with a :data:`_BOILER_TOKEN`, in document order."""
    values = _CLASS_ID_VALUES(tree)
    if not values:
        return []
    names = [value.lower() for value in values]
    lowered = "\n".join(names)
    starts, offset = [], 0
    for name in names:
        starts.append(offset)
        offset += len(name) + 1
    found: dict[HtmlElement, None] = {}
    for m in _BOILER_ATTR.finditer(lowered):
        found.setdefault(values[bisect.bisect_right(starts, m.start()) - 1].getparent(), None)
    return list(found)


def _short_block_text(el: HtmlElement) -> str | None:
    """The text of a block with at most one child element, when under :data:`_HEADING_CHARS` characters.

    Reads the text lazily, so a one-child wrapper around the whole page costs a few text nodes, not the page.
    """
    if len(el) > 1:
        return None
    if len(el) == 0:
        text = el.text
        return text if text and 0 < len(" ".join(text.split())) < _HEADING_CHARS else None
    parts, size = [], 0
    for part in el.itertext():
        words = part.split()
        if words:
            size += sum(map(len, words)) + len(words)
            if size > _HEADING_CHARS:
                return None
        parts.append(part)
    return " ".join(parts) if size else None


def page_words(tree: HtmlElement) -> int:
    """Words of the page's body (of the whole tree when it has no ``<body>``)."""
    body = tree.find(".//body")
    return word_count(body if body is not None else tree)


def word_count(el: HtmlElement | None) -> int:
    """Words of an element's text (serialised in C: this runs on whole pages)."""
    if el is None:
        return 0
    return len(etree.tostring(el, method="text", encoding="unicode", with_tail=False).split())


def link_density(el: HtmlElement) -> float:
    """The share of an element's words that are link text."""
    words = word_count(el)
    return sum(word_count(a) for a in el.iter("a")) / words if words else 0.0


def clean_tree(tree: HtmlElement, *, body_words: int | None = None) -> int:
    """Remove related-story boxes, teasers, banners and widgets from a parsed page.

    Runs on the lxml tree before trafilatura. A block is removed when a class or
    id token says what it is, or when it opens with a "Related stories"-style
    heading; never a block holding half of the page's text or more (that is the
    article, whatever its class says), and lists of teaser cards
    (:func:`_teaser_lists`). ``body_words`` is the page's word count
    when the caller has it. Returns the number of blocks removed.
    """
    total = max(1, page_words(tree) if body_words is None else body_words)
    doomed = []
    boxes = set()
    for el in _boiler_named(tree):
        if el.tag in _KEEP_TAGS:
            continue
        size = word_count(el)
        if size < total / 2 and (size < 200 or link_density(el) >= 0.4):
            doomed.append(el)
            boxes.add(el)
    for el in tree.iter(_HEADING_TAGS):
        if el in boxes:
            continue
        text = _short_block_text(el)
        if not text or not _BOILER_HEADING.match(text):
            continue
        box = el.getparent()
        # the heading's box: its parent when that is a small block of links, else heading + next list
        if (
            box is not None
            and box.tag not in _KEEP_TAGS
            and word_count(box) < min(300, total / 5)
            and len(box.findall(".//a")) >= 2
            and link_density(box) >= 0.25
        ):
            doomed.append(box)
        else:
            doomed.append(el)
            nxt = el.getnext()
            if nxt is not None and nxt.tag in ("ul", "ol", "div", "section", "aside"):
                doomed.append(nxt)
    doomed += _teaser_lists(tree, total)
    removed = 0
    for el in doomed:
        if el.getparent() is not None:
            remove_element(el)
            removed += 1
    return removed


_CARD_HEADINGS = ("h2", "h3", "h4", "h5", "h6")
_MIN_CARDS = 3  # two linked items may be an article's "see also"; three cards make a box
_CARD_SHARE = 0.8


def _is_card(item: HtmlElement) -> bool:
    """Whether a list item is headed by a link: a heading holding a link, or inside one within the item."""
    for heading in item.iter(_CARD_HEADINGS):
        if heading.find(".//a") is not None:
            return True
        for el in heading.iterancestors():
            if el is item:
                break
            if el.tag == "a":
                return True
    return False


def _teaser_lists(tree: HtmlElement, total: int) -> list[HtmlElement]:
    """Lists whose items are teaser cards: a linked headline each (and often a lede and a picture).

    "Latest stories" and "more from" boxes are lists of other stories'
    headlines, each a heading that links away; an article's own lists are
    sentences or terms, and its headings head its own sections, not list
    items. Whatever the box is called, and in any language, a list of at least
    :data:`_MIN_CARDS` items, most of them such cards, is not the article (and
    never one holding half of the page's text); nor is a one-line block right
    before it, the box's title.
    """
    out = []
    for box in tree.iter("ul", "ol"):
        items = [child for child in box if child.tag == "li"]
        if len(items) < _MIN_CARDS:
            continue
        if sum(map(_is_card, items)) >= _CARD_SHARE * len(items) and word_count(box) < total / 2:
            out.append(box)
            title = box.getprevious()  # the box's own title ("Our latest stories") goes with it
            if title is not None and title.tag not in _KEEP_TAGS and _short_block_text(title):
                out.append(title)
    return out


# Elements that hold no article text by what they are (scripts, media, controls, navigation, asides,
# footers) and that trafilatura deletes with their subtree anyway: deleted once, right after parsing,
# so that no later walk (cleanup, text runs, trafilatura's copies and XPath passes) visits them.
# JSON-LD scripts stay (trafilatura reads them), and so does the head's <title>.
_FURNITURE_TAGS = (
    "script",
    "style",
    "template",
    "svg",
    "iframe",
    "object",
    "embed",
    "canvas",
    "video",
    "audio",
    "picture",
    "map",
    "select",
    "textarea",
    "button",
    "input",
    "nav",
    "aside",
    "footer",
    "menu",
    "dialog",
    "fieldset",
    "label",
)
_JSON_LD = "application/ld+json"


def drop_furniture(tree: HtmlElement) -> int:
    """Delete scripts, styles, media, form controls, navigation, asides and footers (tails kept).

    Run after :func:`unwrap_page_wrappers` (a page-sized aside is the page,
    not furniture) and after the title and date are read from the head.

    Returns:
        The number of elements deleted.
    """
    doomed = [el for el in tree.iter(_FURNITURE_TAGS) if el.tag != "script" or el.get("type") != _JSON_LD]
    head = tree.find("head")
    if head is not None:
        doomed += [el for el in head if el.tag not in ("title", "script")]
    for el in doomed:
        remove_element(el)
    return len(doomed)


def remove_element(el: HtmlElement) -> None:
    """Delete an element and its subtree, keeping the text that follows it."""
    parent = el.getparent()
    if parent is None:
        return
    if el.tail:
        prev = el.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + el.tail
        else:
            parent.text = (parent.text or "") + el.tail
    parent.remove(el)


# ---------------------------------------------------------------- broken page wrappers
# Tags trafilatura deletes with their whole subtree.
_PAGE_FURNITURE = ("aside", "header", "footer", "nav", "button", "menu", "label", "dialog", "fieldset", "figure")


def unwrap_page_wrappers(tree: HtmlElement, *, body_words: int | None = None) -> int:
    """Turn an aside/header/footer/nav/button... holding half of the page's text into a plain ``div``.

    Broken markup (a popup ``<aside>`` or a menu ``<button>`` that is never
    closed) can put the whole article inside an element that trafilatura
    deletes by its tag, leaving nothing. Such an element is the page, not
    furniture: it loses its tag and its class/id (which name the popup).

    Args:
        tree: the parsed page (lxml), changed in place.
        body_words: the page's word count, when the caller has it.

    Returns:
        The number of elements turned into plain blocks.
    """
    candidates = list(tree.iter(*_PAGE_FURNITURE))
    if not candidates:
        return 0
    total = page_words(tree) if body_words is None else body_words
    changed = 0
    for el in candidates:
        if total and word_count(el) * 2 >= total:
            el.tag = "div"
            el.attrib.pop("class", None)
            el.attrib.pop("id", None)
            changed += 1
    return changed
