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
from typing import ParamSpec, TypeVar

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
