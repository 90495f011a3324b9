"""Lossy URL normalisation: one key for the forms a publisher serves a page under."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlencode, urlsplit

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
