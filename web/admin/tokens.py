"""The admin's list of API tokens (``/admin/tokens``): each token's scopes and last use, and revoking one.

The tokens are configured (``NEWSFOLD_API_TOKEN_HASHES``); their revocations and last uses are kept by
``web.logins.TokenStore``. See ``docs/tokens.md``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from newsfold.web.config import SCOPES, api_tokens
from newsfold.web.resources import get_tokens, get_web_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenRow:
    """One configured token as the admin sees it (never its digest)."""

    name: str
    scopes: list[str]
    legacy: bool
    last_used: str | None  # ISO 8601 UTC, None when never used since uses are kept
    revoked: bool


def token_rows() -> list[TokenRow]:
    """The configured tokens by name, with their scopes, last use and whether they are revoked."""
    store = get_tokens()
    revoked, uses = store.revoked(), store.last_uses()
    rows = []
    for digest, token in api_tokens(get_web_settings().api_token_hashes).items():
        at = uses.get(digest)
        rows.append(
            TokenRow(
                name=token.name,
                scopes=[s for s in SCOPES if s in token.scopes],
                legacy=token.legacy,
                last_used=datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds") if at else None,
                revoked=digest in revoked,
            )
        )
    return sorted(rows, key=lambda row: row.name)


def revoke_token(name: str, *, by: str | None) -> bool:
    """Revoke the configured token named ``name``; False when no token has that name."""
    for digest, token in api_tokens(get_web_settings().api_token_hashes).items():
        if token.name == name:
            get_tokens().revoke(digest)
            log.warning("API token %r revoked by %r", name, by)
            return True
    return False
