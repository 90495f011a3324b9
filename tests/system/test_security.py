"""newsfold on a real node with Elasticsearch's security on, as a user holding only docs/compatibility.md's privileges.

The node (security on, HTTP without TLS on loopback, as docker-compose.yml
runs it) is started for this module with the role the docs list and a user
holding it (file realm); the superuser ``elastic`` only puts the host's
templates in place, as a host's administrator would. Everything else runs as
that user:
the server check, creating the index, ingest, folded search, the web API, a
correction and a host index. A wrong password is a readable error.
"""

from __future__ import annotations

import secrets

import pytest

from newsfold.errors import check_servers
from newsfold.plugin import Page, TextMeta, component_template, fold_search, ingest, sign_page, sign_text, story_count
from newsfold.plugin.client import build_client
from newsfold.plugin.edit.corrections import merge_clusters
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.settings import Settings
from tests.pages import page, story

pytestmark = [pytest.mark.realnode, pytest.mark.slow]

INDEX = "secure-news"
HOST = "secure-host"

#: the privileges docs/compatibility.md lists, as a role
ROLE = {
    "cluster": ["monitor"],
    "indices": [
        {
            "names": [f"{INDEX}*", HOST],
            "privileges": ["create_index", "manage", "read", "write", "view_index_metadata"],
        },
        {"names": [f"{HOST}-founding"], "privileges": ["create_index", "read", "write", "view_index_metadata"]},
    ],
}


@pytest.fixture(scope="module")
def secured(es_node_factory, redis_url):
    """(the node, settings of the limited user)."""
    password = secrets.token_urlsafe(16)
    node = es_node_factory(security=True, roles={"newsfold": ROLE}, users={"newsfold": (password, ["newsfold"])})
    admin = build_client(Settings(elasticsearch_url=node.url, elasticsearch_user="elastic",
                                  elasticsearch_password=node.password))  # fmt: skip
    admin.cluster.put_component_template(name="secure-newsfold", **component_template(Settings()))
    admin.indices.put_index_template(
        name=HOST, index_patterns=[HOST], composed_of=["secure-newsfold"],
        template={"mappings": {"properties": {"headline": {"type": "text"}, "section": {"type": "keyword"}}}},
    )  # fmt: skip
    admin.close()
    settings = Settings(elasticsearch_url=node.url, elasticsearch_user="newsfold", elasticsearch_password=password,
                        index=INDEX, redis_url=redis_url, refresh_interval="100ms")  # fmt: skip
    yield node, settings


def test_the_limited_user_runs_ingest_search_and_corrections(secured, web_app):
    from newsfold.web.config import WebSettings

    node, settings = secured
    check_servers(settings)
    client = build_client(settings)
    try:
        ensure_index(client, settings)
        paras, other = story(820), story(821)
        pages = [Page(html=page(f"Storm copy {n}", paras, site=f"s{n}.test"), id=f"a{n}", url=f"https://s{n}.test/a")
                 for n in range(3)]  # fmt: skip
        pages.append(Page(html=page("Another storm story", other, site="s9.test"), id="b0", url="https://s9.test/b"))
        outcomes = {}
        for p in pages:
            outcomes |= {o.page_id: o for o in ingest([sign_page(p, settings)], client=client, settings=settings)}
        assert outcomes["a1"].cluster_id == outcomes["a0"].cluster_id == outcomes["a2"].cluster_id
        res = fold_search(client, {"query": {"match": {"title": "storm"}}, "size": 10}, index=settings.index)
        assert story_count(res) == 2
        app = web_app(settings, WebSettings(secret_key="s" * 40))
        api = app.test_client().get("/api/search?q=storm")
        assert api.status_code == 200 and api.get_json()["stories"] == 2
        merge_clusters(outcomes["a0"].cluster_id, outcomes["b0"].cluster_id, user="tests", client=client,
                       settings=settings)  # fmt: skip
        client.indices.refresh(index=settings.index)
        res = fold_search(client, {"query": {"match": {"title": "storm"}}, "size": 10}, index=settings.index)
        assert story_count(res) == 1
    finally:
        drop_index(client, settings)
        client.close()


def test_the_limited_user_folds_a_host_index(secured):
    node, settings = secured
    client = build_client(settings)
    try:
        client.indices.create(index=HOST)
        text = "\n\n".join(story(830))
        for doc_id in ("h1", "h2"):
            client.index(index=HOST, id=doc_id, document={"headline": "Wire", "section": doc_id})
        for doc_id in ("h1", "h2"):
            ingest(
                [sign_text(text, TextMeta(page_id=doc_id), settings=settings)],
                client=client,
                settings=settings,
                index=HOST,
            )
        docs = {d["_id"]: d["_source"] for d in client.mget(index=HOST, ids=["h1", "h2"])["docs"]}
        assert docs["h1"]["newsfold"]["cluster_id"] == docs["h2"]["newsfold"]["cluster_id"]
        assert docs["h2"]["section"] == "h2"
    finally:
        client.options(ignore_status=404).indices.delete(index=HOST)  # its founding index: no delete privilege
        client.close()


def test_a_wrong_password_is_a_readable_error(secured):
    node, settings = secured
    with pytest.raises(RuntimeError, match="401|authentication|credentials"):
        check_servers(settings.replace(elasticsearch_password="wrong"))


def test_nobody_gets_in_without_credentials(secured):
    node, settings = secured
    anonymous = build_client(Settings(elasticsearch_url=node.url))
    try:
        from elasticsearch import AuthenticationException

        with pytest.raises(AuthenticationException):
            anonymous.search(index=INDEX)
    finally:
        anonymous.close()
