"""Article extraction: page bytes in, an ``Article`` or a ``Rejection`` out.

A pure function at the per-page boundary: it never raises for bad input, it
returns a ``Rejection`` whose ``reason`` is a short code and whose ``detail``
says what was wrong, so one bad page never stops a batch. Its steps are the
functions below (decode, guard, metadata and credits, clean the tree,
trafilatura, blocks, the result); they call ``decode`` (bytes to tree),
``meta`` (title and date), ``credits`` (picture and agency), ``cleanup``
(the tree before trafilatura), ``blocks`` (the text blocks after it) and
``edges`` (its first and last lines).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple, cast

from newsfold.plugin.extract.blocks import (
    TextRun,
    drop_headline,
    drop_layout_rows,
    needs_second_opinion,
    paragraph_block,
    prose_bytes,
    recover_dropped_blocks,
    text_runs,
)
from newsfold.plugin.extract.cleanup import clean_tree, drop_furniture, page_words, unwrap_page_wrappers
from newsfold.plugin.extract.credits import PageSignals, page_signals, wire_credit
from newsfold.plugin.extract.decode import decode_html, html_lang, parse_html
from newsfold.plugin.extract.edges import trim_edges
from newsfold.plugin.extract.meta import page_title, published_date
from newsfold.plugin.extract.result import REASONS, Article, Rejection
from newsfold.plugin.extract.section import page_section
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES, MarkupLimits, TooComplex, guard_markup
from newsfold.plugin.text import SAMPLE_CHARS, cjk_share, opening_tokens, tokenize

if TYPE_CHECKING:
    from lxml.html import HtmlElement
    from trafilatura.settings import Document

__all__ = ["REASONS", "Article", "Rejection", "decode_html", "extract_article"]

log = logging.getLogger(__name__)

#: the ways a text can be found, in the order they are tried: trafilatura's fast mode, its full
#: cascade (readability, justext) when the fast result is doubtful, then the fallbacks
PATHS = ("fast", "full", "paragraphs", "baseline", "none")
#: a text below this share of the page's prose (or under ``min_tokens``) sends the page to the fallbacks
FALLBACK_SHARE = 0.0
#: ... and so does one of fewer tokens than this (a headline, a "Loading..." line)
FALLBACK_TOKENS = 25


def _baseline(tree: HtmlElement, runs: list[TextRun]) -> str:
    import trafilatura

    return trafilatura.baseline(tree)[1]


_FALLBACKS: tuple[tuple[str, Callable[[HtmlElement, list[TextRun]], str]], ...] = (
    ("paragraphs", lambda tree, runs: paragraph_block(runs)),
    ("baseline", _baseline),
)


def _too_little(text: str, prose: int) -> bool:
    """Whether a text is empty, or under :data:`FALLBACK_TOKENS` tokens or :data:`FALLBACK_SHARE` of the prose."""
    if not text or len(text.encode()) < FALLBACK_SHARE * prose:
        return True
    return len(text) < SAMPLE_CHARS and len(tokenize(text)) < FALLBACK_TOKENS


def extract_article(
    data: bytes | str,
    *,
    url: str | None = None,
    lang: str | None = None,
    min_tokens: int = 25,
    max_bytes: int = DEFAULT_MAX_PAGE_BYTES,
    cleanup: bool = True,
    counts: dict[str, int] | None = None,
    limits: MarkupLimits | None = None,
    section: str | None = None,
) -> Article | Rejection:
    """Extract the article (title and body text) from one page.

    Steps: decode (:func:`_decode`) and bound the markup (:func:`_guard`);
    parse as a browser shows the page (:func:`parse_html`); read the title,
    date, picture and credits (:func:`_metadata`); clean the tree
    (:func:`_clean`); trafilatura, fast, then its full cascade on doubt
    (:func:`_trafilatura`); the text blocks (:func:`_blocks`: dropped blocks
    recovered, the fallbacks for a scrap, the edges trimmed); the article or
    its rejection (:func:`_result`).

    Args:
        data: raw page bytes in any encoding (gzip accepted), or decoded HTML.
        url: the page URL, used by trafilatura for relative links and metadata.
        lang: a language already known for the page (wins over detection).
        min_tokens: fewer article tokens than this is a ``too_short`` rejection.
        max_bytes: larger pages are rejected as ``too_large``.
        cleanup: remove related-story boxes, teasers and banners first (:func:`clean_tree`).
        counts: when given, the path that produced the text is counted here
            (``fast``, ``full``, ``paragraphs``, ``baseline``, or ``none``
            when every method came back empty; see :data:`PATHS`).
        limits: how complex the markup may be (default ``MarkupLimits()``); a page over them is a
            ``too_complex`` rejection, checked before parsing (see ``plugin.page_limits``).
        section: a section given with the page (a feed's category; ``plugin.extract.section`` says which wins).

    Returns:
        An ``Article``, or a ``Rejection`` naming the reason; never raises for bad input.
    """
    html = _decode(data, max_bytes=max_bytes)
    if not isinstance(html, Rejection):
        html = _guard(html, limits or MarkupLimits())
    if isinstance(html, Rejection):
        return html
    try:
        tree = parse_html(html)
        if tree is None:
            return Rejection("not_html", "the HTML could not be parsed")
        meta = _metadata(tree, html, url=url, section=section)
        _clean(tree, cleanup=cleanup)
        runs = text_runs(tree)  # the page's text blocks: the second-opinion test and the recovery pass share them
        prose = prose_bytes(runs)
        doc, path = _trafilatura(tree, prose, url=url)
        text, path = _blocks(tree, doc, path, runs=runs, prose=prose, title=meta.title)
    except Exception as exc:  # the per-page boundary: any parser failure is a rejection
        log.warning("extraction failed for %s: %s", url, exc)
        return Rejection("extraction_failed", f"{type(exc).__name__}: {exc}")
    if counts is not None:
        counts[path if text else "none"] = counts.get(path if text else "none", 0) + 1
    return _result(text, html=html, doc=doc, meta=meta, url=url, lang=lang, min_tokens=min_tokens)


def _decode(data: bytes | str, *, max_bytes: int) -> str | Rejection:
    """The page as text: bytes decoded (:func:`decode_html`: size, gzip, charset), a string checked for size."""
    if not isinstance(data, str):
        return decode_html(data, max_bytes=max_bytes)
    if len(data) > max_bytes:
        return Rejection("too_large", f"the page has {len(data)} characters, the limit is {max_bytes}")
    if not data.strip():
        return Rejection("empty", "the page has no content")
    return data


def _guard(html: str, limits: MarkupLimits) -> str | Rejection:
    """The markup, or a ``too_complex`` rejection when it is over ``limits`` (checked before parsing)."""
    try:
        return guard_markup(html, limits)
    except TooComplex as exc:
        return Rejection("too_complex", str(exc))


class _Meta(NamedTuple):
    """What the page says about its article besides the text: read before the cleanup deletes it."""

    title: str
    published: str | None
    signals: PageSignals  # the picture, and the credits in the metadata and bylines
    section: str | None  # the page's section (plugin.extract.section)


def _metadata(tree: HtmlElement, html: str, *, url: str | None, section: str | None = None) -> _Meta:
    """Title and date from the head, the picture, the credits and the section (before :func:`_clean`).

    Title and date from the head are cheap; trafilatura's full metadata pass
    (htmldate, authors, ...) costs as much as the extraction itself.
    """
    return _Meta(page_title(tree), published_date(tree, html), page_signals(tree, url=url),
                 page_section(tree, html, url=url, given=section))  # fmt: skip


def _clean(tree: HtmlElement, *, cleanup: bool) -> None:
    """The tree before trafilatura, changed in place.

    Page-sized aside/header/footer wrappers become plain blocks
    (:func:`unwrap_page_wrappers`); scripts, media, form controls,
    navigation, asides and footers are deleted once (:func:`drop_furniture`:
    trafilatura deletes them too, on each of its copies); with ``cleanup``,
    teaser boxes and banners go (:func:`clean_tree`).
    """
    words = page_words(tree)  # unwrapping renames tags only: one count serves both passes
    unwrap_page_wrappers(tree, body_words=words)
    drop_furniture(tree)
    if cleanup:
        clean_tree(tree, body_words=words)


def _trafilatura(tree: HtmlElement, prose: int, *, url: str | None) -> tuple[Document | None, str]:
    """trafilatura's document and the path that found it: the fast mode, the full cascade when it is doubtful.

    The full cascade (readability, justext) runs only when the fast result
    covers little of the page's prose or is mostly not prose
    (:func:`needs_second_opinion`).

    Returns:
        ``(document or None, "fast" or "full")``.
    """
    import trafilatura

    # without as_dict, bare_extraction returns a Document (its annotation covers both forms)
    doc = cast(
        "Document | None",
        trafilatura.bare_extraction(tree, url=url, include_comments=False, with_metadata=False, fast=True),
    )
    path = "fast"
    if needs_second_opinion((doc.text or "") if doc is not None else "", prose):
        second = cast(
            "Document | None",
            trafilatura.bare_extraction(tree, url=url, include_comments=False, with_metadata=False),
        )
        if second is not None:
            doc, path = second, "full"
    return doc, path


def _blocks(
    tree: HtmlElement, doc: Document | None, path: str, *, runs: list[TextRun], prose: int, title: str
) -> tuple[str, str]:
    """The article's text from trafilatura's, and the path that gave it.

    The paragraphs, lists and tables trafilatura dropped inside the
    article's container come back (:func:`recover_dropped_blocks`); when
    that yields nothing or a scrap (under :data:`FALLBACK_TOKENS` tokens),
    the largest block of paragraphs (:func:`paragraph_block`), then
    trafilatura's baseline; a first line that only repeats the headline
    (:func:`drop_headline`), the rows of a layout table around a CJK article
    that hold no sentence (:func:`drop_layout_rows`) and the menus, skip
    links, date bars and "most read" lists at the start and end
    (:func:`trim_edges`) are dropped.
    """
    text = (doc.text or "").strip() if doc is not None else ""
    if text:
        text = recover_dropped_blocks(tree, text, runs=runs)
    if _too_little(text, prose):
        # trafilatura found nothing, or a scrap of the page's prose: other methods get a say
        for name, method in _FALLBACKS:
            found = method(tree, runs).strip()
            if len(found) > len(text):
                text, path = found, name
            if not _too_little(text, prose):
                break
    return (trim_edges(drop_layout_rows(drop_headline(text, tree, title)), runs).strip() if text else ""), path


def _result(
    text: str, *, html: str, doc: Document | None, meta: _Meta, url: str | None, lang: str | None, min_tokens: int
) -> Article | Rejection:
    """The article (its language and credited agency found), or ``no_article`` / ``too_short``."""
    if not text:
        return Rejection("no_article", "no article text found in the page by any method")
    # the opening is enough to reach min_tokens and to tell CJK text; the whole text only when it is short
    tokens = opening_tokens(text, min_tokens)
    if len(tokens) < min_tokens:
        return Rejection("too_short", f"the article has {len(tokens)} tokens, fewer than {min_tokens}")
    lang = lang or html_lang(html) or getattr(doc, "language", None)
    if not lang and cjk_share(tokens) >= 0.5:
        lang = "ja" if re.search("[\u3040-\u30ff]", text) else "zh"
    credit = wire_credit(meta.signals, text, url=url)
    return Article(title=meta.title, text=text, lang=lang, published=meta.published, image=meta.signals.image,
                   wire=credit[0] if credit else None, wire_by=credit[1] if credit else None,
                   section=meta.section)  # fmt: skip
