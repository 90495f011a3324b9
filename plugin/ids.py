"""The grammar of page ids, decided once: an id the door accepts reaches every route, link, correction and delete.

A page id is the text of 1 to :data:`MAX_ID_BYTES` UTF-8 bytes (Elasticsearch's limit on a
document ``_id``: a longer one fails its whole bulk request) that

- holds no control character (C0, DEL or C1: a newline matches no route, NUL and ESC are
  refused by the story pages and the corrections log);
- neither starts nor ends with whitespace (so it is not empty or blank, and no form, delete
  or log that strips its input names another page);
- does not start with ``/`` (a URL path cannot carry it: ``/stories//x`` is not the story ``/x``);
- has no ``/``-separated part that is ``.`` or ``..`` (a browser resolves them in a link, which
  then leads to another address);
- has no part after a ``/`` that is ``versions``, and does not end with ``/compare``, ``/merge``,
  ``/split``, ``/representative`` or ``/not-duplicates`` (the words the web's routes put after a
  story name: ``/stories/<name>/versions/<page>``, ``/admin/clusters/<name>/compare``,
  ``POST /api/clusters/<name>/merge``; ``a/versions/b`` would open as a version of the story
  ``a``, a version of ``a/versions`` as one of ``a``, and ``GET /api/clusters/a/merge`` would
  read a story ``a/merge`` where ``POST`` merges ``a``).

Everything else is accepted: slashes (a folder's relative paths, URLs), ``//``, spaces inside,
``~``, ``%``, ``?``, ``#``, quotes, any script. A story name is a page id with a suffix
(``<page id>~<8 hex>``, ``plugin.fold.founding``), so it is longer but keeps the grammar;
names are read, never written as a document ``_id``.

Every door checks here: the ingest sources (a page's rejection reason ``bad_id``), the JSON API
(400), the public functions of the core (``InputError`` naming the argument).
"""

from __future__ import annotations

import unicodedata

from newsfold.plugin.errors import InputError, InputTypeError

#: Elasticsearch's limit on a document ``_id``, in UTF-8 bytes
MAX_ID_BYTES = 512
#: the longest story name a route accepts: a page id and suffixes added when names collide
MAX_NAME_BYTES = 1024
#: the rejection reason of a page whose id is outside the grammar
BAD_ID = "bad_id"
#: words the web's routes put after a story name (``tests/web/admin/test_id_routes.py`` holds them to the routes)
ROUTE_WORDS = ("versions", "compare", "merge", "split", "representative", "not-duplicates")
#: of those, the words a route puts last (they are refused only as an id's last part)
LAST_ROUTE_WORDS = ("compare", "merge", "split", "representative", "not-duplicates")


def id_problem(value: object, *, max_bytes: int = MAX_ID_BYTES) -> str | None:
    """What is wrong with ``value`` as a page id (a phrase to follow "the id "), or None when it is one."""
    if not isinstance(value, str):
        return f"must be text, not {type(value).__name__}"
    if not value:
        return "is empty"
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return "holds a lone surrogate, which is not text"
    if size > max_bytes:
        return f"has {size:,} bytes; ids have at most {max_bytes:,} (UTF-8)"
    control = next((ch for ch in value if unicodedata.category(ch) == "Cc"), None)
    if control is not None:
        return f"holds the control character U+{ord(control):04X}"
    if value != value.strip():
        return "starts or ends with whitespace" if value.strip() else "is blank"
    if value.startswith("/"):
        return "starts with /"
    parts = value.split("/")
    if any(part in (".", "..") for part in parts):
        return "has a . or .. between slashes (a link would lead elsewhere)"
    inner = [word for word in ROUTE_WORDS if word not in LAST_ROUTE_WORDS]
    if any(part in inner for part in parts[1:]) or (len(parts) > 1 and parts[-1] in LAST_ROUTE_WORDS):
        last = ", ".join(f"/{word}" for word in LAST_ROUTE_WORDS)
        return f"has {'/'.join(inner)} after a slash or ends with {last} (words of the routes)"
    return None


def is_page_id(value: object) -> bool:
    """Whether ``value`` is a page id of the grammar."""
    return id_problem(value) is None


def check_page_id(value: object, name: str) -> str:
    """``value`` when it is a page id of the grammar.

    Raises:
        InputTypeError: ``value`` is not a ``str`` (the message names ``name``).
        InputError: it is outside the grammar (the message names ``name`` and says why).
    """
    if not isinstance(value, str):
        raise InputTypeError(f"{name} must be str, not {type(value).__name__}")
    problem = id_problem(value)
    if problem is not None:
        raise InputError(f"{name} {problem}: {shown(value)}")
    return value


def check_story_name(value: object, name: str) -> str:
    """``value`` when it is a story name (a page id of the grammar, up to :data:`MAX_NAME_BYTES`).

    Raises:
        InputTypeError, InputError: as :func:`check_page_id`.
    """
    if not isinstance(value, str):
        raise InputTypeError(f"{name} must be str, not {type(value).__name__}")
    problem = id_problem(value, max_bytes=MAX_NAME_BYTES)
    if problem is not None:
        raise InputError(f"{name} {problem}: {shown(value)}")
    return value


def shown(value: str, limit: int = 60) -> str:
    """An id as a message may quote it: shortened, escaped (``repr``), never a control character."""
    text = value if len(value) <= limit else value[:limit] + "..."
    return ascii(text.encode("utf-8", "backslashreplace").decode("utf-8"))
