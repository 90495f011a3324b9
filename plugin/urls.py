"""Lossy URL normalisation: one key for the forms a publisher serves a page under."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit

if TYPE_CHECKING:
    from publicsuffixlist import PublicSuffixList

_TRACKING = re.compile(
    r"^(utm_\w+|fbclid|gclid|dclid|msclkid|mc_cid|mc_eid|igshid|srsltid|ocid|cmpid|"
    r"ncid|ref|ref_src|src|source|campaign|share|smid|sr_share|_ga|spm|from|output|amp)$",
    re.I,
)
_HOST_PREFIX = re.compile(r"^(www\d*|m|mobile|amp)\.")
_INDEX_PAGE = re.compile(r"/(index|default)\.(html?|php|aspx?|shtml)$", re.I)
_AMP_PATH = re.compile(r"(/amp)+/?$|\.amp(?=\.html?$)|/amp(?=/)", re.I)


def site_of(url: str | None) -> str | None:
    """The host of a URL without ``www.``/``m.``/``amp.``, lower-cased."""
    if not url:
        return None
    host = (urlsplit(url if "//" in url else "//" + url).hostname or "").lower().rstrip(".")
    return _HOST_PREFIX.sub("", host) or None


@lru_cache(maxsize=1)
def _suffixes() -> PublicSuffixList:
    """The Public Suffix List shipped inside the ``publicsuffixlist`` package (read once; never fetched)."""
    from publicsuffixlist import PublicSuffixList

    return PublicSuffixList()


@lru_cache(maxsize=65536)
def registrable_domain(site: str | None) -> str | None:
    """The registrable domain of a site or URL (``news.bbc.co.uk`` -> ``bbc.co.uk``): one publisher, one site.

    By the Public Suffix List the ``publicsuffixlist`` package ships (its private section included, so
    ``a.github.io`` and ``b.github.io`` stay apart); an unlisted top-level name counts as one label
    (``news.a.test`` -> ``a.test``), an IP address or a name that is itself a public suffix as itself.
    """
    host = site_of(site)
    if not host:
        return None
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    else:
        return host
    found = _suffixes().privatesuffix(host)
    return str(found) if found else host


def normalize_url(url: str | None) -> str | None:
    """A lossy key for a URL (Media Cloud style).

    Drops the scheme, ``www.``/``m.``/``amp.`` host prefixes, tracking
    parameters, fragments, AMP path parts, index pages and trailing slashes;
    sorts the remaining query parameters. Two URLs with the same key are
    taken to be the same page of the same site.
    """
    if not url or not url.strip():
        return None
    parts = urlsplit(url.strip() if "//" in url else "//" + url.strip())
    host = site_of(url) or ""
    path = _AMP_PATH.sub("", parts.path or "")
    path = _INDEX_PAGE.sub("/", path)
    path = re.sub(r"/{2,}", "/", path).rstrip("/")
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _TRACKING.match(k))
    key = host + path
    if query:
        key += "?" + urlencode(query)
    return key.lower() if host else None


_TITLE_SEPARATORS = re.compile(r"\s+[|\-\u2013\u2014:\u00b7\u2022/\u00bb]+\s+|\s*[|\u00bb_]\s*")
_PUNCT = re.compile(r"[^\w\s]+")


def normalize_title(title: str | None, site: str | None = None) -> str | None:
    """A key for a headline (Media Cloud): site-name prefixes/suffixes, punctuation and case removed.

    A title like ``"Council passes budget | The Daily Planet"`` is split on
    separators and the longest part is kept (site names are the short
    parts); a part naming the site's host is always dropped. Returns None for
    titles too short to mean anything (under 4 words, or 8 characters for
    text without spaces such as Chinese).
    """
    if not title:
        return None
    text = unicodedata.normalize("NFKC", title).casefold().strip()
    parts = [p.strip() for p in _TITLE_SEPARATORS.split(text) if p and p.strip()]
    if site:
        host_words = {w for w in re.split(r"[.\-]", site.casefold()) if len(w) > 2} - {"com", "net", "org", "www"}
        parts = [p for p in parts if not (set(_PUNCT.sub(" ", p).split()) & host_words and len(parts) > 1)] or parts
    if not parts:
        return None
    best = max(parts, key=len)
    key = " ".join(_PUNCT.sub(" ", best).split())
    words = key.split()
    if len(words) < 4 and not (len(words) >= 1 and len(key) >= 8 and not key.isascii()):
        return None
    return key
