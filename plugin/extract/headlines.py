"""What a reader sees of a page: its headline without the site's name, a lede and a snippet.

Headlines: most sites wrap every title in the same prefix or suffix ("Riverside
Post | …", "… - Coastline Times", "…_新华网"). newsfold never uses a list of
site names: at ingest each page stores the affix *candidates* of its title
(:func:`title_affixes`: the parts before its first and after its last
separators); at display time one aggregation over a site's own pages
(:func:`site_affixes`) tells which candidates most of that site's titles share,
and :func:`clean_headline` strips those. A part that spells the site's host
name ("Al Jazeera" on aljazeera.com) is stripped too, so a site with one page
is cleaned as well. A headline is never stripped to nothing, and only whole
separated parts are removed, so no word of the headline itself is cut.

Pure: builders return dicts, readers take responses.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from newsfold.plugin.errors import InputError

#: separators between a headline and a site name: spaced dashes, bars, colons, bullets, guillemets;
#: bars and underscores also unspaced (common on Chinese sites), a dash between two CJK characters
_SEPARATOR = re.compile(
    r"\s+[-\u2013\u2014|:\u00b7\u2022\u00bb/~]+\s+|\s*[|\uff5c_\u00bb]\s*|(?<=\w):\s+"
    r"|(?<=[\u3400-\u9fff])\s*[-\u2013\u2014\uff0d]{1,2}\s*(?=[\u3400-\u9fff])"
)
#: affix candidates per side kept at ingest (the outermost part, and the two outermost parts)
_DEPTH = 2
#: a site's affix: shared by at least this share of its titles, and by at least MIN_AFFIX_PAGES of them
AFFIX_SHARE = 0.5
MIN_AFFIX_PAGES = 3
#: the longest affix stored (a longer "part" is the headline itself)
MAX_AFFIX_CHARS = 80
#: fields of newsfold's own index holding the candidates
AFFIX_FIELD = "title_affixes"
SNIPPET_CHARS = 300
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f\u2026])[\"'\u201d\u2019)\]]*(?:\s+|(?=[^\x00-\x7f]))")
_TAG = re.compile(r"<[^>]{0,200}>")


def _parts(title: str) -> list[tuple[str, str]]:
    """``[(separator_before, part), ...]`` of a title split on its separators (the first separator is '')."""
    out: list[tuple[str, str]] = []
    last, sep = 0, ""
    for m in _SEPARATOR.finditer(title):
        segment = title[last : m.start()]
        if segment.strip():
            out.append((sep, segment))
            sep = m.group(0)
        elif out:  # separators in a row are one
            sep += m.group(0)
        last = m.end()
    if title[last:].strip():
        out.append((sep, title[last:]))
    return [(s, p) for s, p in out if p.strip()]


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def title_affixes(title: str | None) -> list[str]:
    """The affix candidates of a title, stored with the page: ``p:<prefix>`` and ``s:<suffix>`` (normalised).

    A candidate is the first (or last) one or two separated parts; a title
    without a separator has none.
    """
    parts = _parts(" ".join((title or "").split()))
    if len(parts) < 2:
        return []
    out = []
    for k in range(1, min(_DEPTH, len(parts) - 1) + 1):
        prefix = _norm("".join(s + p for s, p in parts[:k]).strip())
        suffix = _norm("".join(s + p for s, p in parts[-k:]).strip())
        if len(prefix) <= MAX_AFFIX_CHARS:
            out.append("p:" + prefix)
        if len(suffix) <= MAX_AFFIX_CHARS:
            out.append("s:" + suffix)
    return out


def _host_words(site: str | None) -> str:
    """The letters of a site's registrable name (``www.al-jazeera.com`` -> ``aljazeera``)."""
    labels = [x for x in (site or "").casefold().split(".") if x and x not in {"www", "m", "amp"}]
    if len(labels) >= 2:
        labels = labels[:-1]  # the top-level domain
    name = max(labels, key=len) if labels else ""
    return re.sub(r"[^a-z0-9]", "", name)


def _spells_host(part: str, host: str, site: str | None = None) -> bool:
    if site and _norm(part).removeprefix("www.") == site.casefold().removeprefix("www."):
        return True
    letters = re.sub(r"[^a-z0-9]", "", _norm(part))
    return (
        len(host) >= 4
        and bool(letters)
        and (
            letters == host
            or (len(letters) >= 4 and letters in host)
            or (host in letters and len(letters) <= len(host) + 8)
        )
    )


def clean_headline(title: str | None, *, site: str | None = None, affixes: Iterable[str] = ()) -> str:
    """A title without its site's prefix or suffix.

    Args:
        title: the page's title as extracted.
        site: the page's site (host); a separated part spelling its name is stripped.
        affixes: the site's learned affixes (``p:…``/``s:…`` as :func:`title_affixes` writes them,
            from :func:`read_site_affixes`).

    Returns:
        The headline; the title itself (spaces tidied) when stripping would leave nothing.
    """
    text = " ".join((title or "").split())
    parts = _parts(text)
    if len(parts) < 2:
        return text
    learned = set(affixes)
    host = _host_words(site)
    start, end = 0, len(parts)

    def joined(a: int, b: int) -> str:
        return _norm("".join(s + p for s, p in parts[a:b]).strip())

    def rest(a: int, b: int) -> int:
        return len(joined(a, b))

    changed = True
    while changed and end - start > 1:
        changed = False
        for k in range(min(_DEPTH, end - start - 1), 0, -1):
            # a learned affix goes whatever its length; a part spelling the host only when shorter than the rest
            if "p:" + joined(start, start + k) in learned or (
                k == 1 and _spells_host(parts[start][1], host, site) and rest(start, start + 1) < rest(start + 1, end)
            ):
                start += k
                changed = True
                break
        if end - start < 2:
            break
        for k in range(min(_DEPTH, end - start - 1), 0, -1):
            if "s:" + joined(end - k, end) in learned or (
                k == 1 and _spells_host(parts[end - 1][1], host, site) and rest(end - 1, end) < rest(start, end - 1)
            ):
                end -= k
                changed = True
                break
    if (start, end) == (0, len(parts)):
        return text
    kept = parts[start:end]
    headline = (kept[0][1] + "".join(s + p for s, p in kept[1:])).strip()
    return headline if re.search(r"\w", headline) else text


def site_name(title: str | None, *, site: str | None = None) -> str | None:
    """The publication's name as a title spells it ("Northern Ledger" on northernledger.example), or None.

    The name is the title's first or last separated part when that part spells
    the site's host name (the rule that strips it from the headline), returned
    as the title writes it. Learned affixes that do not spell the host are
    left out: they are as often a section ("World", "Opinion") as a name.
    """
    parts = _parts(" ".join((title or "").split()))
    if len(parts) < 2:
        return None
    host = _host_words(site)
    for _, part in (parts[0], parts[-1]):
        if _spells_host(part, host, site) and re.search(r"[^\W\d_]", part):
            return part.strip()
    return None


def site_affixes(sites: Sequence[str], *, per_site: int = 6) -> dict[str, Any]:
    """Search body: each site's page count and its most shared title affix candidates.

    Raises:
        ValueError: no site.
    """
    wanted = [s for s in dict.fromkeys(sites) if s]
    if not wanted:
        raise InputError("no site to learn affixes for")
    return {
        "size": 0,
        "query": {"terms": {"site": wanted}},
        "aggs": {"sites": {"terms": {"field": "site", "size": len(wanted)},
                           "aggs": {"affixes": {"terms": {"field": AFFIX_FIELD, "size": per_site}}}}},
    }  # fmt: skip


def read_site_affixes(
    response: Mapping[str, Any], *, share: float = AFFIX_SHARE, min_pages: int = MIN_AFFIX_PAGES
) -> dict[str, list[str]]:
    """``site -> affixes`` of a :func:`site_affixes` response: candidates on at least ``share`` of the site's
    pages and on at least ``min_pages`` of them."""
    out: dict[str, list[str]] = {}
    for bucket in ((response.get("aggregations") or {}).get("sites") or {}).get("buckets", []):
        pages = int(bucket.get("doc_count") or 0)
        found = [str(b["key"]) for b in bucket.get("affixes", {}).get("buckets", [])
                 if int(b["doc_count"]) >= max(min_pages, share * pages)]  # fmt: skip
        if found:
            out[str(bucket["key"])] = found
    return out


def learn_from_titles(
    titles: Iterable[tuple[str | None, str | None]], *, share: float = AFFIX_SHARE, min_pages: int = MIN_AFFIX_PAGES
) -> dict[str, list[str]]:
    """``site -> affixes`` learned from ``(site, title)`` pairs in memory, by the rule of :func:`read_site_affixes`
    (for a collection that is not in an index: a benchmark, a host's own titles)."""
    pages: Counter[str] = Counter()
    seen: dict[str, Counter[str]] = {}
    for site, title in titles:
        if not site:
            continue
        pages[site] += 1
        seen.setdefault(site, Counter()).update(set(title_affixes(title)))
    return {site: found for site, counts in seen.items()
            if (found := [a for a, n in counts.most_common() if n >= max(min_pages, share * pages[site])])}  # fmt: skip


def story_headline(versions: Iterable[Mapping[str, Any]], *, origin_id: str | None = None) -> str | None:
    """A story's headline: its origin version's ``headline`` when among ``versions``, else the most common one.

    Ties go to the earlier version in ``versions``.
    """
    seen = [v for v in versions if v.get("headline")]
    for v in seen:
        if origin_id and v.get("id") == origin_id:
            headline: str = v["headline"]
            return headline
    if not seen:
        return None
    counts = Counter(_norm(v["headline"]) for v in seen)
    best = max(counts.values())
    common: str = next(v["headline"] for v in seen if counts[_norm(v["headline"])] == best)
    return common


def lede(text: str | None, *, limit: int = SNIPPET_CHARS) -> str | None:
    """The first sentences of a text, at most ``limit`` characters, cut at a sentence boundary.

    A first sentence longer than ``limit`` is cut at a word boundary and ends with "…".
    """
    paragraphs = [" ".join(p.split()) for p in (text or "").split("\n") if p.strip()]
    if not paragraphs:
        return None
    body = " ".join(paragraphs[:3])
    if len(body) <= limit and len(paragraphs) <= 3:
        return body
    cut = 0
    for m in _SENTENCE_END.finditer(body):
        if m.start() > limit:
            break
        cut = m.start()
    if cut:
        return body[:cut].strip()
    return shorten(body, limit)


def shorten(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` cut at a word (or, without spaces, a character) before ``limit``, with "…" when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:") + "…"


#: what may end a sentence (a snippet ending otherwise stops mid-sentence, and says so with "…")
_CLOSERS = tuple(".!?\u3002\uff01\uff1f\u2026\"'\u201d\u2019)]")
#: the most words a section label before a repeated headline has ("Science", "Local news")
_LABEL_WORDS = 3


def without_headline(text: str, headline: str | None) -> str:
    """``text`` without a leading copy of ``headline`` and the short section label before it.

    A page's text often starts with its kicker and headline ("Science New beetle species found in Glenbury
    caves GLENBURY —"), which a result shows just above: the snippet starts after them ("GLENBURY —").
    """
    head = " ".join((headline or "").split())
    if len(head) < 12:  # too short to be sure it is the headline
        return text
    at = text.lower().find(head.lower(), 0, len(head) + 40)
    label = text[:at] if at >= 0 else ""
    if at < 0 or len(label.split()) > _LABEL_WORDS or _SENTENCE_END.search(label + " "):
        return text
    return text[at + len(head) :].lstrip(" :|-\u2013\u2014\u00b7") or text


def _marked(text: str, limit: int, *, fragment: bool) -> str:
    """``text`` shortened, with "…" where it stops mid-sentence (no closing mark) and, a highlighted
    ``fragment``, where it starts mid-sentence (a lower-case start; a lede starts where its text does)."""
    text = shorten(text, limit - 2)
    if fragment and text[:1].islower():
        text = "\u2026" + text
    return text if text.endswith(_CLOSERS) else text + "\u2026"


def snippet(
    highlights: Sequence[str] | None, lede_text: str | None, *, limit: int = SNIPPET_CHARS,
    headlines: Sequence[str | None] = (),
) -> str | None:  # fmt: skip
    """A result's snippet: its best highlighted fragment as plain text, else its story's lede.

    A leading section label and copy of one of the ``headlines`` are left out (:func:`without_headline`), and a
    snippet that starts or stops mid-sentence says so with "…".
    """
    texts = [" ".join(html.unescape(_TAG.sub("", fragment)).split()) for fragment in highlights or ()]
    lede_at = len(texts)
    for at, text in enumerate([*texts, " ".join((lede_text or "").split())]):
        for headline in headlines:
            text = without_headline(text, headline)
        if text:
            return _marked(text, limit, fragment=at < lede_at)
    return None
