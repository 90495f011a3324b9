"""One hierarchy for every error newsfold raises on purpose: ``except newsfold.plugin.NewsfoldError`` catches them all.

- :class:`InputError` (a ``ValueError``): your input. An argument, a page, a
  query or a setting is not acceptable; the message names it.
  :class:`InputTypeError` (also a ``TypeError``) when it is of the wrong type.
- :class:`IndexMismatchError` (a ``RuntimeError``): your index. It lacks
  newsfold's fields or was built with other signature settings; the message
  says what to do (add the component template, ``ensure_fold_fields``,
  reindex).
- :class:`ServerError` (a ``RuntimeError``): the server. Elasticsearch
  refused or failed a request newsfold needed; the message carries its reason.

Connection errors and timeouts are not wrapped: they stay the client's own
(``elastic_transport.ConnectionError``, ``ConnectionTimeout``), so that callers
who retry outages keep catching what they catch today.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


class NewsfoldError(Exception):
    """Every error newsfold raises on purpose."""


class InputError(NewsfoldError, ValueError):
    """An argument, page, query or setting is not acceptable; the message names it."""


class InputTypeError(InputError, TypeError):
    """An argument of the wrong type; the message names it and the type expected."""


class IndexMismatchError(NewsfoldError, RuntimeError):
    """The index does not fit: no fold fields, another fold layout, other signature settings."""


class ServerError(NewsfoldError, RuntimeError):
    """Elasticsearch refused or failed a request newsfold needed (its reason is in the message).

    ``status`` and ``error`` are Elasticsearch's HTTP status and error type when it answered one
    (``404``, ``"index_not_found_exception"``); the client's own exception is the ``__cause__``.
    """

    status: int | None = None
    error: str | None = None


def server_error(exc: Exception, what: str) -> ServerError:
    """A :class:`ServerError` for Elasticsearch's answer ``exc`` (an ``ApiError``), keeping its status and type."""
    status = getattr(getattr(exc, "meta", None), "status", None)
    error = getattr(exc, "error", None) or type(exc).__name__
    out = ServerError(f"{what}: Elasticsearch answered {status} {error}: {_reason(exc)}")
    out.status, out.error = status, str(error)
    return out


#: refusals of one item of an answer (a document of an ``mget``, a search of an ``msearch``, an action of a
#: ``bulk``) that pass once the cluster settles: a shard not started or moving, a node lost, no master yet
UNAVAILABLE_TYPES = (
    "no_shard_available_action_exception", "illegal_index_shard_state_exception", "unavailable_shards_exception",
    "primary_missing_action_exception", "node_not_connected_exception", "node_disconnected_exception",
    "node_closed_exception", "connect_transport_exception", "send_request_transport_exception",
    "receive_timeout_transport_exception", "no_node_available_exception", "master_not_discovered_exception",
    "SERVICE_UNAVAILABLE/",  # a cluster block that passes: no master, state not recovered
)  # fmt: skip
#: ... and those that pass once the cluster is less busy
BUSY_TYPES = ("es_rejected_execution_exception", "circuit_breaking_exception", "TOO_MANY_REQUESTS/")


def item_status(item: dict[str, Any]) -> int | None:
    """The status of one refused item of an answer: 429 or 503 when waiting may help, else its own (or None).

    A document of an ``mget`` carries no status of its own, and a search of an
    ``msearch`` may carry 500 for a node lost mid-search: the error's type (or
    a cluster block's class) says whether it passes (``UNAVAILABLE_TYPES``,
    ``BUSY_TYPES``). A block set on purpose (``FORBIDDEN/8/index write``)
    keeps its own status.
    """
    text = str(item.get("error"))
    if any(kind in text for kind in BUSY_TYPES):
        return 429
    if any(kind in text for kind in UNAVAILABLE_TYPES):
        return 503
    status = item.get("status")
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def item_refusal(message: str, item: dict[str, Any]) -> ServerError:
    """A :class:`ServerError` for one refused item of a 200 answer, with :func:`item_status` and the error type;
    workers retry it when the status is 429 or 503."""
    error = item.get("error")
    out = ServerError(f"{message}: {error}")
    out.status = item_status(item)
    kind = error.get("type") if isinstance(error, dict) else None
    out.error = str(kind) if kind else None
    return out


def _reason(exc: Exception) -> str:
    info = getattr(exc, "info", None)
    err = info.get("error") if isinstance(info, dict) else None
    if isinstance(err, dict):
        return str(err.get("reason") or err.get("type") or err)
    return str(err or exc)


def _is_refusal(exc: Exception) -> bool:
    """Whether ``exc`` is an answer of Elasticsearch's (an ``ApiError``), not a connection error or a timeout."""
    if not type(exc).__module__.startswith("elasticsearch"):
        return False
    from elasticsearch import ApiError

    return isinstance(exc, ApiError)


def refusals_as_server_errors(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """Decorate a public function so that Elasticsearch's refusals reach the caller as :class:`ServerError`.

    Connection errors and timeouts pass unchanged (the client's own, as documented).
    """

    def decorate(fn: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(fn)
        def call(*args: P.args, **kwargs: P.kwargs) -> T:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                if isinstance(exc, NewsfoldError) or not _is_refusal(exc):
                    raise
                raise server_error(exc, what) from exc

        return call

    return decorate


def check_type(value: T, types: type | tuple[type, ...], name: str, *, optional: bool = False) -> T:
    """``value`` when it is of ``types`` (or None with ``optional``), else :class:`InputTypeError` naming ``name``."""
    if value is None and optional:
        return value
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in _as_tuple(types)):
        return value
    wanted = " or ".join(t.__name__ for t in _as_tuple(types)) + (" or None" if optional else "")
    raise InputTypeError(f"{name} must be {wanted}, not {type(value).__name__}")


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(value: str) -> str:
    """``value`` with lone surrogates (which no encoder accepts) replaced by U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value
