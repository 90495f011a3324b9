"""Fixtures of the admin tests: an app with a login, a logged-in client, a small clustered corpus, a Redis for jobs."""

from __future__ import annotations

import pytest
import redis

from newsfold.plugin.sign.signed_page import Page
from tests.pages import page, story
from tests.web.admin.helpers import (
    ADMIN_WEB,
    MARKER,
    PASSWORD,
    csrf_of,
    ingest_pages,
)


@pytest.fixture
def admin_settings(settings, redis_url):
    return settings.replace(redis_url=redis_url)


@pytest.fixture
def make_app(web_app):
    return lambda settings, **config: web_app(settings, ADMIN_WEB, **config)


@pytest.fixture
def corpus(es, settings):
    """Cluster A: three copies on three sites, the third edited; cluster B: two copies, one titled with markup.

    Then a lone page. Ingested in that order, batch by batch, so A was first seen before B.
    """
    text = story(301, 20)
    edited = list(text)
    edited[3] = MARKER + ". " + edited[3].split(". ", 1)[0] + "."
    storm = story(302, 16)
    # one page per batch: a page written in the same batch as its first copy would be "matched" too
    out = ingest_pages(
        es, settings, [Page(html=page("Zephyrton council approves budget", text), id="a1", site="one.test")]
    )
    out |= ingest_pages(es, settings, [Page(html=page("Zephyrton budget passes", text), id="a2", site="two.test")])
    third = Page(html=page("Zephyrton budget approved", edited, site="three.test"), id="a3", site="three.test")
    out |= ingest_pages(es, settings, [third])
    hostile = page("Quillbrook &lt;script&gt;alert(1)&lt;/script&gt; storm", storm, site="four.test")
    out |= ingest_pages(es, settings, [Page(html=hostile, id="b1", site="four.test")])
    out |= ingest_pages(es, settings, [Page(html=page("Harbour storm warning", storm), id="b2", site="five.test")])
    out |= ingest_pages(es, settings, [Page(html=page("A lone story", story(303)), id="lone", site="six.test")])
    a, b = out["a1"].cluster_id, out["b1"].cluster_id
    assert out["a2"].cluster_id == a and out["a3"].cluster_id == a, "the three copies must form one cluster"
    assert out["b2"].cluster_id == b and a != b and out["lone"].cluster_id not in (a, b)
    return {"a": a, "b": b, "lone": out["lone"].cluster_id}


@pytest.fixture
def client(make_app, admin_settings, corpus):
    """A test client logged in as the admin through the login form."""
    client = make_app(admin_settings).test_client()
    form = client.get("/login")
    res = client.post("/login", data={"username": "admin", "password": PASSWORD, "csrf_token": csrf_of(form)})
    assert res.status_code == 303
    return client


@pytest.fixture
def jobs_redis_url(redis_url):
    """A Redis database of its own: queued task messages land there and no worker of another test takes them."""
    base = redis_url.rsplit("/", 1)[0]
    url = f"{base}/13"
    client = redis.Redis.from_url(url)
    yield url
    client.delete("celery")
    client.close()
