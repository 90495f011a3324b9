"""Fixtures: real servers only.

Elasticsearch (tests/backends.py): with ``--backend elasticsearch`` a real
node the session starts (or the cluster at ``ELASTICSEARCH_URL``), else the
osmem stand-in started once per session. Redis: ``REDIS_URL`` when set, else an
embedded real Redis. Each test gets its own index alias, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid

import pytest

from newsfold.embedded import EmbeddedElasticsearch, EmbeddedRedis
from newsfold.plugin.client import build_client
from newsfold.plugin.index import drop_index, ensure_index
from newsfold.plugin.settings import Settings
from tests.backends import BACKEND, REAL_ES, TEST_REFRESH


def pytest_report_header(config):
    return f"newsfold test backend: {BACKEND}"


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason=f"needs a real Elasticsearch (this run's backend is {BACKEND})")
    for item in items:
        if "realnode" in item.keywords and not REAL_ES:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def es_node():
    """The real node the session started (None on the stand-in or an external ``ELASTICSEARCH_URL``)."""
    if not REAL_ES or os.environ.get("ELASTICSEARCH_URL"):
        yield None
        return
    from newsfold.esnode import ElasticsearchNode

    node = ElasticsearchNode(heap="1g", announce=lambda m: None).start()
    yield node
    node.close()


@pytest.fixture(scope="session")
def es_url(es_node):
    if REAL_ES:
        yield es_node.url if es_node else os.environ["ELASTICSEARCH_URL"]
        return
    server = EmbeddedElasticsearch()
    yield server.url
    server.close()


@pytest.fixture(scope="session")
def redis_url():
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    server = EmbeddedRedis()
    yield server.url
    server.close()


@pytest.fixture
def settings(es_url):
    """Settings on the test servers with an index of the test's own."""
    base = Settings.from_env()
    return base.replace(
        elasticsearch_url=es_url, index=f"test-{uuid.uuid4().hex[:12]}", refresh_interval=TEST_REFRESH
    )


@pytest.fixture
def es(settings):
    """A client with the test's index created; the index is deleted afterwards."""
    client = build_client(settings)
    ensure_index(client, settings)
    yield client
    drop_index(client, settings)
    client.close()


@pytest.fixture
def web_app():
    """Build web apps: ``web_app(settings, web=None, **flask_config)``; every app's clients are closed afterwards."""
    from newsfold.web import create_app
    from newsfold.web.resources import close_resources

    apps = []

    def make(settings, web=None, **config):
        app = create_app({"TESTING": True, **config}, settings=settings, web=web)
        apps.append(app)
        return app

    yield make
    for app in apps:
        close_resources(app)
