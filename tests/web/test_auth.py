"""Login, API tokens, CSRF, failed-login limits and security headers, against real Elasticsearch and Redis."""

from __future__ import annotations

import dataclasses
import io
import re
import time
import uuid

import pytest
import redis
from werkzeug.security import check_password_hash, generate_password_hash

from newsfold import cli, cli_run
from newsfold.web import auth
from newsfold.web.auth import current_user, safe_next, token_digest
from newsfold.web.config import DEV_SECRET_KEY, WebSettings, api_token_digests
from newsfold.web.logins import LoginLimiter

PASSWORD = "correct horse battery staple"
TOKEN = "test-auth-token-fedcba9876543210"
SECRET = "test-secret-" + "k" * 40
PASSWORD_HASH = generate_password_hash(PASSWORD)
DOWN_REDIS = "redis://127.0.0.1:9/0"


WEB_FIELDS = {f.name for f in dataclasses.fields(WebSettings)}


@pytest.fixture
def make_app(settings, redis_url, web_app):
    """Apps with a login configured (admin / PASSWORD), one API token and the test Redis."""

    def make(**changes):
        values = {
            "secret_key": SECRET,
            "admin_password_hash": PASSWORD_HASH,
            "api_token_hashes": f"ci-bot:{token_digest(TOKEN)}",
            "redis_url": redis_url,
            "login_max_failures": 3,
            # each test counts its own failures: the counters are per index, and the index is the test's own
        }
        values.update(changes)
        web = {k: v for k, v in values.items() if k in WEB_FIELDS}
        core = {k: v for k, v in values.items() if k not in WEB_FIELDS}
        return web_app(settings.replace(**core), WebSettings(**web))

    return make


@pytest.fixture
def app(make_app, es):
    return make_app()


def _text(res) -> str:
    return res.get_data(as_text=True)


def _csrf(client, path: str = "/login") -> str:
    """The CSRF token of the form (or meta tag) on ``path``."""
    html = _text(client.get(path))
    found = re.search(r'name="csrf_token" value="([^"]+)"', html) or re.search(
        r'<meta name="csrf-token" content="([^"]+)"', html
    )
    assert found, f"no CSRF token on {path}"
    return found.group(1)


def _login(client, password: str = PASSWORD, *, user: str = "admin", next_url: str | None = None, **kwargs):
    data = {"username": user, "password": password, "csrf_token": _csrf(client)}
    if next_url is not None:
        data["next"] = next_url
    return client.post("/login", data=data, **kwargs)


# ---------------------------------------------------------------- anonymous


@pytest.mark.parametrize("path", ["/admin/", "/admin", "/admin/clusters/anything", "/admin/no-such-page"])
def test_anonymous_admin_is_sent_to_the_login(app, path):
    res = app.test_client().get(path)
    assert res.status_code == 303
    assert res.headers["Location"].startswith("/login?next=")
    assert "/admin" in res.headers["Location"]


@pytest.mark.parametrize(
    "path", ["/api/pages", "/api/jobs/reindex", "/api/pairs/not-duplicates", "/api/clusters/x/split", "/api/nothing"]
)
def test_anonymous_api_writes_are_401_json(app, path):
    res = app.test_client().post(path, json={"pages": [{"html": "<p>x</p>"}]})
    assert res.status_code == 401
    assert "authentication required" in res.get_json()["error"]
    assert res.headers["WWW-Authenticate"].startswith("Bearer")


def test_no_admin_route_or_api_write_answers_anonymously(app):
    """Every route registered now or later: the admin sends to the login, API writes are 401."""
    client = app.test_client()
    checked = 0
    for rule in app.url_map.iter_rules():
        path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", "x", rule.rule)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            if rule.rule.startswith("/admin"):
                res = client.open(path, method=method, data={"page_id": "x"})
                assert res.status_code == 303 and res.headers["Location"].startswith("/login"), (method, path)
            elif rule.rule.startswith("/api/") and method != "GET":
                res = client.open(path, method=method, json={})
                assert res.status_code == 401, (method, path)
            else:
                continue
            checked += 1
    assert checked >= 3


def test_anonymous_reads_stay_public(app):
    client = app.test_client()
    assert client.get("/").status_code == 200
    assert client.get("/api/search").status_code == 200
    assert client.get("/api/openapi.json").status_code == 200
    assert client.get("/login").status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [("TRACE", "/api/search", "GET"), ("POST", "/api/search", "GET"), ("TRACE", "/", "GET"),
     ("PUT", "/stories/x", "GET"), ("DELETE", "/api/stories", "GET"), ("GET", "/api/pages", "POST"),
     ("TRACE", "/admin/jobs", "GET")],
)  # fmt: skip
def test_a_method_no_route_takes_is_a_405_naming_those_it_does_for_anyone(app, method, path, allow):
    """Issue 32, item 13: not a 401 (anonymous TRACE), a 400 (a CSRF check) or a 405 without ``Allow``."""
    res = app.test_client().open(path, method=method)
    assert res.status_code == 405, (res.status_code, _text(res)[:200])
    assert allow in res.headers["Allow"].split(", ")


def test_syndication_figures_need_what_the_stats_page_needs(make_app, es):
    """Issue 32, item 12: ``/admin/stats`` needs a login, so its figures through the API need a login or a token,
    unless ``NEWSFOLD_PUBLIC_SYNDICATION=1`` opens them on purpose."""
    app = make_app()
    anonymous = app.test_client().get("/api/syndication?window=all")
    assert anonymous.status_code == 401 and "authentication required" in anonymous.get_json()["error"]
    assert app.test_client().get("/admin/stats").status_code == 303
    with_token = app.test_client().get("/api/syndication", headers={"Authorization": f"Bearer {TOKEN}"})
    assert with_token.status_code == 200 and "sites" in with_token.get_json()
    client = app.test_client()
    _login(client)
    assert client.get("/api/syndication?window=7d").status_code == 200
    assert make_app(public_syndication=True).test_client().get("/api/syndication").status_code == 200
    assert WebSettings.from_env({"NEWSFOLD_PUBLIC_SYNDICATION": "1"}).public_syndication


# ---------------------------------------------------------------- login and logout


def test_login_opens_the_admin_with_a_safe_cookie(app):
    client = app.test_client()
    res = _login(client, next_url="/admin/")
    assert res.status_code == 303 and res.headers["Location"] == "/admin/"
    cookie = res.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" in cookie
    assert "Expires=" in cookie  # a permanent session with the configured lifetime
    page = client.get("/admin/")
    assert page.status_code == 200
    assert page.headers["Cache-Control"] == "no-store"
    assert 'data-testid="current-user">admin<' in _text(page)
    assert '<meta name="csrf-token"' in _text(page)


def test_login_without_next_goes_to_the_admin_and_never_offsite(app):
    client = app.test_client()
    assert _login(client).headers["Location"] == "/admin/"
    for target in ("//evil.test/x", "https://evil.test/", "/\\evil.test", "javascript:alert(1)"):
        assert _login(app.test_client(), next_url=target).headers["Location"] == "/admin/"
    assert safe_next("/admin/clusters/a?x=1") == "/admin/clusters/a?x=1"
    assert safe_next("//evil.test") is None and safe_next("/a\r\nSet-Cookie: x") is None


def test_wrong_password_or_user_is_refused(app):
    client = app.test_client()
    res = _login(client, "not the password")
    html = _text(res)
    assert res.status_code == 401
    assert "Wrong user name or password." in html
    assert 'value="admin"' in html  # the user name is kept, the password is not
    assert "not the password" not in html
    assert client.get("/admin/").status_code == 303
    assert _login(app.test_client(), PASSWORD, user="root").status_code == 401


def test_logout_ends_the_session(app):
    client = app.test_client()
    _login(client)
    confirm = client.get("/logout")
    assert confirm.status_code == 200 and 'data-testid="logout-confirm"' in _text(confirm)
    without_token = client.post("/logout")
    assert without_token.status_code == 400  # logging out is a change: it needs the CSRF token too
    res = client.post("/logout", data={"csrf_token": _csrf(client, "/logout")})
    assert res.status_code == 303 and res.headers["Location"] == "/"
    assert client.get("/admin/").status_code == 303
    assert client.get("/logout").status_code == 302  # nothing to log out of: back to the search


def test_a_cookie_copied_before_logout_no_longer_opens_the_admin(app):
    client = app.test_client()
    _login(client)
    copied = client.get_cookie("session").value
    assert client.post("/logout", data={"csrf_token": _csrf(client, "/logout")}).status_code == 303
    thief = app.test_client()
    thief.set_cookie("session", copied)
    assert thief.get("/admin/").status_code == 303  # sent to the login: the session ended on the server
    assert thief.get("/api/jobs").status_code == 401


def test_login_form_needs_its_csrf_token(app):
    client = app.test_client()
    client.get("/login")
    res = client.post("/login", data={"username": "admin", "password": PASSWORD})
    assert res.status_code == 400
    assert "This form has expired" in _text(res)
    assert client.get("/admin/").status_code == 303


def test_changing_the_password_ends_open_sessions(make_app, es):
    first = make_app()
    client = first.test_client()
    _login(client)
    cookie = client.get_cookie("session")
    assert cookie is not None
    changed = make_app(admin_password_hash=generate_password_hash("a new password entirely")).test_client()
    changed.set_cookie("session", cookie.value)
    assert changed.get("/admin/").status_code == 303
    same = make_app().test_client()
    same.set_cookie("session", cookie.value)
    assert same.get("/admin/").status_code == 200  # the same configuration keeps the session


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"admin_password_hash": None}, "newsfold hash-password"),
        ({"secret_key": DEV_SECRET_KEY}, "NEWSFOLD_SECRET_KEY"),
        ({"secret_key": "Change-Me-Please"}, "is a placeholder"),  # long enough, but an example's
    ],
)
def test_login_is_closed_without_a_hash_or_with_the_dev_secret(make_app, es, changes, says):
    client = make_app(**changes).test_client()
    page = client.get("/login")
    assert page.status_code == 200 and says in _text(page)
    assert 'data-testid="login-form"' not in _text(page)
    res = client.post("/login", data={"username": "admin", "password": PASSWORD})
    assert res.status_code in (400, 403)
    assert client.get("/admin/").status_code == 303


def test_anonymous_search_sets_no_cookie_and_carries_no_token(app):
    res = app.test_client().get("/")
    assert "Set-Cookie" not in res.headers
    assert "csrf" not in _text(res)


# ---------------------------------------------------------------- failed-login limits


def test_lockout_after_repeated_failures_then_even_the_right_password_waits(app):
    client = app.test_client()
    for _ in range(3):
        assert _login(client, "wrong").status_code == 401
    res = _login(client)
    assert res.status_code == 429
    assert "Too many failed logins" in _text(res)
    assert 0 < int(res.headers["Retry-After"]) <= 900
    assert client.get("/admin/").status_code == 303


def test_lockout_counts_per_address_and_per_user_in_redis(make_app, es, redis_url, settings):
    app = make_app()  # max_failures 3: a name from one address pauses at 3, an address at 12

    def client_from(ip, app=app):
        client = app.test_client()
        client.environ_base["REMOTE_ADDR"] = ip
        return client

    # failures for one name from one address pause that name there, not the name elsewhere
    for _ in range(3):
        assert _login(client_from("10.0.0.9"), "wrong").status_code == 401
    assert _login(client_from("10.0.0.9")).status_code == 429
    # an attacker failing as "admin" from many addresses cannot lock the real admin out
    for ip in ("10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4", "10.0.1.5", "10.0.1.6"):
        assert _login(client_from(ip), "wrong", user="admin").status_code == 401
    assert _login(client_from("10.0.2.1"), user="admin").status_code == 303
    # one address trying many user names is stopped, in every web process sharing Redis
    for n in range(12):
        assert _login(client_from("10.0.0.1"), "wrong", user=f"name{n}").status_code == 401
    assert _login(client_from("10.0.0.1"), user="admin").status_code == 429
    assert _login(client_from("10.0.0.1", make_app()), user="admin").status_code == 429
    with redis.Redis.from_url(redis_url) as db:
        keys = db.keys(f"newsfold:{settings.index}:login-failures:*")
        assert len(keys) >= 5
        assert all(0 < db.ttl(key) <= 900 for key in keys)  # every counter expires


def test_a_name_failing_from_many_addresses_is_slowed_not_locked():
    limiter = LoginLimiter(max_failures=2, window_seconds=60, namespace=f"t-{uuid.uuid4().hex}")
    for n in range(6):
        limiter.failed(f"10.9.0.{n}", "admin")
    assert limiter.wait_seconds("10.9.1.1", "admin") is None
    assert 0 < limiter.slowdown("10.9.1.1", "admin") <= LoginLimiter.MAX_SLOWDOWN
    assert limiter.slowdown("10.9.1.1", "someone") == 0.0


def test_successful_login_resets_the_counters(app):
    client = app.test_client()
    for _ in range(2):
        _login(client, "wrong")
    assert _login(client).status_code == 303
    client.post("/logout", data={"csrf_token": _csrf(client, "/logout")})
    for _ in range(2):
        assert _login(client, "wrong").status_code == 401
    assert _login(client).status_code == 303  # 2 + 2 failures, but the success in between forgot the first two


@pytest.mark.parametrize("redis_url", [None, DOWN_REDIS])
def test_lockout_without_redis_counts_in_the_process(make_app, es, redis_url):
    client = make_app(redis_url=redis_url).test_client()
    for _ in range(3):
        assert _login(client, "wrong").status_code == 401
    assert _login(client).status_code == 429


def test_limiter_window_expires():
    limiter = LoginLimiter(max_failures=2, window_seconds=1, namespace=f"t-{uuid.uuid4().hex}")
    limiter.failed("1.2.3.4", "admin")
    assert limiter.wait_seconds("1.2.3.4", "admin") is None
    limiter.failed("1.2.3.4", "admin")
    assert limiter.wait_seconds("1.2.3.4", "admin") == 1  # this name from this address is over the limit
    assert limiter.wait_seconds("1.2.3.4", "other") is None
    assert limiter.wait_seconds("5.6.7.8", "admin") is None
    for n in range(6):
        limiter.failed("1.2.3.4", f"name{n}")
    assert limiter.wait_seconds("1.2.3.4", "other") == 1  # the address is over its limit (2 x 4)
    time.sleep(1.1)  # the window passes
    assert limiter.wait_seconds("1.2.3.4", "admin") is None and limiter.wait_seconds("1.2.3.4", "x") is None


# ---------------------------------------------------------------- API tokens and CSRF on the API


def test_bearer_token_writes_without_csrf(make_app, es):
    client = make_app(redis_url=DOWN_REDIS).test_client()
    res = client.post("/api/pages", json={"pages": []}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert res.status_code == 400
    assert '"pages" is empty' in res.get_json()["error"]  # the view ran: auth and CSRF let it through
    queued = client.post(
        "/api/pages", json={"pages": [{"html": "<p>x</p>"}]}, headers={"Authorization": f"bearer {TOKEN}"}
    )
    assert queued.status_code == 503 and "Redis" in queued.get_json()["error"]


def test_a_wrong_token_is_401_and_not_a_login(app):
    client = app.test_client()
    res = client.post("/api/pages", json={"pages": []}, headers={"Authorization": "Bearer not-a-token"})
    assert res.status_code == 401
    assert res.get_json()["error"] == "the API token is not valid"
    admin = client.get("/admin/", headers={"Authorization": f"Bearer {TOKEN}x"})
    assert admin.status_code == 303


def test_cookie_api_writes_need_the_csrf_header(app):
    client = app.test_client()
    _login(client)
    refused = client.post("/api/pages", json={"pages": []})
    assert refused.status_code == 400
    assert "CSRF" in refused.get_json()["error"]
    token = _csrf(client, "/admin/")
    accepted = client.post("/api/pages", json={"pages": []}, headers={"X-CSRFToken": token})
    assert accepted.status_code == 400 and '"pages" is empty' in accepted.get_json()["error"]
    forged = client.post("/api/pages", json={"pages": []}, headers={"X-CSRFToken": token[:-2] + "xx"})
    assert forged.status_code == 400 and "CSRF" in forged.get_json()["error"]


def test_current_user_names_the_login_or_the_token(app):
    with app.test_request_context("/api/pages", method="POST", headers={"Authorization": f"Bearer {TOKEN}"}):
        assert current_user() == "token:ci-bot"
    with app.test_request_context("/"):
        assert current_user() is None
    client = app.test_client()
    _login(client)
    with client:
        client.get("/")
        assert current_user() == "admin"


# ---------------------------------------------------------------- headers


@pytest.mark.parametrize("path", ["/", "/login", "/api/search", "/admin/"])
def test_security_headers(app, path):
    res = app.test_client().get(path)
    csp = res.headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert res.headers["X-Content-Type-Options"] == "nosniff"
    assert res.headers["Referrer-Policy"] == "same-origin"


def test_templates_have_no_inline_script_or_style(app):
    from pathlib import Path

    import newsfold.web as web

    for template in (Path(web.__file__).parent / "templates").rglob("*.html"):
        text = template.read_text()
        assert "<script>" not in text and " style=" not in text and " on" + "click=" not in text, template


# ---------------------------------------------------------------- settings and CLI


def test_settings_validate_the_login_values():
    with pytest.raises(ValueError, match="newsfold hash-password"):
        WebSettings(admin_password_hash="hunter2")
    with pytest.raises(ValueError, match="api_token_hashes entry 2"):
        WebSettings(api_token_hashes=f"a:{'0' * 64}, b:xyz")
    with pytest.raises(ValueError, match="twice"):
        WebSettings(api_token_hashes=f"a:{'0' * 64},a:{'1' * 64}")
    with pytest.raises(ValueError, match="login_max_failures"):
        WebSettings(login_max_failures=0)
    assert WebSettings(admin_password_hash=generate_password_hash("x" * 8)).admin_password_hash
    assert api_token_digests(f" a:{'0' * 64}\nb:{'1' * 64} ") == {"0" * 64: "a", "1" * 64: "b"}
    parsed = WebSettings.from_env({"NEWSFOLD_COOKIE_SECURE": "0", "NEWSFOLD_ADMIN_USER": "editor"})
    assert (parsed.cookie_secure, parsed.admin_user) == (False, "editor")


def test_hash_password_command_reads_stdin(monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO("s3cret-enough\n"))
    assert cli.main(["hash-password"]) == 0
    printed = capsys.readouterr().out.strip()
    assert check_password_hash(printed, "s3cret-enough")
    WebSettings(admin_password_hash=printed)  # accepted as a setting
    monkeypatch.setattr("sys.stdin", io.StringIO("short\n"))
    with pytest.raises(SystemExit, match="8 to 1024 characters"):
        cli.main(["hash-password"])


def test_api_token_command_prints_a_token_and_its_entry(capsys):
    assert cli.main(["api-token", "ingest-bot"]) == 0
    out = capsys.readouterr().out
    token = re.search(r"^token: (\S+)$", out, re.M).group(1)
    entry = re.search(r"^entry: (\S+)$", out, re.M).group(1)
    assert entry == f"ingest-bot:{token_digest(token)}:read+ingest"  # least privilege by default
    assert api_token_digests(entry) == {token_digest(token): "ingest-bot"}
    assert cli.main(["api-token", "editor", "--scopes", "edit,read"]) == 0
    assert re.search(r"^entry: editor:[0-9a-f]{64}:read\+edit$", capsys.readouterr().out, re.M)
    with pytest.raises(SystemExit, match="scopes must be some of read, ingest, edit, admin, got 'root'"):
        cli.main(["api-token", "x", "--scopes", "read,root"])
    with pytest.raises(SystemExit, match="token name"):
        cli.main(["api-token", "bad name"])


def test_demo_makes_a_password_and_plain_http_cookies():
    web_settings, password = cli_run._demo_web_settings(WebSettings())
    assert password and check_password_hash(web_settings.admin_password_hash, password)
    assert web_settings.cookie_secure is False
    assert web_settings.secret_key != DEV_SECRET_KEY and auth.login_closed_reason(web_settings) is None
    configured = WebSettings(admin_password_hash=generate_password_hash(PASSWORD), secret_key=SECRET)
    kept, none = cli_run._demo_web_settings(configured)
    assert none is None and kept.admin_password_hash == configured.admin_password_hash
    assert kept.secret_key == SECRET
