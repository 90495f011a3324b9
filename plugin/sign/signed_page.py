"""What signing takes and gives: a :class:`Page` in, a :class:`SignedPage` out.

Plain data: the stored form of a signed page (its fold and content fields) is
written by ``plugin.fold.document``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from newsfold.plugin.extract.result import Article
    from newsfold.plugin.sign.signature import Signature


@dataclass(frozen=True)
class Page:
    """One page to ingest: raw bytes (or decoded HTML) and what is known about it."""

    html: bytes | str
    url: str | None = None
    id: str | None = None
    site: str | None = None
    lang: str | None = None
    published: str | None = None
    section: str | None = None  # given from outside (a feed's category); the page's markup wins


@dataclass(frozen=True)
class TextMeta:
    """What is known about an article a host holds as text (:func:`~newsfold.plugin.sign.signing.sign_text`).

    Attributes:
        title: the headline (title evidence within a site; not signed).
        url: the article's URL (URL evidence within a site; the id when ``page_id`` is None).
        lang: a language code, if known.
        page_id: the document id in the index (the host's own id).
        site: the site; the URL's host when None.
        published: publication date (ISO 8601) or None.
        section: the article's section, if known (normalised; else the URL's, ``plugin.extract.section``).
    """

    title: str | None = None
    url: str | None = None
    lang: str | None = None
    page_id: str | None = None
    site: str | None = None
    published: str | None = None
    section: str | None = None


@dataclass
class SignedPage:
    """A page ready to index: the article, its signature and its band keys."""

    page_id: str
    url: str | None
    url_key: str | None
    site: str | None
    article: Article
    signature: Signature
    #: the stored signature's tokens (``plugin.sign.signature.band_tokens``): one per LSH band, which the band
    #: lookup asks for, then a token of the values beyond the bands (only when ``bands x rows < num_perm``)
    band_keys: list[str]
    content_hash: str
    published: str | None = None
    title_key: str | None = None
    features: np.ndarray | None = None  # feature hashes counted by StoryStats when the page starts a story
    nearest_rejected: float | None = None  # best Jaccard among candidates that failed verification
    passages: dict[str, Any] | None = (
        None  # the text's passage keys (plugin.sign.passages), compared with the story's reference
    )

    def day(self) -> str | None:
        """The page's publication day (YYYY-MM-DD) when known."""
        published = self.article.published or self.published
        return published[:10] if published else None
