"""Error pages: bad input answers 400, unreachable services 503, unknown things 404, as HTML or, under /api, JSON.

Bad input is mapped once, here: every check of a request's arguments (``web.validation``, the search and
list parameters) and every refusal of the core raises :class:`~newsfold.plugin.errors.InputError`, and a view
catches it only when it answers with something better than the error page (its form, refilled).

No traceback is ever shown: the message says which service could not be
reached and where (without credentials).
"""

from __future__ import annotations

import elastic_transport
import elasticsearch
import kombu.exceptions
import redis.exceptions
from flask import Flask, current_app, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from newsfold.plugin.errors import InputError, ServerError
from newsfold.web.formatting import redact_url
from newsfold.web.resources import ServiceUnavailable, get_settings

#: errors meaning Elasticsearch could not be reached or did not answer properly
ES_ERRORS: tuple[type[Exception], ...] = (
    elasticsearch.ConnectionError,
    elasticsearch.TransportError,
    elastic_transport.ConnectionError,
    elasticsearch.ApiError,
    ServerError,  # the plugin's public calls hand Elasticsearch's refusals on as this
)
#: errors meaning Redis (the broker and result backend) could not be reached
QUEUE_ERRORS: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    kombu.exceptions.OperationalError,
)

RETRY_AFTER_SECONDS = 30


def wants_json() -> bool:
    """Whether the current request is an API request (answered in JSON)."""
    return request.path == "/api" or request.path.startswith("/api/")


def describe_es_error(exc: Exception) -> str:
    """A readable sentence about an Elasticsearch failure."""
    if isinstance(exc, ServerError) and isinstance(exc.__cause__, elasticsearch.ApiError):
        exc = exc.__cause__  # a refusal the plugin handed on: say what Elasticsearch said
    settings = get_settings()
    where = redact_url(settings.elasticsearch_url)
    prefix = "Search is temporarily unavailable"
    if isinstance(exc, elastic_transport.ConnectionTimeout):
        return f"{prefix}: Elasticsearch at {where} did not answer in time."
    if isinstance(exc, elastic_transport.ConnectionError):
        return f"{prefix}: cannot reach Elasticsearch at {where}."
    if isinstance(exc, elasticsearch.NotFoundError) and exc.error == "index_not_found_exception":
        return (
            f"{prefix}: Elasticsearch at {where} has no index named {settings.index!r} "
            "(nothing has been ingested yet, or NEWSFOLD_INDEX names another index)."
        )
    if isinstance(exc, elasticsearch.ApiError):
        return f"{prefix}: Elasticsearch at {where} answered with an error ({exc.meta.status} {exc.error})."
    return f"{prefix}: Elasticsearch at {where} failed ({type(exc).__name__})."


def describe_queue_error(exc: Exception) -> str:
    """A readable sentence about a Redis failure."""
    return f"The task queue is temporarily unavailable: cannot reach Redis at {redact_url(get_settings().redis_url)}."


def unavailable(message: str, exc: Exception, **extra):
    """The 503 response for ``message``; ``extra`` fields are added to a JSON answer.

    The exception is logged in one line, without traceback.
    """
    current_app.logger.warning("%s (%s: %s)", message, type(exc).__name__, exc)
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if wants_json():
        return jsonify(error=message, **extra), 503, headers
    page = render_template("error.html", code=503, title="Temporarily unavailable", message=message)
    return page, 503, headers


def _es_error(exc: Exception):
    return unavailable(describe_es_error(exc), exc)


def _queue_error(exc: Exception):
    return unavailable(describe_queue_error(exc), exc)


def _not_configured(exc: ServiceUnavailable):
    return unavailable(str(exc), exc)


def _http_error(exc: HTTPException):
    code = exc.code or 500
    if code >= 500:
        message = "Something went wrong on our side. Please try again later."
    else:
        message = exc.description or exc.name
    # a 405 names the methods the address takes (the Allow header), whatever the body
    headers = {k: v for k, v in exc.get_headers() if k.lower() == "allow"}
    if wants_json():
        return jsonify(error=message), code, headers
    return render_template("error.html", code=code, title=exc.name, message=message), code, headers


def _input_error(exc: InputError):
    """A 400 naming what is wrong with the request (the message of the check that refused it)."""
    message = str(exc)
    if wants_json():
        return jsonify(error=message), 400
    return render_template("error.html", code=400, title="Bad Request", message=message), 400


def _csrf_error(exc: CSRFError):
    current_app.logger.info("CSRF check failed on %s %s: %s", request.method, request.path, exc.description)
    if wants_json():
        message = (
            f"CSRF check failed ({exc.description}) A request with the session cookie must send the X-CSRFToken "
            "header (the csrf-token meta tag of any page while logged in); scripts should use an API token instead."
        )
        return jsonify(error=message), 400
    message = "This form has expired or was not sent from this site. Go back, reload the page and try again."
    if current_app.config.get("SESSION_COOKIE_SECURE") and not request.is_secure:
        # the browser never sends a Secure cookie back over plain http, so every form would fail
        message += (
            " This site is served over plain http while the session cookie is set for HTTPS only:"
            " serve it over HTTPS, or set NEWSFOLD_COOKIE_SECURE=0."
        )
    return render_template("error.html", code=400, title="Form expired", message=message), 400


def register(app: Flask) -> None:
    """Install the error handlers on ``app``."""
    for cls in ES_ERRORS:
        app.register_error_handler(cls, _es_error)
    for cls in QUEUE_ERRORS:
        app.register_error_handler(cls, _queue_error)
    app.register_error_handler(ServiceUnavailable, _not_configured)
    app.register_error_handler(InputError, _input_error)
    app.register_error_handler(CSRFError, _csrf_error)
    app.register_error_handler(HTTPException, _http_error)
