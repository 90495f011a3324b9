"""Scoped API tokens: each scope's refusal, the admin's token list and revocation, and who may undo what."""

from __future__ import annotations

import dataclasses
import logging
import re

import pytest

from newsfold.web.auth import new_api_token
from newsfold.web.config import WebSettings, api_tokens
from tests.web.admin.helpers import ADMIN_WEB, PASSWORD, TOKEN, cluster_of, csrf_of, html_of

#: one token per role; ``robot`` (ADMIN_WEB's) is an entry made before scopes
READER, READER_ENTRY = new_api_token("reader", "read")
BOT, BOT_ENTRY = new_api_token("bot", "ingest")
ALICE, ALICE_ENTRY = new_api_token("alice", "read,edit")
BOB, BOB_ENTRY = new_api_token("bob", "edit")
BOSS, BOSS_ENTRY = new_api_token("boss", "edit,admin")
SCOPED_WEB = dataclasses.replace(
    ADMIN_WEB,
    api_token_hashes=",".join([ADMIN_WEB.api_token_hashes, READER_ENTRY, BOT_ENTRY, ALICE_ENTRY, BOB_ENTRY,
                               BOSS_ENTRY]),
)  # fmt: skip


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def app(web_app, admin_settings, corpus):
    return web_app(admin_settings, SCOPED_WEB)


def _refused(res, scope: str) -> None:
    assert res.status_code == 403, res.get_data(as_text=True)
    body = res.get_json()
    assert body["required_scope"] == scope and f"lacks the {scope!r} scope" in body["error"]


def test_each_scope_is_refused_to_a_token_without_it_and_public_reads_need_none(app, corpus):
    api = app.test_client()
    a = corpus["a"]
    _refused(api.post("/api/pages", json={"pages": []}, headers=bearer(READER)), "ingest")
    _refused(api.get("/api/corrections", headers=bearer(BOT)), "read")
    _refused(api.get("/api/jobs", headers=bearer(BOB)), "read")
    _refused(api.post(f"/api/clusters/{a}/split", json={"page_id": "a3"}, headers=bearer(READER)), "edit")
    _refused(api.post("/api/pairs/not-duplicates", json={"page_a": "a1", "page_b": "b1"}, headers=bearer(BOT)), "edit")
    _refused(api.post("/api/corrections/c1/undo", headers=bearer(BOT)), "edit")
    _refused(api.post("/api/jobs/reindex", json={"source": "text"}, headers=bearer(ALICE)), "admin")
    _refused(api.get("/admin/", headers=bearer(ALICE)), "admin")
    body = api.post("/api/pages", json={"pages": []}, headers=bearer(READER)).get_json()
    assert body["token_scopes"] == ["read"]
    # within its scopes a token gets past the check (here to the body's own validation, or the answer)
    assert api.post("/api/pages", json={}, headers=bearer(BOT)).status_code == 400
    assert api.get("/api/corrections", headers=bearer(READER)).status_code == 200
    assert api.get("/api/search?q=budget", headers=bearer(BOT)).status_code == 200
    # a token made before scopes keeps every scope
    assert api.get("/api/corrections", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_an_entry_without_scopes_keeps_them_all_and_is_warned_about(web_app, admin_settings, caplog):
    (legacy,) = api_tokens(ADMIN_WEB.api_token_hashes).values()
    assert legacy.legacy and legacy.scopes == {"read", "ingest", "edit", "admin"}
    with caplog.at_level(logging.WARNING):
        web_app(admin_settings, SCOPED_WEB)
    assert "robot have no scopes" in caplog.text and "deprecated" in caplog.text
    with pytest.raises(ValueError, match="scopes must be some of read, ingest, edit, admin, got 'root'"):
        WebSettings(api_token_hashes=BOT_ENTRY + "+root")


def _login(client) -> None:
    res = client.post(
        "/login", data={"username": "admin", "password": PASSWORD, "csrf_token": csrf_of(client.get("/login"))}
    )
    assert res.status_code == 303


def test_the_admin_lists_tokens_with_scopes_and_last_use_and_revokes_one(app, web_app, admin_settings):
    assert app.test_client().get("/api/search?q=x", headers=bearer(BOT)).status_code == 200
    admin = app.test_client()
    _login(admin)
    page = admin.get("/admin/tokens")
    html = html_of(page)
    assert page.status_code == 200 and 'data-token-name="bot"' in html and BOT not in html
    rows = dict(re.findall(r'data-token-name="([^"]+)">(.*?)</tr>', html, re.S))
    assert set(rows) == {"robot", "reader", "bot", "alice", "bob", "boss"}
    assert "read, edit" in rows["alice"] and "every scope, deprecated" in rows["robot"]
    assert "<time" in rows["bot"] and "not used" in rows["reader"]

    # the revoke form is CSRF-protected
    assert admin.post("/admin/tokens/bot/revoke").status_code == 400
    assert app.test_client().post("/api/pages", json={}, headers=bearer(BOT)).status_code == 400
    res = admin.post("/admin/tokens/bot/revoke", data={"csrf_token": csrf_of(page)})
    assert res.status_code == 303
    after = admin.get("/admin/tokens", follow_redirects=True)
    assert "Token bot is revoked" in html_of(after)
    assert "revoked" in dict(re.findall(r'data-token-name="([^"]+)">(.*?)</tr>', html_of(after), re.S))["bot"]
    # refused at once, by this app and by another process of the same site (the revocation is in Redis)
    for client in (app.test_client(), web_app(admin_settings, SCOPED_WEB).test_client()):
        res = client.post("/api/pages", json={}, headers=bearer(BOT))
        assert res.status_code == 401 and "revoked" in res.get_json()["error"]
    assert app.test_client().get("/api/corrections", headers=bearer(READER)).status_code == 200
    res = admin.post("/admin/tokens/nobody/revoke", data={"csrf_token": csrf_of(page)}, follow_redirects=True)
    assert "No API token is named" in html_of(res)


def test_an_editor_undoes_their_own_correction_and_another_editors_only_with_admin(app, corpus, es, settings):
    api = app.test_client()
    a, b = corpus["a"], corpus["b"]
    split = api.post(f"/api/clusters/{a}/split", json={"page_id": "a3"}, headers=bearer(ALICE)).get_json()
    split_id = split["correction"]["id"]
    res = api.post(f"/api/corrections/{split_id}/undo", headers=bearer(BOB))
    assert res.status_code == 403
    assert "made by 'token:alice'" in res.get_json()["error"] and "admin scope" in res.get_json()["error"]
    assert cluster_of(es, settings, "a3") != a  # nothing was undone
    res = api.post(f"/api/corrections/{split_id}/undo", headers=bearer(ALICE))
    assert res.status_code == 200 and res.get_json()["correction"]["user"] == "token:alice"
    assert cluster_of(es, settings, "a3") == a

    merged = api.post(f"/api/clusters/{a}/merge", json={"other_cluster_id": b, "confirm": True}, headers=bearer(BOB))
    merge_id = merged.get_json()["correction"]["id"]
    res = api.post(f"/api/corrections/{merge_id}/undo", headers=bearer(BOSS))
    assert res.status_code == 200
    assert "made by token:bob: undone with the admin role" in res.get_json()["message"]
    assert cluster_of(es, settings, "b1") != cluster_of(es, settings, "a1")
    assert api.post("/api/corrections/nope/undo", headers=bearer(BOB)).status_code == 404
