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

from newsfold.plugin.extract_blocks import (
    drop_headline,
    drop_layout_rows,
    needs_second_opinion,
    recover_dropped_blocks,
    text_runs,
)
from newsfold.plugin.extract_cleanup import (
    clean_tree,
    drop_furniture,
    page_words,
    unwrap_page_wrappers,
)
from newsfold.plugin.extract_credits import page_signals, wire_credit
from newsfold.plugin.extract_decode import decode_html, html_lang, parse_html
from newsfold.plugin.extract_meta import page_title, published_date
from newsfold.plugin.extract_result import REASONS, Article, Rejection
from newsfold.plugin.text import cjk_share, tokenize

__all__ = ["REASONS", "Article", "Rejection", "decode_html", "extract_article"]

log = logging.getLogger(__name__)

_SAMPLE_CHARS = 2000  # characters tokenised to check the length and the script of an extracted text


def extract_article(
    data: bytes | str,
    *,
    url: str | None = None,
    lang: str | None = None,
    min_tokens: int = 25,
    max_bytes: int = 10 * 1024 * 1024,
    cleanup: bool = True,
) -> Article | Rejection:
    """Extract the article (title and body text) from one page.

    Steps: decode; parse as a browser would show the page (markup after
    ``</html>`` joins the body; leniently when trafilatura's loader refuses the
    markup); turn page-sized aside/header/footer wrappers into plain blocks
    (:func:`unwrap_page_wrappers`); delete scripts, media, form controls,
    navigation, asides and footers once (:func:`drop_furniture`: trafilatura
    deletes them too, on each of its copies); remove teaser boxes and banners
    (:func:`clean_tree`); trafilatura in its fast mode, and its full cascade
    (readability, justext) only when the fast result covers little of the
    page's prose or is mostly not prose (:func:`needs_second_opinion`); add
    back the paragraphs, lists and tables it dropped inside the article's container
    (:func:`recover_dropped_blocks`); drop a first line that only repeats the
    headline (:func:`drop_headline`); around a CJK article in a layout table,
    drop the table rows that hold no sentence (:func:`drop_layout_rows`).

    Args:
        data: raw page bytes in any encoding (gzip accepted), or decoded HTML.
        url: the page URL, used by trafilatura for relative links and metadata.
        lang: a language already known for the page (wins over detection).
        min_tokens: fewer article tokens than this is a ``too_short`` rejection.
        max_bytes: larger pages are rejected as ``too_large``.
        cleanup: remove related-story boxes, teasers and banners first (:func:`clean_tree`).

    Returns:
        An ``Article``, or a ``Rejection`` naming the reason. Never raises for
        bad input.
    """
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
        if cleanup:
            clean_tree(tree, body_words=words)
        runs = text_runs(tree)  # the page's text blocks: the second-opinion test and the recovery pass share them
        doc = trafilatura.bare_extraction(tree, url=url, include_comments=False, with_metadata=False, fast=True)
        if needs_second_opinion((doc.text or "") if doc is not None else "", runs):
            second = trafilatura.bare_extraction(tree, url=url, include_comments=False, with_metadata=False)
            doc = second if second is not None else doc
        if doc is not None and doc.text:
            doc.text = drop_layout_rows(drop_headline(recover_dropped_blocks(tree, doc.text, runs=runs), tree, title))
    except Exception as exc:  # the per-page boundary: any parser failure is a rejection
        log.warning("extraction failed for %s: %s", url, exc)
        return Rejection("extraction_failed", f"{type(exc).__name__}: {exc}")
    text = (getattr(doc, "text", None) or "").strip() if doc is not None else ""
    if not text:
        return Rejection("no_article", "no article text found in the page")
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
