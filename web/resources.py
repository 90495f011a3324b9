"""Per-app resources: the newsfold and web settings, an Elasticsearch client and a Celery client.

Views reach them only through the accessors below. The clients are built on
first use and kept on the Flask app (``app.extensions``), never in module
globals, so two apps (two tests, say) never share a client.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from celery import Celery
from elasticsearch import Elasticsearch
from flask import Flask, current_app

from newsfold.plugin.client import build_client
from newsfold.plugin.settings import Settings
from newsfold.web.config import WebSettings
from newsfold.web.tasks import make_celery

SETTINGS_KEY = "newsfold"
WEB_SETTINGS_KEY = "newsfold.web"
RESOURCES_KEY = "newsfold.resources"


class ServiceUnavailable(Exception):
    """A backing service is not configured; answered with HTTP 503 like an unreachable one."""


@dataclass
class _Resources:
    lock: threading.Lock = field(default_factory=threading.Lock)
    es: Elasticsearch | None = None
    celery: Celery | None = None


def init_app(app: Flask, settings: Settings, web: WebSettings) -> None:
    """Attach the settings (``app.extensions["newsfold"]``, ``["newsfold.web"]``) and an empty resource holder."""
    app.extensions[SETTINGS_KEY] = settings
    app.extensions[WEB_SETTINGS_KEY] = web
    app.extensions[RESOURCES_KEY] = _Resources()


def get_settings() -> Settings:
    """The newsfold settings of the current app."""
    return current_app.extensions[SETTINGS_KEY]


def get_web_settings() -> WebSettings:
    """The web settings (login, cookies, tokens, page size) of the current app."""
    return current_app.extensions[WEB_SETTINGS_KEY]


def web_client_settings(settings: Settings, *, timeout: float, max_retries: int) -> Settings:
    """The settings for the web's Elasticsearch client: short timeout, few retries.

    A page view should fail fast with a 503 when Elasticsearch is down rather
    than wait through the long timeouts the indexer uses.
    """
    return settings.replace(
        es_timeout=min(settings.es_timeout, timeout), es_max_retries=min(settings.es_max_retries, max_retries)
    )


def get_es() -> Elasticsearch:
    """The current app's Elasticsearch client (built on first use)."""
    res: _Resources = current_app.extensions[RESOURCES_KEY]
    if res.es is not None:
        return res.es
    settings = get_settings()
    if not settings.elasticsearch_url:
        raise ServiceUnavailable("Search is not available: no Elasticsearch URL is configured (set ELASTICSEARCH_URL).")
    with res.lock:
        if res.es is None:
            web_settings = web_client_settings(
                settings,
                timeout=float(current_app.config["ES_TIMEOUT"]),
                max_retries=int(current_app.config["ES_MAX_RETRIES"]),
            )
            res.es = build_client(web_settings, retry_on_timeout=False)
        return res.es


def get_celery() -> Celery:
    """The current app's Celery client (built on first use); it only sends tasks and reads their states."""
    res: _Resources = current_app.extensions[RESOURCES_KEY]
    if res.celery is not None:
        return res.celery
    settings = get_settings()
    if not settings.redis_url:
        raise ServiceUnavailable("The task queue is not available: no Redis URL is configured (set REDIS_URL).")
    with res.lock:
        if res.celery is None:
            res.celery = make_celery(settings.redis_url)
        return res.celery


def close_resources(app: Flask) -> None:
    """Close the clients an app has built (for tests and clean shutdowns)."""
    res: _Resources = app.extensions[RESOURCES_KEY]
    with res.lock:
        if res.es is not None:
            res.es.close()
            res.es = None
        if res.celery is not None:
            res.celery.close()
            res.celery = None
