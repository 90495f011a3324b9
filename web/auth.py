"""Who may change things: the admin login, API tokens, CSRF, failed-login limits and security headers.

Reading is public: the search page and the ``GET /api`` routes of the
search (search, clusters, task states). The admin area (``/admin``), the
operators' and editors' reads (``/api/jobs``, ``/api/corrections``: they name
users and source paths; ``/api/clusters``, the editor's queue) and every ``/api`` call that is not a GET need a login
(a session cookie after ``/login``) or an API token sent as
``Authorization: Bearer <token>``. One ``before_request`` hook decides this
for the whole app, so a new admin page or API route is protected without
doing anything.

The same hook checks a token's scopes (``docs/tokens.md``): ``read`` for the private reads, ``ingest`` for
``POST /api/pages``, ``edit`` for the corrections and their undo, ``admin`` for the jobs (reindex, retry)
and the admin pages; a token outside its scopes gets a 403 naming the scope it lacks. A logged-in admin
has every scope. Undoing a correction another user made also needs ``admin``
(``web.actions.correction_requests``).

Requests that change something and come with the session cookie must also
carry a CSRF token (the ``csrf_token`` form field, or an ``X-CSRFToken``
header for scripts); requests with a valid API token skip that check, since
a browser never adds a bearer token to a forged request. The failed-login
counters and the open sessions are kept by ``web.logins``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import time
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Flask,
    current_app,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf.csrf import CSRFProtect
from werkzeug.exceptions import MethodNotAllowed
from werkzeug.security import check_password_hash

from newsfold.plugin.settings import is_placeholder
from newsfold.web.config import SCOPES, ApiToken, WebSettings, api_token_digests, api_tokens, scopes_of
from newsfold.web.resources import get_limiter, get_sessions, get_tokens, get_web_settings

log = logging.getLogger(__name__)

bp = Blueprint("auth", __name__)

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
MIN_SECRET_KEY_CHARS = 16
#: longer user names and passwords are refused before hashing (a megabyte password would cost CPU for nothing)
MAX_USER_CHARS = 100
MAX_PASSWORD_CHARS = 1024
#: no inline script or style anywhere: the pages only load /static files
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
#: with thumbnails on, pictures may come from any https address (the news sites' own); nothing else is widened
IMAGES_CONTENT_SECURITY_POLICY = CONTENT_SECURITY_POLICY.replace("img-src 'self' data:", "img-src 'self' data: https:")
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    # the search query stays private when a reader follows a link to a news site; same-origin
    # form posts keep their Referer, which the CSRF check needs over HTTPS
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


# ---------------------------------------------------------------- tokens and passwords
def token_digest(token: str) -> str:
    """The SHA-256 hex digest under which an API token is configured.

    A token is 256 random bits, so a fast hash is enough: nobody can guess
    it back from the digest (a slow hash is only needed for passwords people choose).
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_api_token(name: str, scopes: str | tuple[str, ...] = SCOPES) -> tuple[str, str]:
    """A fresh random API token and its ``NEWSFOLD_API_TOKEN_HASHES`` entry ``name:digest:scope+scope``.

    Args:
        name: the token's name, logged with what it changes.
        scopes: what the token may do, some of :data:`web.config.SCOPES` (``"read,ingest"`` or a tuple).

    Raises:
        ValueError: ``name`` is not 1-64 letters, digits, dots, dashes or underscores, or a scope is unknown.
    """
    carried = scopes_of(scopes if isinstance(scopes, str) else ",".join(scopes))
    token = secrets.token_urlsafe(32)
    entry = f"{name}:{token_digest(token)}:{'+'.join(s for s in SCOPES if s in carried)}"
    api_token_digests(entry)  # validates the name with the same rule as the setting
    return token, entry


def login_closed_reason(settings: WebSettings) -> str | None:
    """Why nobody can log in with these settings, or None when the login is open."""
    if not settings.admin_password_hash:
        return (
            "Login is not set up: no admin password is configured. Make a hash with "
            "`newsfold hash-password` and set NEWSFOLD_ADMIN_PASSWORD_HASH to it."
        )
    if is_placeholder(settings.secret_key) or len(settings.secret_key) < MIN_SECRET_KEY_CHARS:
        return (
            "Login is disabled: NEWSFOLD_SECRET_KEY is a placeholder (the development value or an example's) or "
            f"shorter than {MIN_SECRET_KEY_CHARS} characters, so session cookies could be forged. "
            "Set it to a long random value."
        )
    return None


def _session_fingerprint(settings: WebSettings) -> str:
    """Ties a session to the configured user and password: changing either ends every open session."""
    message = f"{settings.admin_user}\0{settings.admin_password_hash}".encode()
    return hmac.new(settings.secret_key.encode(), message, hashlib.sha256).hexdigest()[:32]


def check_credentials(settings: WebSettings, username: str, password: str) -> bool:
    """Whether ``username``/``password`` are the admin's.

    The password hash is checked even when the user name is wrong, so the
    answer takes as long either way.
    """
    if not settings.admin_password_hash:
        return False
    user_ok = hmac.compare_digest(username.encode("utf-8"), settings.admin_user.encode("utf-8"))
    password_ok = check_password_hash(settings.admin_password_hash, password)
    return user_ok and password_ok


def _authenticate() -> tuple[str | None, str | None]:
    """``(user, method)`` of the current request; method is "token", "session", "bad-token", "revoked-token"
    or None. The token of a "token" request is ``g.newsfold_token``."""
    header = request.headers.get("Authorization", "")
    scheme, _, credentials = header.partition(" ")
    if scheme.lower() == "bearer":
        secret = credentials.strip()
        token = api_tokens(get_web_settings().api_token_hashes).get(token_digest(secret)) if secret else None
        if token is None:
            return None, "bad-token"
        store = get_tokens()
        if store.is_revoked(token.digest):
            return None, "revoked-token"
        store.used(token.digest)
        g.newsfold_token = token
        return f"token:{token.name}", "token"
    user = session.get("user")
    if not user:
        return None, None
    settings = get_web_settings()
    if (
        login_closed_reason(settings) is None
        and hmac.compare_digest(str(session.get("auth", "")), _session_fingerprint(settings))
        and get_sessions().alive(str(session.get("sid", "")), settings.session_hours * 3600)
    ):
        return user, "session"
    return None, None


def current_user() -> str | None:
    """Who is making the current request: the admin user name, ``token:<name>`` for an API token, or None."""
    if "newsfold_auth" not in g:
        g.newsfold_auth = _authenticate()
    return g.newsfold_auth[0]


def _auth_method() -> str | None:
    current_user()
    return g.newsfold_auth[1]


def current_token() -> ApiToken | None:
    """The API token of the current request, or None (no token, or a login)."""
    current_user()
    return g.get("newsfold_token")


def current_scopes() -> frozenset[str]:
    """What the current request may do: every scope for a logged-in admin, a token's own, none for a visitor."""
    if current_user() is None:
        return frozenset()
    token = current_token()
    return token.scopes if token is not None else frozenset(SCOPES)


def _in_words(seconds: int) -> str:
    minutes = -(-seconds // 60)
    if seconds < 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


# ---------------------------------------------------------------- views
def safe_next(value: str | None) -> str | None:
    """``value`` when it is a path on this site (``/admin/...``), else None: never a redirect elsewhere."""
    if not value or len(value) > 2000 or not value.startswith("/") or value.startswith(("//", "/\\")):
        return None
    if any(ord(ch) < 32 or ch == "\\" for ch in value):
        return None
    parts = urlsplit(value)
    return value if not parts.scheme and not parts.netloc else None


def _login_page(status: int = 200, **context):
    settings = get_web_settings()
    context.setdefault("closed", login_closed_reason(settings))
    context.setdefault("next", None)
    context.setdefault("username", "")
    context.setdefault("error", None)
    return render_template("login.html", mode="login", **context), status


@bp.route("/login", methods=["GET", "POST"])
def login():
    """``/login``: the admin login form; POST checks the credentials and starts a session."""
    settings = get_web_settings()
    next_url = safe_next(request.values.get("next"))
    if request.method == "GET":
        return _login_page(next=next_url)
    closed = login_closed_reason(settings)
    if closed:
        return _login_page(403, next=next_url)
    username = request.form.get("username", "")[: MAX_USER_CHARS + 1]
    password = request.form.get("password", "")
    shown_name = username.strip()[:MAX_USER_CHARS]
    ip = request.remote_addr or "unknown"
    limiter = get_limiter()
    wait = limiter.wait_seconds(ip, shown_name)
    if wait:
        message = f"Too many failed logins. Logins are paused for {_in_words(wait)}; try again later."
        page, status = _login_page(429, next=next_url, username=shown_name, error=message, locked=True)
        return page, status, {"Retry-After": str(wait)}
    time.sleep(limiter.slowdown(ip, shown_name))  # a name guessed at from many addresses: slower, never locked
    too_long = len(username) > MAX_USER_CHARS or len(password) > MAX_PASSWORD_CHARS
    if too_long or not password or not check_credentials(settings, username, password):
        limiter.failed(ip, shown_name)
        log.warning("failed login for user %r from %s", shown_name, ip)
        message = "Wrong user name or password."
        wait = limiter.wait_seconds(ip, shown_name)
        if wait:
            message += f" Too many failed logins: logins are paused for {_in_words(wait)}."
        return _login_page(401, next=next_url, username=shown_name, error=message)
    limiter.succeeded(ip, shown_name)
    session.clear()  # a new session (and CSRF token) at every login
    session.permanent = True
    session["user"] = settings.admin_user
    session["auth"] = _session_fingerprint(settings)
    session["sid"] = get_sessions().start(settings.session_hours * 3600)
    log.info("user %r logged in from %s", settings.admin_user, ip)
    return redirect(next_url or url_for("admin.index"), code=303)


@bp.route("/logout", methods=["GET", "POST"])
def logout():
    """``/logout``: GET shows a button (logging out changes state, so it is a POST with a CSRF token)."""
    if request.method == "GET":
        if current_user() is None:
            return redirect(url_for("search.index"))
        return render_template("login.html", mode="logout", user=current_user())
    get_sessions().end(str(session.get("sid", "")))
    session.clear()
    return redirect(url_for("search.index"), code=303)


# ---------------------------------------------------------------- the central checks
def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def deny_api(method: str | None = None):
    """The 401 answer of an API request without a valid login or token (``method``: how it tried)."""
    if method == "bad-token":
        message = "the API token is not valid"
    elif method == "revoked-token":
        message = "the API token was revoked by an admin"
    else:
        message = "authentication required: log in, or send an API token as 'Authorization: Bearer <token>'"
    return jsonify(error=message), 401, {"WWW-Authenticate": 'Bearer realm="newsfold"'}


PRIVATE_API_READS = ("/api/jobs", "/api/corrections")
#: the editors' reads, which need ``edit``: exact paths (``/api/clusters/<id>``, one story's pages, stays public)
EDITOR_API_READS = ("/api/clusters",)
#: the figures of ``/admin/stats``: as private as that page unless ``NEWSFOLD_PUBLIC_SYNDICATION=1``
STATS_API_READS = ("/api/syndication",)


def _private_read(path: str) -> bool:
    private = PRIVATE_API_READS if get_web_settings().public_syndication else PRIVATE_API_READS + STATS_API_READS
    return path in EDITOR_API_READS or any(_under(path, prefix) for prefix in private)


#: the scope each ``/api`` write needs, by endpoint; the corrections' (``admin_api``) need ``edit``, any other
#: write ``admin``
WRITE_SCOPES = {"api.submit_pages": "ingest", "api.reindex": "admin", "api.retry": "admin"}


def required_scope() -> str | None:
    """The scope the current request needs, or None when it needs none (the public reads, the login)."""
    path = request.path
    if request.routing_exception is not None:
        return None  # no such route: its 404 (or 405) for anyone
    if request.blueprint == "admin" or _under(path, "/admin"):
        return "admin"
    if not (request.blueprint in ("api", "admin_api") or _under(path, "/api")):
        return None
    if request.method in SAFE_METHODS:
        return "edit" if path in EDITOR_API_READS else "read" if _private_read(path) else None
    if request.blueprint == "admin_api":
        return "edit"
    return WRITE_SCOPES.get(str(request.endpoint), "admin")


def deny_scope(scope: str):
    """The 403 answer of a request whose token lacks ``scope``."""
    token = current_token()
    name, carried = (token.name, sorted(token.scopes, key=SCOPES.index)) if token else ("?", [])
    message = (
        f"the API token {name!r} lacks the {scope!r} scope this request needs (it carries: "
        f"{', '.join(carried) or 'none'}); make a token with it: newsfold api-token NAME --scopes {scope}"
    )
    log.warning("API token %r refused on %s %s: no %r scope", name, request.method, request.path[:200], scope)
    return jsonify(error=message, required_scope=scope, token_scopes=carried), 403


def _guard():
    """Before every request: admin pages and API writes need a user; cookie-borne writes need a CSRF token."""
    if isinstance(request.routing_exception, MethodNotAllowed):
        return None  # no route takes this method (TRACE, a POST to a page): a 405 naming those that do, for anyone
    path = request.path
    is_api = request.blueprint == "api" or _under(path, "/api")
    needs_user = (
        request.blueprint == "admin"
        or _under(path, "/admin")
        or (is_api and request.method not in SAFE_METHODS)
        or _private_read(path)
    )
    if needs_user and current_user() is None:
        if is_api:
            return deny_api(_auth_method())
        return redirect(url_for("auth.login", next=request.full_path.rstrip("?")), code=303)
    scope = required_scope() if _auth_method() == "token" else None
    if scope is not None and scope not in current_scopes():
        return deny_scope(scope)
    if (
        request.method not in SAFE_METHODS
        and current_app.config.get("WTF_CSRF_ENABLED", True)
        and _auth_method() != "token"
    ):
        current_app.extensions["csrf"].protect()
    return None


def _headers(response):
    """After every request: security headers; nothing private is cached."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if get_web_settings().images and response.headers.get("Content-Security-Policy") == CONTENT_SECURITY_POLICY:
        response.headers["Content-Security-Policy"] = IMAGES_CONTENT_SECURITY_POLICY
    if request.is_secure:
        response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    path = request.path
    if _under(path, "/admin") or path in ("/login", "/logout") or g.get("newsfold_auth", (None,))[0]:
        response.headers["Cache-Control"] = "no-store"
    return response


def _template_globals() -> dict:
    return {"current_user": current_user, "show_images": get_web_settings().images}


def init_app(app: Flask, web: WebSettings) -> None:
    """Install the login views, the checks and the CSRF protection on ``app`` (its login state is a resource)."""
    app.config.setdefault("WTF_CSRF_CHECK_DEFAULT", False)  # _guard decides when to check
    app.config.setdefault("WTF_CSRF_TIME_LIMIT", None)  # a token lives as long as its session
    app.before_request(_guard)  # registered before CSRFProtect's own hook, which WTF_CSRF_CHECK_DEFAULT turns off
    CSRFProtect(app)
    app.after_request(_headers)
    app.context_processor(_template_globals)
    app.register_blueprint(bp)
    if login_closed_reason(web):
        app.logger.warning("%s", login_closed_reason(web))
    legacy = sorted(t.name for t in api_tokens(web.api_token_hashes).values() if t.legacy)
    if legacy:
        app.logger.warning(
            "API token(s) %s have no scopes in NEWSFOLD_API_TOKEN_HASHES (entries made before scopes): they keep "
            "every scope for now, which is deprecated; replace each with `newsfold api-token NAME --scopes ...`",
            ", ".join(legacy),
        )
