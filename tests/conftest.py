"""Fixtures: real servers only.

Elasticsearch (tests/backends.py): with ``--backend elasticsearch`` a real
node the session starts (or the cluster at ``ELASTICSEARCH_URL``), else the
osmem stand-in started once per session. Redis: ``REDIS_URL`` when set, else an
embedded real Redis. Each test gets its own index alias, dropped afterwards.
"""

from __future__ import annotations

import os
import signal
import uuid

import pytest

from newsfold.embedded import EmbeddedElasticsearch, EmbeddedRedis
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.settings import Settings
from tests.backends import (
    BACKEND,
    CLUSTER,
    REAL_ES,
    REPLICAS,
    SERVER_TESTS_ONLY,
    SHARDS,
    TEST_REFRESH,
    reaches_a_server,
)


def pytest_report_header(config):
    return f"newsfold test backend: {BACKEND}"


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason=f"needs a real Elasticsearch (this run's backend is {BACKEND})")
    for item in items:
        if "realnode" in item.keywords and not REAL_ES:
            item.add_marker(skip)
    if SERVER_TESTS_ONLY:  # a server stage of `./run test --backend all`: its stand-in stage runs the rest
        once = [item for item in items if not reaches_a_server(item.fixturenames, item.keywords)]
        if once:
            config.hook.pytest_deselected(items=once)
            items[:] = [item for item in items if reaches_a_server(item.fixturenames, item.keywords)]


class Server:
    """The session's Elasticsearch: its URL, and its process to pause (fault tests); ``pid`` None: not ours."""

    def __init__(self, url: str, pid: int | None, cluster=None) -> None:
        self.url, self._pid = url, pid
        self.cluster = cluster  # the LocalCluster of the cluster backend (kill, pause, restart a node by name)

    @property
    def pid(self) -> int | None:
        """The server JVM; on a cluster, that of the node the clients talk to first, as it runs now (a fault
        test may have killed and restarted it)."""
        return self.cluster.node("newsfold-1").pid if self.cluster is not None else self._pid

    def pause(self) -> None:
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)


@pytest.fixture(scope="session")
def es_server():
    """The real node the session starts, the stand-in, or the cluster at ``ELASTICSEARCH_URL`` (tests/backends.py)."""
    if CLUSTER:
        from newsfold.escluster import LocalCluster

        cluster = LocalCluster(nodes=3, announce=lambda m: None).start()
        first = cluster.node("newsfold-1")
        yield Server(cluster.url, first.pid, cluster)  # pid: the node the clients talk to first
        cluster.close()
    elif REAL_ES and os.environ.get("ELASTICSEARCH_URL"):
        yield Server(os.environ["ELASTICSEARCH_URL"], None)
    elif REAL_ES:
        from newsfold.esnode import ElasticsearchNode

        node = ElasticsearchNode(heap="1g", announce=lambda m: None).start()
        yield Server(node.url, node.pid)  # the server JVM, not its launcher
        node.close()
    else:
        standin = EmbeddedElasticsearch()
        yield Server(standin.url, standin.server.pid)
        standin.close()


@pytest.fixture(scope="module")
def es_node_factory():
    """Start extra real nodes for one module (``es_node_factory(security=True)``); all stopped afterwards."""
    from newsfold.esnode import ElasticsearchNode

    nodes = []

    def start(**options):
        node = ElasticsearchNode(heap="512m", announce=lambda m: None, **options)
        nodes.append(node)
        return node.start()

    yield start
    for node in nodes:
        node.close()


@pytest.fixture(scope="session")
def es_url(es_server):
    return es_server.url


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
        elasticsearch_url=es_url, index=f"test-{uuid.uuid4().hex[:12]}", refresh_interval=TEST_REFRESH,
        shards=SHARDS, replicas=REPLICAS,
    )  # fmt: skip


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
    from newsfold.web.resources import get_resources

    apps = []

    def make(settings, web=None, **config):
        app = create_app({"TESTING": True, **config}, settings=settings, web=web)
        apps.append(app)
        return app

    yield make
    for app in apps:
        get_resources(app).close()
