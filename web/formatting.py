"""Pure helpers for rendering: dates, percentages, safe links and highlight fragments."""

from __future__ import annotations

import datetime as dt
import html
import math
import re
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from markupsafe import Markup, escape

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MARK = re.compile(r"(</?mark>)")


def parse_datetime(value) -> dt.datetime | None:
    """An ISO 8601 string (or epoch milliseconds) as a datetime; None when it does not parse."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC)
    try:
        return dt.datetime.fromisoformat(str(value))
    except ValueError:
        return None


def format_date(value) -> str:
    """``2 May 2024``; an unparseable value is shown as it is, a missing one as an empty string."""
    parsed = parse_datetime(value)
    if parsed is None:
        return "" if value is None else str(value)
    return f"{parsed.day} {_MONTHS[parsed.month - 1]} {parsed.year}"


def format_datetime(value) -> str:
    """``2 May 2024, 14:05 UTC`` (times with a zone are shown in UTC)."""
    parsed = parse_datetime(value)
    if parsed is None:
        return "" if value is None else str(value)
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.UTC)
        return f"{format_date(parsed.isoformat())}, {parsed:%H:%M} UTC"
    return f"{format_date(parsed.isoformat())}, {parsed:%H:%M}"


def percent(value: float | None) -> str:
    """``0.9609`` -> ``96%``; None -> an en dash."""
    if value is None:
        return "–"
    return f"{round(value * 100)}%"


def safe_url(url: str | None) -> str | None:
    """The URL when it is an http(s) link, else None (never a ``javascript:`` link)."""
    if not url:
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return url.strip()


def redact_url(url: str | None) -> str:
    """A server URL without its user name and password, for messages (each of several, comma-separated)."""
    if not url:
        return "(not configured)"
    if "," in url:
        return ",".join(redact_url(part.strip()) for part in url.split(",") if part.strip())
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(unparseable URL)"
    if parts.username is None and parts.password is None:
        return url
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def safe_fragment(fragment: str) -> Markup:
    """An Elasticsearch highlight fragment as safe HTML in which only ``<mark>`` tags are markup.

    The search asks for ``encoder: html``, so the text between the tags is
    already escaped; it is unescaped and escaped again here, which changes
    nothing for escaped text and neutralises anything that is not.
    """
    out = []
    for part in _MARK.split(fragment):
        if part in ("<mark>", "</mark>"):
            out.append(Markup(part))
        else:
            out.append(escape(html.unescape(part)))
    return Markup("").join(out)


def page_count(total: int, page_size: int) -> int:
    """Pages of ``page_size`` items needed to show ``total`` items (0 for none)."""
    return math.ceil(total / page_size) if total else 0


@dataclass
class Paged:
    """One page of a longer list: its number, its size and the length of the whole list."""

    page: int
    page_size: int
    total: int

    @property
    def total_pages(self) -> int:
        return page_count(self.total, self.page_size)


def page_links(current: int, total: int, *, window: int = 2) -> list[int | None]:
    """Page numbers to link: the first, the last and ``window`` either side of ``current``; None marks a gap."""
    if total <= 0:
        return []
    shown = {1, total} | set(range(max(1, current - window), min(total, current + window) + 1))
    out: list[int | None] = []
    previous = 0
    for number in sorted(shown):
        if number - previous > 1:
            out.append(None)
        out.append(number)
        previous = number
    return out


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 story``, ``3 stories``."""
    word = singular if count == 1 else (plural_form or singular + "s")
    return f"{count:,} {word}"


def has_time(value) -> bool:
    """Whether a stored date holds a time of day too (``2024-05-02T14:05:00Z``, not ``2024-05-02``)."""
    return parse_datetime(value) is not None and isinstance(value, str) and "T" in value


#: a time older than this many days is shown as a date, a newer one relative to now ("3 h ago", "yesterday")
RELATIVE_DAYS = 7


@dataclass(frozen=True)
class NewsTime:
    """A time as every card, list and page shows it (the ``when`` macro of ``templates/_macros.html``).

    ``shown``: relative within the last :data:`RELATIVE_DAYS` days, else the date (with ``fmt="datetime"``,
    the date and the time in UTC); ``exact``: the date and time in UTC, for the hover; ``datetime``: the
    ``<time datetime>`` value (ISO 8601, UTC when the value has a zone); ``local``: what ``static/time.js``
    rewrites in the reader's time zone (``"date"`` or ``"datetime"`` for an absolute time, ``"title"`` for a
    relative one, ``""`` for a day without a time, which no zone changes).
    """

    shown: str
    exact: str
    datetime: str
    local: str


def _relative(seconds: float) -> str | None:
    """``3 h ago``, ``yesterday``, ``4 days ago``; None beyond :data:`RELATIVE_DAYS` days or ahead of the clock."""
    if not 0 <= seconds < RELATIVE_DAYS * 86_400:
        return None
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    if seconds < 2 * 86_400:
        return "yesterday"
    return f"{int(seconds // 86_400)} days ago"


def news_time(value, fmt: str = "date", now: dt.datetime | None = None) -> NewsTime:
    """How a stored time is shown (:class:`NewsTime`); ``now`` defaults to the clock (tests pass their own).

    A day without a time of day is that day's date, never relative. An unparseable value is shown as it is.
    """
    parsed = parse_datetime(value)
    if parsed is None:
        text = "" if value is None else str(value)
        return NewsTime(text, text, text, "")
    if not has_time(value):
        return NewsTime(format_date(value), format_date(value), parsed.date().isoformat(), "")
    moment = parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
    utc = moment.astimezone(dt.UTC)
    exact = format_datetime(utc.isoformat())
    stamp = utc.isoformat(timespec="seconds").replace("+00:00", "Z")
    relative = _relative(((now or dt.datetime.now(dt.UTC)) - moment).total_seconds())
    if relative:
        return NewsTime(relative, exact, stamp, "title")
    shown = exact if fmt == "datetime" else format_date(utc.isoformat())
    return NewsTime(shown, exact, stamp, "datetime" if fmt == "datetime" else "date")


#: names of the languages a page may be in (ISO 639-1), in English; another code is shown as it is
LANGUAGE_NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech", "da": "Danish",
    "de": "German", "el": "Greek", "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian",
    "fi": "Finnish", "fr": "French", "ga": "Irish", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian",
    "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ko": "Korean",
    "lt": "Lithuanian", "lv": "Latvian", "ms": "Malay", "nl": "Dutch", "no": "Norwegian", "pl": "Polish",
    "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian",
    "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "th": "Thai", "tr": "Turkish", "uk": "Ukrainian",
    "ur": "Urdu", "vi": "Vietnamese", "zh": "Chinese", "cy": "Welsh",
}  # fmt: skip


def language_name(code: str | None) -> str:
    """``de`` -> ``German`` (``pt-BR`` -> ``Portuguese``); an unknown code as it is."""
    if not code:
        return ""
    return LANGUAGE_NAMES.get(code.split("-")[0].split("_")[0].lower(), code)


def foreign_lang(code: str | None) -> str | None:
    """The ``lang`` attribute a result in this language needs inside an English page (None: English or unknown)."""
    if (
        not code
        or code.split("-")[0].lower() == "en"
        or not re.fullmatch(r"[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*", code)
    ):
        return None
    return code.replace("_", "-")
