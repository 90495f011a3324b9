"""The OpenAPI document served at ``/api/openapi.json``: ``web/openapi.json`` with the corrections' parts built here.

``web/openapi.json`` holds everything but the corrections' kinds; :func:`openapi_document` adds, for each kind of
``plugin.edit.kinds.KINDS``, its operation (``POST /api/clusters/{cluster_id}/<route>`` or
``POST /api/pairs/<route>``), its request schema (``<Name>Request``: its fields and ``note``) and its name in the
kind enum of ``Correction``. The words the web's routes put after a story name, which the id patterns and their
descriptions refuse, are ``plugin.ids``'s (the file writes today's; a kind's new word reaches every pattern).
The route (``web.api.views``) states this server's last pages on top; the tests read the same document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from newsfold.plugin import ids
from newsfold.plugin.edit.correction_log import MAX_ID_CHARS, MAX_NOTE_CHARS, UNDO
from newsfold.plugin.edit.kinds import KINDS, CorrectionKind, RequestField

#: the static part of the OpenAPI description of every ``/api`` route
OPENAPI_FILE = Path(__file__).resolve().parent.parent / "openapi.json"
#: the whitespace ``str.strip`` takes off a request's ids and note (the server strips them)
_SPACE = r"[\t-\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*"
_GRAMMAR = (
    "no control character, no whitespace at either end, no leading `/`, no `.` or `..` part, no `versions` after a `/`"
)
#: what each correction answers besides its own conflict (409)
_REFS = {"400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound", "503": "Unavailable"}
_EXAMPLE = {"page": ("page-42", "page-43"), "story": ("page-17", "page-18")}


def openapi_document() -> dict[str, Any]:
    """The whole document: the static file, its route words ``plugin.ids``'s, and every kind's parts."""
    document: dict[str, Any] = json.loads(_with_route_words(OPENAPI_FILE.read_text(encoding="utf-8")))
    paths, schemas = document["paths"], document["components"]["schemas"]
    document["paths"] = _before("/api/corrections", paths, {kind_path(k): {"post": operation(k)} for k in KINDS})
    document["components"]["schemas"] = _before("Correction", schemas, {request_name(k): request(k) for k in KINDS})
    schemas["Correction"]["properties"]["kind"]["enum"] = [kind.name for kind in KINDS] + [UNDO]
    return document


def _before(key: str, items: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """``items`` with ``added`` placed before ``key`` (the document reads in the order of its topics)."""
    at = list(items).index(key)
    pairs = list(items.items())
    return dict([*pairs[:at], *added.items(), *pairs[at:]])


def _with_route_words(text: str) -> str:
    """The file's text with its lists of the words routes put last (``(?:compare|...)`` in the id patterns, "`/compare`,
    ... or `/not-duplicates`" in their descriptions) made ``plugin.ids.LAST_ROUTE_WORDS``."""
    text = re.sub(r"\(\?:compare(?:\|[a-z-]+)+\)", lambda _: f"(?:{'|'.join(ids.LAST_ROUTE_WORDS)})", text)
    return re.sub(r"`/compare`(?:, `/[a-z-]+`)* or `/[a-z-]+`", lambda _: _listed(), text)


def _listed() -> str:
    *first, last = (f"`/{word}`" for word in ids.LAST_ROUTE_WORDS)
    return f"{', '.join(first)} or {last}"


def id_pattern(*, stripped: bool = False) -> str:
    """The id grammar of ``plugin.ids`` as a pattern; ``stripped``: with the whitespace the server strips around."""
    space = _SPACE if stripped else ""
    inner = "|".join(word for word in ids.ROUTE_WORDS if word not in ids.LAST_ROUTE_WORDS)
    last = "|".join(ids.LAST_ROUTE_WORDS)
    end = space + "$"
    return (
        rf"^{space}(?![\s\S]*/{inner}(?:/|{end}))(?![\s\S]*/(?:{last}){end})(?!(?:[\s\S]*/)?\.\.?(?:/|{end}))"
        rf"[^\s/\u0000-\u001f\u007f-\u009f]([^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f])?{end}"
    )


def kind_path(kind: CorrectionKind) -> str:
    """A kind's path in the document (``web.api.correction_views`` routes it)."""
    return f"/api/clusters/{{cluster_id}}/{kind.route}" if kind.scope == "story" else f"/api/pairs/{kind.route}"


def request_name(kind: CorrectionKind) -> str:
    """The name of a kind's request schema: ``not_duplicates`` -> ``NotDuplicatesRequest``."""
    return "".join(part.title() for part in kind.name.split("_")) + "Request"


def operation_id(kind: CorrectionKind) -> str:
    """A kind's operationId: its core function's name in camel case (``split_page`` -> ``splitPage``)."""
    first, *rest = kind.function.__name__.split("_")
    return first + "".join(part.title() for part in rest)


def operation(kind: CorrectionKind) -> dict[str, Any]:
    """A kind's ``POST`` operation: needs ``edit`` (``web.auth``), answers ``CorrectionApplied``."""
    example = {f.name: _EXAMPLE[f.what][n] for f, n in _numbered(kind.fields) if f.what != "flag"}
    answers = {"200": ("The correction was applied and logged.", "CorrectionApplied"), "409": (kind.conflict, "Error")}
    responses: dict[str, Any] = {}
    for code in ("400", "401", "403", "200", "404", "409", "503"):
        if code in _REFS:
            responses[code] = {"$ref": f"#/components/responses/{_REFS[code]}"}
        else:
            text, schema = answers[code]
            responses[code] = {"description": text, "content": {"application/json": {"schema": _ref(schema)}}}
    found: dict[str, Any] = {"tags": ["corrections"], "operationId": operation_id(kind), "summary": kind.operation}
    if kind.details:
        found["description"] = kind.details
    found["security"] = [{"bearerAuth": ["edit"]}, {"sessionCookie": [], "csrfHeader": []}]
    if kind.scope == "story":
        found["parameters"] = [story_parameter(kind.story)]
    found["requestBody"] = {
        "required": True,
        "content": {"application/json": {"schema": _ref(request_name(kind)), "example": example}},
    }
    found["responses"] = responses
    found["x-required-scope"] = "edit"
    return found


def _ref(schema: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{schema}"}


def _numbered(fields: tuple[RequestField, ...]) -> list[tuple[RequestField, int]]:
    """Each field with how many of its sort came before it (the second page gets the second example id)."""
    return [(f, sum(1 for g in fields[:i] if g.what == f.what)) for i, f in enumerate(fields)]


def story_parameter(description: str) -> dict[str, Any]:
    """The ``cluster_id`` path parameter of a kind made on a story."""
    grammar = f"{_GRAMMAR} nor `/compare` at the end; a page id has at most {ids.MAX_ID_BYTES} UTF-8 bytes, a story "
    grammar += f"name (a page id and a suffix) at most {ids.MAX_NAME_BYTES}."
    return {
        "name": "cluster_id",
        "in": "path",
        "required": True,
        "description": f"{description} Ids follow one grammar (newsfold.plugin.ids): {grammar}",
        "schema": {"type": "string", "minLength": 1, "maxLength": ids.MAX_NAME_BYTES, "pattern": id_pattern()},
    }


def request(kind: CorrectionKind) -> dict[str, Any]:
    """A kind's request schema: its fields (an id of the grammar, or a boolean flag) and ``note``; no other."""
    properties = {f.name: _field(f) for f in kind.fields}
    properties["note"] = {
        "type": ["string", "null"],
        "maxLength": MAX_NOTE_CHARS,
        "pattern": rf"^{_SPACE}[^\u0000-\u0008\u000b-\u001f\u007f]*{_SPACE}$",
        "description": f"Why (at most {MAX_NOTE_CHARS:,} characters; tab and line feed, no other control character).",
    }
    required = [f.name for f in kind.fields if f.what != "flag"]
    return {"type": "object", "required": required, "properties": properties, "additionalProperties": False}


def _field(field: RequestField) -> dict[str, Any]:
    if field.what == "flag":
        return {"type": "boolean", "description": field.description}
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_ID_CHARS,
        "pattern": id_pattern(stripped=True),
        "description": f"A page id or story name, of the id grammar of `newsfold.plugin.ids`: {_GRAMMAR}, not ending "
        f"with {_listed()}.",
    }
