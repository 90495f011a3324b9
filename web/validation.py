"""Checking what requests carry before anything is done with it: JSON bodies, numbers, pages, texts."""

from __future__ import annotations

import json
import re

from flask import request
from werkzeug.routing import PathConverter

from newsfold.plugin.errors import InputError
from newsfold.plugin.ids import LAST_ROUTE_WORDS, id_problem, shown
from newsfold.plugin.search.public_query import checked_query, checked_search_text

MAX_OFFSET = 10_000_000
#: the longest site or language filter
MAX_FILTER_CHARS = 200


class StoryNameConverter(PathConverter):
    """A story name that a route puts last (``<story:cluster_id>``): a path like a name, but never one that ends
    with a word an action's route puts after a name (``plugin.ids.LAST_ROUTE_WORDS``, which the id grammar
    refuses). ``GET /api/clusters/x/merge`` is then no story's address but the merge of ``x``, which takes POST
    only: a 405 whose ``Allow`` names POST, as the OpenAPI document says."""

    regex = r"[^/](?:(?!/(?:" + "|".join(re.escape(word) for word in LAST_ROUTE_WORDS) + r")\Z).)*"


class BadBody(InputError):
    """The request body is not the JSON it should be (answered with 400 and the message)."""


def json_body(*, required: bool = True):
    """The request's JSON body, or None when it is empty and not ``required``.

    Raises:
        BadBody: the body is not JSON, or nested too deeply to read (the message says which).
    """
    data = request.get_data(cache=True)
    if not data:
        if required:
            raise BadBody("the body must be JSON (Content-Type: application/json); it is empty")
        return None
    try:
        payload = json.loads(data)
    except RecursionError:
        raise BadBody("the body must be JSON nested less deeply; this JSON is too deep to read") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadBody(f"the body must be JSON (Content-Type: application/json): {str(exc)[:120]}") from None
    field = lone_surrogate_field(payload)
    if field is not None:
        raise BadBody(
            f"{field} holds a lone surrogate (a \\ud800-\\udfff escape without its pair), which is not text; "
            "send valid UTF-8 or escape pairs"
        )
    return payload


def _printable_name(name: str) -> str:
    return name[:80].encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate_field(value) -> str | None:
    """The first field of a parsed JSON value (``pages[0].html``, ``note``) holding a lone surrogate, or None.

    JSON's ``\\ud800`` escapes decode to such a character, which no text encoding can write back: found
    at the door, it is a 400 naming the field rather than an error deep inside.
    """
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return where or "the body"
        elif isinstance(item, dict):
            children = []
            for key, child in item.items():
                name = f"{where}.{_printable_name(key)}" if where else _printable_name(key)
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return f"the name of field {name}"
                children.append((child, name))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(child, f"{where}[{i}]") for i, child in enumerate(item)]))
    return None


#: query parameters of the JSON API that hold one value each: given empty or more than once, a 400 (on the HTML
#: pages an empty form field means the default; a script that sends ``window=`` has made a mistake)
STRICT_API_ARGS = ("window", "sort", "from", "to", "page", "limit", "offset", "failures_offset", "failures_limit",
                   "originals", "nowire")  # fmt: skip


def api_argument_problem(args) -> str | None:
    """What is wrong with an API request's single-valued query parameters (:data:`STRICT_API_ARGS`), or None."""
    for name in STRICT_API_ARGS:
        values = args.getlist(name)
        if len(values) > 1:
            return f"{name} is given {len(values)} times; give it once"
        if values and not values[0].strip():
            return f"{name} is empty: leave it out for its default, or give a value"
    return None


def whole_number(value: str | None, name: str, *, default: int, low: int, high: int) -> int:
    """A query parameter as an int in ``[low, high]``.

    Raises:
        ValueError: not a whole number, or out of range (the message names the parameter).
    """
    if value is None or value == "":
        return default
    text = value.strip()
    if not text.lstrip("-").isdigit() or len(text) > 12:
        raise InputError(f"{name} must be a whole number from {low} to {high:,}, got {value[:40]!r}")
    number = int(text)
    if not low <= number <= high:
        raise InputError(f"{name} must be a whole number from {low} to {high:,}, got {value[:40]!r}")
    return number


PAGE_FIELDS = ("html", "url", "id", "site", "lang", "published", "section")
OPTIONAL_FIELDS = PAGE_FIELDS[1:]
MAX_PROBLEMS = 20


class InvalidPages(InputError):
    """The body is not a valid list of pages; ``problems`` lists what is wrong (at most ``MAX_PROBLEMS``)."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems[:MAX_PROBLEMS]
        if len(problems) == 1:
            message = problems[0]
        else:
            message = f"{len(problems)} problems in the pages; the first: {problems[0]}"
        super().__init__(message)


def _kind(value) -> str:
    return "null" if value is None else type(value).__name__


def parse_pages(payload, *, max_pages: int) -> list[dict]:
    """The pages of a ``{"pages": [...]}`` body as the ingest task's page dicts.

    Each page needs a string ``html``; ``url``, ``id``, ``site``, ``lang``,
    ``published`` and ``section`` (a feed's category) are optional strings (or null), an ``id`` within the id
    grammar (``plugin.ids``); other keys are refused so a misspelt field is
    not silently dropped.

    Raises:
        InvalidPages: with a message naming the first problem.
    """
    if not isinstance(payload, dict) or "pages" not in payload:
        raise InvalidPages(['the body must be a JSON object like {"pages": [{"html": "...", "url": "..."}]}'])
    pages = payload["pages"]
    if not isinstance(pages, list):
        raise InvalidPages([f'"pages" must be a list, got {_kind(pages)}'])
    if not pages:
        raise InvalidPages(['"pages" is empty: send at least one page'])
    if len(pages) > max_pages:
        raise InvalidPages([f"too many pages: {len(pages)}; send at most {max_pages} per request"])
    problems: list[str] = []
    out: list[dict] = []
    for i, page in enumerate(pages):
        if not isinstance(page, dict):
            problems.append(f"pages[{i}] must be an object, got {_kind(page)}")
            continue
        if not isinstance(page.get("html"), str):
            got = "missing" if "html" not in page else f"got {_kind(page['html'])}"
            problems.append(f"pages[{i}].html must be a string ({got})")
        for name in OPTIONAL_FIELDS:
            value = page.get(name)
            if value is not None and not isinstance(value, str):
                problems.append(f"pages[{i}].{name} must be a string or null, got {_kind(value)}")
        if page.get("id") and isinstance(page["id"], str) and (problem := id_problem(page["id"])) is not None:
            problems.append(f"pages[{i}].id {problem}: {shown(page['id'])}")
        unknown = sorted(set(page) - set(PAGE_FIELDS))
        if unknown:
            problems.append(f"pages[{i}] has unknown field(s) {', '.join(unknown)}; known: {', '.join(PAGE_FIELDS)}")
        out.append({name: page.get(name) for name in PAGE_FIELDS})
    if problems:
        raise InvalidPages(problems)
    return out


def address_chars(args) -> int:
    """The characters of a request's arguments, decoded (each ``name=value`` and its ``&``): what the address limit
    counts, so that a value within its own limit counts the same in any script (percent-encoded, a character
    outside ASCII takes 6 to 12)."""
    pairs = args.items(multi=True) if hasattr(args, "getlist") else args.items()
    return sum(len(name) + len(value) + 2 for name, value in pairs)


def has_control_chars(text: str) -> bool:
    """Whether ``text`` holds control characters other than tab and line breaks."""
    return any(ord(ch) < 32 and ch not in "\t\n\r" or ord(ch) == 127 for ch in text)


def query_text(value: str | None, *, passages: bool = False) -> str:
    """A full-text query argument, stripped; within the core's limits (``plugin.search.public_query.checked_query``;
    with ``passages``, a pasted passage of more words is accepted up to its own length, ``checked_search_text``).

    Raises:
        ValueError: too long, too many words, or control characters (the message says which).
    """
    q = checked_search_text(value) if passages else checked_query(value)
    if has_control_chars(q):
        raise InputError("the query contains control characters")
    return q


def filter_text(value: str | None, name: str, *, limit: int = MAX_FILTER_CHARS) -> str | None:
    """A filter argument (a site, a language), stripped; None when empty.

    Raises:
        ValueError: longer than ``limit`` or with control characters.
    """
    value = (value or "").strip()
    if len(value) > limit or has_control_chars(value):
        raise InputError(f"{name} must be at most {limit} printable characters")
    return value or None


def page_number(raw: str | None) -> int:
    """A ``page`` argument (1 when absent): a positive whole number of at most five digits.

    Raises:
        ValueError: anything else (the message shows what was sent).
    """
    raw = (raw or "1").strip()
    if not (raw.isascii() and raw.isdigit()) or not raw.strip("0") or len(raw) > 5:
        raise InputError(f"page must be a positive whole number, got {raw[:20]!r}")
    return int(raw)
