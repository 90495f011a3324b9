"""What extraction returns: an ``Article``, or a ``Rejection`` saying why a page has none."""

from __future__ import annotations

from dataclasses import dataclass

#: reason codes a rejection can carry (documented in docs/ingest.md)
REASONS = (
    "empty",
    "too_large",
    "too_complex",
    "not_html",
    "undecodable",
    "no_article",
    "too_short",
    "extraction_failed",
)


@dataclass(frozen=True)
class Article:
    """The article found in a page."""

    title: str
    text: str
    lang: str | None
    published: str | None = None
    image: str | None = None  # an absolute http(s) URL of the page's picture (plugin.extract.credits)
    wire: str | None = None  # the news agency the page credits
    wire_by: str | None = None  # where the credit was read: dateline, credit line, byline, meta, json-ld ...
    section: str | None = None  # the page's section, normalised (plugin.extract.section)


@dataclass(frozen=True)
class Rejection:
    """Why a page yields no article; ``reason`` is one of ``REASONS``."""

    reason: str
    detail: str

    def message(self) -> str:
        return f"{self.reason}: {self.detail}"
