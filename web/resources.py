"""The app's resources on one extension object: settings, Elasticsearch, Celery, Redis, jobs and login state.

``init_app`` puts a :class:`WebResources` on ``app.extensions["newsfold"]``;
views reach it through the accessors below, never through module globals, so
two apps (two tests, say) never share a client. The Elasticsearch and Celery
clients are built on first use (a missing URL is a 503 then, not an error at
start); the Redis client connects on first use. :meth:`WebResources.close`
closes them all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TypeVar, cast
from urllib.parse import urlsplit

from celery import Celery
from elasticsearch import Elasticsearch
from flask import Flask, current_app

from newsfold.plugin.client import build_client
from newsfold.plugin.settings import Settings
from newsfold.state import build_redis
from newsfold.state.jobs import JobStore
from newsfold.web.affixes import AffixCache
from newsfold.web.config import WebSettings
from newsfold.web.logins import LoginLimiter, SessionStore, TokenStore
from newsfold.web.queue import make_celery

EXTENSION_KEY = "newsfold"
#: connect and read timeout of the web's Redis client: a login, an admin page or a job page answers
#: (from the process's own counters, or with a 503) instead of hanging on a Redis that is down
REDIS_TIMEOUT = 1.0
REDIS_SCHEMES = ("redis", "rediss", "unix")
T = TypeVar("T")


class ServiceUnavailable(Exception):
    """A backing service is not configured; answered with HTTP 503 like an unreachable one."""


class WebResources:
    """Everything an app holds beyond Flask's own: its settings and the clients of the services it uses.

    Args:
        config: the app's config; ``ES_TIMEOUT`` and ``ES_MAX_RETRIES`` are read when the client is built.
        settings: the newsfold settings.
        web: the web's own settings.
    """

    def __init__(self, config: Mapping, settings: Settings, web: WebSettings) -> None:
        self.config = config
        self.settings = settings
        self.web = web
        self._lock = threading.Lock()
        self._clients: dict[str, Elasticsearch | Celery] = {}
        url = settings.redis_url
        # a client makes no connection until it is used
        self.redis = build_redis(url, timeout=REDIS_TIMEOUT) if url and urlsplit(url).scheme in REDIS_SCHEMES else None
        self._jobs = JobStore(self.redis) if self.redis is not None else None
        namespace = f"newsfold:{settings.index}"
        self.login_limiter = LoginLimiter(
            max_failures=web.login_max_failures,
            window_seconds=web.login_lockout_seconds,
            namespace=namespace,
            redis=self.redis,
        )
        self.sessions = SessionStore(namespace=namespace, redis=self.redis)
        self.tokens = TokenStore(namespace=namespace, redis=self.redis)

        self.affixes = AffixCache()  # the sites' learned title affixes (web.affixes)

    def _client(self, name: str, configured: str | None, missing: str, build: Callable[[str], T]) -> T:
        """The client ``name``, built by ``build(configured)`` on first use.

        Raises:
            ServiceUnavailable: ``configured`` (its URL) is empty; ``missing`` says what to set.
        """
        client = self._clients.get(name)
        if client is None:
            if not configured:
                raise ServiceUnavailable(missing)
            with self._lock:
                client = self._clients.get(name)
                if client is None:
                    client = self._clients[name] = build(configured)
        return cast(T, client)  # the client kept under ``name`` is the one ``build`` made

    @property
    def es(self) -> Elasticsearch:
        """The Elasticsearch client, failing fast (see :func:`web_client_settings`)."""

        def build(_url: str) -> Elasticsearch:
            timeout, retries = float(self.config["ES_TIMEOUT"]), int(self.config["ES_MAX_RETRIES"])
            fast = web_client_settings(self.settings, timeout=timeout, max_retries=retries)
            return build_client(fast, retry_on_timeout=False)

        missing = "Search is not available: no Elasticsearch URL is configured (set ELASTICSEARCH_URL)."
        return self._client("es", self.settings.elasticsearch_url, missing, build)

    @property
    def celery(self) -> Celery:
        """The Celery client; it only sends tasks and reads their states."""
        missing = "The task queue is not available: no Redis URL is configured (set REDIS_URL)."
        return self._client("celery", self.settings.redis_url, missing, make_celery)

    @property
    def jobs(self) -> JobStore:
        """The job store on the app's Redis.

        Raises:
            ServiceUnavailable: no Redis URL is configured.
        """
        if self._jobs is None:
            raise ServiceUnavailable("Jobs are not available: no Redis URL is configured (set REDIS_URL).")
        return self._jobs

    def close(self) -> None:
        """Close every client built so far (they are built again if used afterwards)."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
        if self.redis is not None:
            self.redis.close()


def init_app(app: Flask, settings: Settings, web: WebSettings) -> WebResources:
    """Put a :class:`WebResources` on ``app.extensions["newsfold"]`` and return it."""
    resources = WebResources(app.config, settings, web)
    app.extensions[EXTENSION_KEY] = resources
    return resources


def get_resources(app: Flask | None = None) -> WebResources:
    """The resources of ``app``, by default of the current app."""
    return (app or current_app).extensions[EXTENSION_KEY]


def get_settings() -> Settings:
    """The newsfold settings of the current app."""
    return get_resources().settings


def get_web_settings() -> WebSettings:
    """The web settings (login, cookies, tokens, page size) of the current app."""
    return get_resources().web


def get_es() -> Elasticsearch:
    """The current app's Elasticsearch client."""
    return get_resources().es


def get_celery() -> Celery:
    """The current app's Celery client."""
    return get_resources().celery


def get_job_store() -> JobStore:
    """The current app's job store."""
    return get_resources().jobs


def get_limiter() -> LoginLimiter:
    """The current app's failed-login limiter."""
    return get_resources().login_limiter


def get_sessions() -> SessionStore:
    """The current app's open admin sessions."""
    return get_resources().sessions


def get_tokens() -> TokenStore:
    """The current app's API token revocations and last uses."""
    return get_resources().tokens


def web_client_settings(settings: Settings, *, timeout: float, max_retries: int) -> Settings:
    """The settings for the web's Elasticsearch client: short timeout, few retries.

    A page view should fail fast with a 503 when Elasticsearch is down rather
    than wait through the long timeouts the indexer uses.
    """
    return settings.replace(
        es_timeout=min(settings.es_timeout, timeout), es_max_retries=min(settings.es_max_retries, max_retries)
    )
