"""Shared constants and helpers of the admin tests: the login, forms with their CSRF token, queued tasks."""

from __future__ import annotations

import base64
import json
import re

import redis
from werkzeug.security import generate_password_hash

from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.batch import ingest
from newsfold.plugin.sign.signing import sign_page
from newsfold.web.auth import token_digest
from newsfold.web.config import WebSettings

PASSWORD = "correct horse battery staple"


PASSWORD_HASH = generate_password_hash(PASSWORD)


TOKEN = "test-admin-token-0123456789abcdef"


BEARER = {"Authorization": f"Bearer {TOKEN}"}


HOSTILE = "<script>alert(1)</script>"


MARKER = "Brightwater orchestra rehearsed beside the lighthouse while volunteers painted every bench"


ADMIN_WEB = WebSettings(
    secret_key="test-secret-" + "k" * 24,
    admin_password_hash=PASSWORD_HASH,
    cookie_secure=False,
    api_token_hashes=f"robot:{token_digest(TOKEN)}",
)


def ingest_pages(es, settings, pages):
    return {o.page_id: o for o in ingest([sign_page(p, settings) for p in pages], client=es, settings=settings)}


def html_of(res) -> str:
    return res.get_data(as_text=True)


def csrf_of(res) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html_of(res))
    assert found, "the page has no CSRF field"
    return found.group(1)


def post_form(client, page_url: str, action: str, data: dict):
    """Post a form of ``page_url`` with the CSRF token shown there; returns the (not followed) response."""
    token = csrf_of(client.get(page_url))
    return client.post(action, data={**data, "csrf_token": token})


def cluster_rows(html: str) -> list[str]:
    return re.findall(r'data-testid="cluster-row" data-cluster-id="([^"]+)"', html)


def queued_tasks(url: str) -> list[dict]:
    client = redis.Redis.from_url(url)
    try:
        messages = [json.loads(m) for m in client.lrange("celery", 0, -1)]
    finally:
        client.close()
    out = []
    for m in messages:
        args, kwargs, _ = json.loads(base64.b64decode(m["body"]))
        out.append({"task": m["headers"]["task"], "args": args, "kwargs": kwargs})
    return out


def cluster_of(es, settings, page_id: str) -> str:
    return es.get(index=settings.index, id=page_id)["_source"]["newsfold"]["cluster_id"]


def search_ids(es, settings, cluster_id: str) -> set[str]:
    hits = es.search(index=settings.index, **lookups.cluster_ids_only(cluster_id))["hits"]["hits"]
    return {h["_id"] for h in hits}
