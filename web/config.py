"""The web application's own settings: login, session cookie, API tokens, page size.

The core's ``Settings`` holds what detection and the index need; these are
the web's alone and live here. The environment variable names are the same
as ever (``NEWSFOLD_SECRET_KEY``, ``NEWSFOLD_ADMIN_USER``, ...); the table of
docs/configuration.md comes from ``newsfold.settings_registry``. This module
imports no Flask: the registry reads it in every process.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from newsfold.plugin.settings import read_env

DEV_SECRET_KEY = "dev-only-change-me"  # the web refuses logins while the secret key is this (sessions could be forged)
#: werkzeug ``generate_password_hash`` output: ``method$salt$hexdigest`` (scrypt or pbkdf2)
_PASSWORD_HASH = re.compile(r"^(scrypt(:\d+){0,3}|pbkdf2:[a-z0-9_]+(:\d+)?)\$[^$\s]+\$[0-9a-f]+$")
#: what an API token may do (``docs/tokens.md``): ``read`` the private reads (jobs, the corrections log,
#: private figures), ``ingest`` pages, ``edit`` (corrections and their undo), ``admin`` (jobs: reindex and retry;
#: the admin pages; undoing another editor's correction). The public search reads need no scope.
SCOPES = ("read", "ingest", "edit", "admin")
#: one ``NEWSFOLD_API_TOKEN_HASHES`` entry: ``name:sha256-hex-of-the-token:scope+scope``; an entry made before
#: scopes existed has no ``:scopes`` part and keeps every scope (a deprecation warning at start names it)
_TOKEN_ENTRY = re.compile(r"^([A-Za-z0-9._-]{1,64}):([0-9a-f]{64})(?::([a-z+]{1,64}))?$")


@dataclass(frozen=True)
class ApiToken:
    """One configured API token: its name, the scopes it carries, and whether its entry predates scopes."""

    name: str
    digest: str = field(repr=False)
    scopes: frozenset[str]
    legacy: bool = False


def scopes_of(text: str) -> frozenset[str]:
    """The scopes named in ``text`` (``read+ingest`` or ``read,ingest``).

    Raises:
        ValueError: a scope is not one of :data:`SCOPES`, or none is named.
    """
    names = [n for n in re.split(r"[+,\s]+", text.strip()) if n]
    unknown = [n for n in names if n not in SCOPES]
    if unknown or not names:
        shown = repr(unknown[0][:40]) if unknown else "none"
        raise ValueError(f"scopes must be some of {', '.join(SCOPES)}, got {shown}")
    return frozenset(names)


@dataclass(frozen=True)
class WebSettings:
    """The web's settings, validated on construction (the hash values are never echoed).

    The fields stand in the order of their concerns (:data:`CONCERNS`): a new field goes with its kind.
    """

    # access
    secret_key: str = field(default=DEV_SECRET_KEY, repr=False)
    admin_user: str = "admin"
    admin_password_hash: str | None = field(default=None, repr=False)
    api_token_hashes: str | None = field(default=None, repr=False)
    cookie_secure: bool = True
    session_hours: int = 12
    login_max_failures: int = 5
    login_lockout_seconds: int = 900
    #: ``GET /api/syndication`` without a login or token (the same figures as ``/admin/stats``, which needs a login)
    public_syndication: bool = False
    # pages
    page_size: int = 10
    images: bool = True  # thumbnails of the pages' pictures (loaded by the reader's browser from the news sites)
    #: the public address of the site (``https://news.example.org``, maybe with a path), which absolute links
    #: (the feeds') are built from; never the request's ``Host`` header. None: the feeds' links are relative
    base_url: str | None = None
    #: the longest passage of a version's text a public version page shows (what the version adds; the whole
    #: text is for editors, logged in): a quotation with a link to the publisher, not a republished article
    public_passage_chars: int = 300
    #: the demo only: the sample corpus's folder of pictures, served at ``/demo-media/<name>`` and shown in place of
    #: the made-up sites' ``/media/<name>`` addresses (which no server answers)
    demo_media: str | None = None

    def __post_init__(self) -> None:
        if not self.admin_user or len(self.admin_user) > 100 or not self.admin_user.isprintable():
            raise ValueError(f"admin_user must be 1-100 printable characters, got {self.admin_user[:100]!r}")
        if self.admin_password_hash is not None and not _PASSWORD_HASH.match(self.admin_password_hash):
            raise ValueError(
                "admin_password_hash is not a password hash like 'scrypt:32768:8:1$<salt>$<hex>'; "
                "make one with `newsfold hash-password`"
            )
        api_token_digests(self.api_token_hashes)
        if self.base_url is not None:
            object.__setattr__(self, "base_url", checked_base_url(self.base_url))
        for name in ("page_size", "session_hours", "login_max_failures", "login_lockout_seconds",
                     "public_passage_chars"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides) -> WebSettings:
        """Read the web settings from the environment (``NEWSFOLD_`` plus the upper-cased field name).

        Raises:
            ValueError: a value does not parse or is out of range; the message names the variable.
        """
        return cls(**read_env(cls, environ, ENV_NAMES, overrides))

    def replace(self, **changes) -> WebSettings:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)


def checked_base_url(value: str) -> str | None:
    """``NEWSFOLD_BASE_URL`` without its trailing ``/`` (None when empty).

    Raises:
        ValueError: not an ``http``/``https`` address with a host and nothing but a path after it.
    """
    value = value.strip().rstrip("/")
    if not value:
        return None
    parts = urlsplit(value)
    if (parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password
            or parts.query or parts.fragment or "\\" in value or not value.isprintable() or " " in value):  # fmt: skip
        raise ValueError(
            "base_url (NEWSFOLD_BASE_URL) must be the site's public address like https://news.example.org "
            f"(http or https, a host, maybe a path; no user, query or fragment), got {value[:100]!r}"
        )
    return value


ENV_NAMES = {f.name: "NEWSFOLD_" + f.name.upper() for f in dataclasses.fields(WebSettings)}
#: the concerns of the fields, each by its first field (the fields stand in this order)
CONCERNS = {"secret_key": "The web: access", "page_size": "The web: pages"}
#: the fields a deployment must set: sessions signed with a secret of its own, an admin login, the feeds' address
MUST_SET = ("secret_key", "admin_password_hash", "base_url")


def api_token_digests(value: str | None) -> dict[str, str]:
    """The API tokens of ``NEWSFOLD_API_TOKEN_HASHES`` as ``{sha256 hex digest: token name}`` (:func:`api_tokens`)."""
    return {digest: token.name for digest, token in api_tokens(value).items()}


def api_tokens(value: str | None) -> dict[str, ApiToken]:
    """The API tokens of ``NEWSFOLD_API_TOKEN_HASHES`` as ``{sha256 hex digest: token}``.

    Args:
        value: comma- or whitespace-separated ``name:sha256hex:scope+scope`` entries (or ``name:sha256hex``,
            made before scopes: every scope), or None.

    Returns:
        One entry per token; empty when ``value`` is empty.

    Raises:
        ValueError: an entry is malformed or a name is used twice (the message names the entry's position).
    """
    tokens: dict[str, ApiToken] = {}
    names: set[str] = set()
    for position, entry in enumerate(re.split(r"[,\s]+", (value or "").strip()), start=1):
        if not entry:
            continue
        found = _TOKEN_ENTRY.match(entry)
        if not found:
            raise ValueError(
                f"api_token_hashes entry {position} must be 'name:<64 hex digits of the token's SHA-256>:<scopes>' "
                "(make one with `newsfold api-token NAME --scopes read,ingest`)"
            )
        name, digest, scopes = found.groups()
        if name in names:
            raise ValueError(f"api_token_hashes uses the name {name!r} twice")
        try:
            carried = scopes_of(scopes) if scopes is not None else frozenset(SCOPES)
        except ValueError as exc:
            raise ValueError(f"api_token_hashes entry {position} ({name}): {exc}") from None
        names.add(name)
        tokens[digest] = ApiToken(name, digest, carried, legacy=scopes is None)
    return tokens
