"""Article extraction: page bytes in, an ``Article`` or a ``Rejection`` out.

A pure function at the per-page boundary: it never raises for bad input, it
returns a ``Rejection`` whose ``reason`` is a short code and whose ``detail``
says what was wrong, so one bad page never stops a batch. The steps live in
``extract_decode`` (bytes to tree), ``extract_meta`` (title and date),
``extract_cleanup`` (the tree before trafilatura) and ``extract_blocks`` (the
text blocks after it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from newsfold.plugin.extract_blocks import (
    TextRun,
    drop_headline,
    needs_second_opinion,
    paragraph_block,
    prose_bytes,
    recover_dropped_blocks,
    text_runs,
    trim_edges,
)
from newsfold.plugin.extract_cleanup import (
    clean_tree,
    drop_furniture,
    page_words,
    unlayout_tables,
    unwrap_page_wrappers,
)
from newsfold.plugin.extract_credits import page_signals, wire_credit
from newsfold.plugin.extract_decode import decode_html, html_lang, parse_html
from newsfold.plugin.extract_meta import page_title, published_date
from newsfold.plugin.extract_result import REASONS, Article, Rejection
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES, MarkupLimits, TooComplex, guard_markup
from newsfold.plugin.text import cjk_share, tokenize

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
_SAMPLE_CHARS = 2000  # characters tokenised to check the length and the script of an extracted text


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
    return len(text) < _SAMPLE_CHARS and len(tokenize(text)) < FALLBACK_TOKENS


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
) -> Article | Rejection:
    """Extract the article (title and body text) from one page.

    Steps: decode; parse as a browser would show the page (markup after
    ``</html>`` joins the body; leniently when trafilatura's loader refuses the
    markup; a damaged top repaired); turn page-sized aside/header/footer
    wrappers into plain blocks (:func:`unwrap_page_wrappers`); delete scripts,
    media, form controls, navigation, asides and footers once
    (:func:`drop_furniture`: trafilatura deletes them too, on each of its
    copies); turn layout tables into blocks and drop their frame labels, data
    tables staying tables (:func:`unlayout_tables`); remove teaser boxes and
    banners (:func:`clean_tree`); trafilatura in its fast mode, and its full
    cascade (readability, justext) only when the fast result covers little of
    the page's prose or is mostly not prose (:func:`needs_second_opinion`);
    add back the paragraphs, lists and tables it dropped inside the article's
    container (:func:`recover_dropped_blocks`); when all this yields nothing
    or a scrap (under :data:`FALLBACK_TOKENS` tokens), the largest block of
    paragraphs (:func:`paragraph_block`), then trafilatura's baseline; drop a
    first line that only repeats the headline (:func:`drop_headline`) and the
    menus, skip links, date bars and "most read" lists at the start and end
    (:func:`trim_edges`).

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

    Returns:
        An ``Article``, or a ``Rejection`` naming the reason. Never raises for
        bad input.
    """
    html: str | Rejection
    if isinstance(data, str):
        if len(data) > max_bytes:
            return Rejection("too_large", f"the page has {len(data)} characters, the limit is {max_bytes}")
        html = data
        if not html.strip():
            return Rejection("empty", "the page has no content")
    else:
        html = decode_html(data, max_bytes=max_bytes)
        if isinstance(html, Rejection):
            return html
    try:
        html = guard_markup(html, limits or MarkupLimits())
    except TooComplex as exc:
        return Rejection("too_complex", str(exc))
    try:
        import trafilatura

        tree = parse_html(html)
        if tree is None:
            return Rejection("not_html", "the HTML could not be parsed")
        # Title and date from the head are cheap; trafilatura's full metadata
        # pass (htmldate, authors, ...) costs as much as the extraction itself.
        title, published = page_title(tree), published_date(tree, html)
        signals = page_signals(tree, url=url)  # picture and credits: read before the cleanup deletes them
        words = page_words(tree)  # unwrapping renames tags only: one count serves both passes
        unwrap_page_wrappers(tree, body_words=words)
        drop_furniture(tree)
        unlayout_tables(tree)
        if cleanup:
            clean_tree(tree, body_words=words)
        runs = text_runs(tree)  # the page's text blocks: the second-opinion test and the recovery pass share them
        prose = prose_bytes(runs)
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
        text = trim_edges(drop_headline(text, tree, title), runs).strip() if text else ""
    except Exception as exc:  # the per-page boundary: any parser failure is a rejection
        log.warning("extraction failed for %s: %s", url, exc)
        return Rejection("extraction_failed", f"{type(exc).__name__}: {exc}")
    if counts is not None:
        counts[path if text else "none"] = counts.get(path if text else "none", 0) + 1
    if not text:
        return Rejection("no_article", "no article text found in the page by any method")
    # the opening is enough to reach min_tokens and to tell CJK text; the whole text only when it is short
    tokens = tokenize(text[:_SAMPLE_CHARS])
    if len(tokens) < min_tokens and len(text) > _SAMPLE_CHARS:
        tokens = tokenize(text)
    if len(tokens) < min_tokens:
        return Rejection("too_short", f"the article has {len(tokens)} tokens, fewer than {min_tokens}")
    lang = lang or html_lang(html) or getattr(doc, "language", None)
    if not lang and cjk_share(tokens) >= 0.5:
        lang = "ja" if re.search("[\u3040-\u30ff]", text) else "zh"
    credit = wire_credit(signals, text, url=url)
    return Article(title=title, text=text, lang=lang, published=published, image=signals.image,
                   wire=credit[0] if credit else None, wire_by=credit[1] if credit else None)  # fmt: skip
