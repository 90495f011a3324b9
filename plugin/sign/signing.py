"""Signing: a page (HTML) or an extracted text becomes a :class:`SignedPage` ready for ``ingest``.

Pure: no server is contacted unless the caller passes the Redis-backed
statistics (``repeated``, ``stats``).
"""

from __future__ import annotations

import hashlib
import re
import warnings
from dataclasses import fields, replace
from typing import Protocol

from newsfold.plugin.errors import InputError, InputTypeError, check_type, clean_text
from newsfold.plugin.extract.article import Article, Rejection, extract_article
from newsfold.plugin.extract.credits import wire_credit
from newsfold.plugin.extract.section import page_section
from newsfold.plugin.ids import check_page_id
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.passages import kept_paragraphs, layout_of, split_text, stored_keys
from newsfold.plugin.sign.signature import StoryStatistics, band_tokens, content_hash, signed_features
from newsfold.plugin.sign.signed_page import Page, SignedPage, TextMeta
from newsfold.plugin.text import cjk_share, opening_tokens
from newsfold.plugin.urls import normalize_title, normalize_url, site_of


class RepeatedLineFilter(Protocol):
    """The lines each site repeats across its pages (menus, teasers), kept by the caller (newsfold: in Redis)."""

    def strip(
        self, text: str, *, site: str | None, page_id: str, date: str | None, line_tokens: list[int] | None = None
    ) -> str:
        """Record the page's lines and return its text without the lines repeated on its site.

        ``line_tokens``: the token count of each non-blank line, when the caller has tokenised the text.
        """
        ...


def page_id_for(page: Page, text: str | None = None) -> str:
    """The document id: the caller's id, else a hash of the normalised URL, else of the text."""
    if page.id:
        return str(page.id)
    key = normalize_url(page.url) or text or ""
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:20]


def sign_page(
    page: Page, settings: Settings, *, repeated: RepeatedLineFilter | None = None, stats: StoryStatistics | None = None
) -> SignedPage | Rejection:
    """Extract and sign one page (the public "sign a page" call).

    Args:
        page: the raw page and its metadata; ``page.id`` is the document id
            (a host's own id), else a hash of the normalised URL.
        settings: signature and extraction settings.
        repeated: the site statistics; when given, lines other pages of the
            same site carried this week are left out of the signature.
        stats: the collection's story frequencies, read by the weighted
            signature and the frequent-shingle filter (:class:`~newsfold.plugin.sign.signature.StoryStatistics`).

    Returns:
        A ``SignedPage`` ready for ``ingest``, or the ``Rejection`` (reason and detail).

    Raises:
        InputTypeError: ``page`` is not a ``Page`` or ``settings`` not ``Settings``
            (bad page contents are a ``Rejection``, never an error).
        InputError: ``page.id`` is outside the id grammar (``plugin.ids``).
    """
    check_type(page, Page, "page")
    check_type(settings, Settings, "settings")
    check_type(page.html, (bytes, str), "page.html")
    for name in ("url", "id", "site", "lang", "published", "section"):
        check_type(getattr(page, name), str, f"page.{name}", optional=True)
    if page.id:  # an empty id is none (page_id_for)
        check_page_id(page.id, "page.id")
    html = clean_text(page.html) if isinstance(page.html, str) else page.html
    article = extract_article(
        html,
        url=page.url,
        lang=page.lang,
        min_tokens=settings.min_tokens,
        max_bytes=settings.max_page_bytes,
        cleanup=settings.cleanup,
        limits=settings.markup_limits,
        section=page.section,
    )
    if isinstance(article, Rejection):
        return article
    return sign_article(
        article,
        page_id=page_id_for(page, article.text),
        url=page.url,
        site=page.site,
        published=page.published,
        settings=settings,
        repeated=repeated,
        stats=stats,
    )


def sign_text(
    text: str,
    meta: TextMeta | None = None,
    *,
    settings: Settings,
    repeated: RepeatedLineFilter | None = None,
    stats: StoryStatistics | None = None,
    **deprecated: str | None,
) -> SignedPage | Rejection:
    """Sign an article a host already holds as text (no HTML, no extraction).

    Args:
        text: the article body, paragraphs separated by newlines.
        meta: its title, URL, language, id, site and date (:class:`TextMeta`).
        settings: signature settings (the same as the index's).
        repeated: see :func:`sign_page`.
        stats: see :func:`sign_page`.
        deprecated: ``title``, ``url``, ``lang``, ``page_id``, ``site`` and
            ``published`` as keywords, the form of newsfold 0.1: still taken, with a
            ``DeprecationWarning``; pass a ``TextMeta`` instead.
        A ``meta.section`` is normalised; without one, the URL's section is taken (``plugin.extract.section``).

    Returns:
        A ``SignedPage`` ready for ``ingest``, or a ``Rejection``: ``too_short``
        below ``settings.min_tokens`` tokens, ``no_article`` for empty text (lone surrogates become U+FFFD).

    Raises:
        InputTypeError: an argument of the wrong type (``text`` as bytes: decode it first).
        InputError: ``page_id`` is outside the id grammar (``plugin.ids``), or an unknown keyword.
    """
    if isinstance(text, bytes | bytearray):
        raise InputTypeError("text must be str, not bytes: decode it first, or pass the HTML to sign_page")
    check_type(text, str, "text", optional=True)
    meta = _text_meta(meta, deprecated)
    check_type(settings, Settings, "settings")
    for name in _META_FIELDS:
        check_type(getattr(meta, name), str, name, optional=True)
    if meta.page_id:
        check_page_id(meta.page_id, "page_id")
    article = _text_article(text, title=meta.title, lang=meta.lang, published=meta.published,
                            min_tokens=settings.min_tokens)  # fmt: skip
    if isinstance(article, Rejection):
        return article
    article = replace(article, section=page_section(None, "", url=meta.url, given=meta.section))
    pid = page_id_for(Page(html="", url=meta.url, id=meta.page_id), article.text)
    return sign_article(
        article,
        page_id=pid,
        url=meta.url,
        site=meta.site,
        published=meta.published,
        settings=settings,
        repeated=repeated,
        stats=stats,
    )


_META_FIELDS = tuple(f.name for f in fields(TextMeta))


def _text_meta(meta: TextMeta | None, deprecated: dict[str, str | None]) -> TextMeta:
    """The ``TextMeta`` of a :func:`sign_text` call: the one given, or one made of the old keywords (warned)."""
    check_type(meta, TextMeta, "meta", optional=True)
    if not deprecated:
        return meta or TextMeta()
    unknown = sorted(set(deprecated) - set(_META_FIELDS))
    if unknown:
        raise InputError(f"sign_text() got unexpected keyword arguments: {', '.join(unknown)}")
    if meta is not None:
        raise InputError(f"sign_text(): pass {', '.join(sorted(deprecated))} in meta (TextMeta), not as keywords too")
    warnings.warn(
        f"sign_text({', '.join(f'{k}=' for k in sorted(deprecated))}) is deprecated: pass meta=TextMeta(...)",
        DeprecationWarning,
        stacklevel=3,
    )
    return TextMeta(**deprecated)


def _text_article(
    text: str | None, *, title: str | None, lang: str | None, published: str | None, min_tokens: int
) -> Article | Rejection:
    """The article a host's text is (what extraction gives for a page), or why it is not one.

    Lone surrogates become U+FFFD; an empty text is ``no_article``, one under
    ``min_tokens`` tokens ``too_short``. The language, when not given, is
    told for Chinese and Japanese text; the credited agency is read from the
    text's dateline and credit lines (a text has no page metadata).
    """
    text, title = clean_text(text or ""), clean_text(title) if title else title
    body = text.strip()
    if not body:
        return Rejection("no_article", "the text is empty")
    tokens = opening_tokens(body, min_tokens)  # signing tokenises the whole text, once (sign_article)
    if len(tokens) < min_tokens:
        return Rejection("too_short", f"the article has {len(tokens)} tokens, fewer than {min_tokens}")
    if not lang and cjk_share(tokens) >= 0.5:
        lang = "ja" if re.search("[\u3040-\u30ff]", body) else "zh"
    credit = wire_credit(None, body)  # a text has its dateline and credit lines, not the page's metadata
    return Article(title=(title or "").strip(), text=body, lang=lang, published=published,
                   wire=credit[0] if credit else None, wire_by=credit[1] if credit else None)  # fmt: skip


def sign_article(
    article: Article,
    *,
    page_id: str,
    url: str | None,
    site: str | None,
    published: str | None,
    settings: Settings,
    repeated: RepeatedLineFilter | None = None,
    stats: StoryStatistics | None = None,
) -> SignedPage:
    """Sign an extracted article (the second half of :func:`sign_page`; a text reindex starts here).

    Args:
        article: the extracted title and text.
        page_id: the document id.
        url: the page URL, if known.
        site: the site; the URL's host when None.
        published: a publication date given from outside (the article's own date wins).
        settings: signature settings.
        repeated: see :func:`sign_page`.
        stats: see :func:`sign_page`.

    Returns:
        The signed page.
    """
    site = site or site_of(url)
    text = article.text
    split = split_text(text)  # tokenised once: for the line filter, the passages and the signature
    if repeated is not None:
        lines = [sum(len(tokens) for tokens, _ in paragraph) for paragraph in split]
        text = repeated.strip(text, site=site, page_id=page_id, date=article.published or published, line_tokens=lines)
        if text != article.text:
            split = kept_paragraphs(split, article.text, text)
    # the passages of what is signed: lines the site repeats on its other pages are not the story's material
    layout, tokens = layout_of(split)
    signature, features = signed_features(text, settings, stats=stats, tokens=tokens)
    return SignedPage(
        page_id=page_id,
        url=url,
        url_key=normalize_url(url),
        site=site,
        article=article,
        signature=signature,
        band_keys=band_tokens(signature.hashvalues, bands=settings.bands, rows=settings.rows),
        content_hash=content_hash(article.title + "\n" + article.text),
        published=published,
        title_key=normalize_title(article.title, site),
        features=features,
        passages=stored_keys(layout),
    )
