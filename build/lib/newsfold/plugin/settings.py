"""Settings: one validated, frozen dataclass read from the environment.

Every field is documented in the README's configuration table; the
environment variable of a field is given by ``ENV_NAMES`` (``NEWSFOLD_`` plus
the upper-cased field name, except the well-known server URLs).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

HASH_SCHEME = "affine32"  # datasketch >= 2.0 scheme; recorded in the index _meta
SIGNATURE_VERSION = 1  # bump when shingling or signing changes meaning
CJK_METHODS = ("ngram", "periods")
SHINGLE_SCHEMES = ("words", "stopwords")
DEV_SECRET_KEY = "dev-only-change-me"  # the web refuses logins while the secret key is this (sessions could be forged)
#: werkzeug ``generate_password_hash`` output: ``method$salt$hexdigest`` (scrypt or pbkdf2)
_PASSWORD_HASH = re.compile(r"^(scrypt(:\d+){0,3}|pbkdf2:[a-z0-9_]+(:\d+)?)\$[^$\s]+\$[0-9a-f]+$")
#: one ``NEWSFOLD_API_TOKEN_HASHES`` entry: ``name:sha256-hex-of-the-token``
_TOKEN_ENTRY = re.compile(r"^([A-Za-z0-9._-]{1,64}):([0-9a-f]{64})$")
SIGNATURE_KINDS = ("minhash", "weighted")
SHINGLE_FILTERS = ("none", "frequent")
CJK_VERIFIERS = ("minhash", "lcc")

_UNPREFIXED = {
    "elasticsearch_url": "ELASTICSEARCH_URL",
    "elasticsearch_user": "ELASTICSEARCH_USER",
    "elasticsearch_password": "ELASTICSEARCH_PASSWORD",
    "elasticsearch_api_key": "ELASTICSEARCH_API_KEY",
    "elasticsearch_ca_certs": "ELASTICSEARCH_CA_CERTS",
    "elasticsearch_verify_certs": "ELASTICSEARCH_VERIFY_CERTS",
    "redis_url": "REDIS_URL",
}


@dataclass(frozen=True)
class Settings:
    """All newsfold settings, validated on construction."""

    # servers
    elasticsearch_url: str | None = None
    elasticsearch_user: str | None = None
    elasticsearch_password: str | None = None
    elasticsearch_api_key: str | None = None
    elasticsearch_ca_certs: str | None = None
    elasticsearch_verify_certs: bool = True
    redis_url: str | None = None
    es_timeout: float = 30.0
    es_max_retries: int = 3
    # index
    index: str = "newsfold-articles"
    shards: int = 1
    replicas: int = 0
    corrections_index: str | None = None  # default: <index>-corrections
    # signatures
    num_perm: int = 256
    seed: int = 1
    bands: int = 128
    rows: int = 2
    min_bands: int = 2
    shingles: str = "stopwords"
    word_shingle: int = 2
    cjk_shingle: int = 4
    signature: str = "minhash"
    shingle_filter: str = "none"
    frequent_share: float = 0.05
    rare_share: float = 0.02
    stats_min_stories: int = 200
    # extraction
    cleanup: bool = True
    cjk_method: str = "periods"
    repeated_lines: bool = True
    # decisions
    threshold: float = 0.35
    containment_threshold: float = 0.8
    containment_min_ratio: float = 0.2
    min_tokens: int = 25
    title_evidence: bool = True
    cjk_verifier: str = "minhash"
    # ingest
    archive_dir: str | None = None
    batch_size: int = 100
    max_page_bytes: int = 10 * 1024 * 1024
    page_timeout: float = 60.0
    task_retries: int = 5
    # web
    page_size: int = 10
    secret_key: str = field(default=DEV_SECRET_KEY, repr=False)
    admin_user: str = "admin"
    admin_password_hash: str | None = field(default=None, repr=False)
    api_token_hashes: str | None = field(default=None, repr=False)
    cookie_secure: bool = True
    session_hours: int = 12
    login_max_failures: int = 5
    login_lockout_seconds: int = 900

    def __post_init__(self) -> None:
        if self.num_perm < 16:
            raise ValueError(f"num_perm must be >= 16, got {self.num_perm}")
        if self.bands < 1 or self.rows < 1:
            raise ValueError(f"bands and rows must be >= 1, got bands={self.bands} rows={self.rows}")
        if self.bands * self.rows > self.num_perm:
            raise ValueError(
                f"bands x rows must not exceed num_perm: {self.bands} x {self.rows} = "
                f"{self.bands * self.rows} > {self.num_perm}"
            )
        for name in ("threshold", "containment_threshold", "containment_min_ratio"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        if self.shingles not in SHINGLE_SCHEMES:
            raise ValueError(f"shingles must be one of {', '.join(SHINGLE_SCHEMES)}, got {self.shingles!r}")
        for name, allowed in (
            ("signature", SIGNATURE_KINDS),
            ("shingle_filter", SHINGLE_FILTERS),
            ("cjk_verifier", CJK_VERIFIERS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        for name in ("frequent_share", "rare_share"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        if self.cjk_method not in CJK_METHODS:
            raise ValueError(f"cjk_method must be one of {', '.join(CJK_METHODS)}, got {self.cjk_method!r}")
        if not 1 <= self.min_bands <= self.bands:
            raise ValueError(f"min_bands must be in [1, bands={self.bands}], got {self.min_bands}")
        for name in (
            "word_shingle",
            "cjk_shingle",
            "min_tokens",
            "stats_min_stories",
            "batch_size",
            "shards",
            "page_size",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.replicas < 0 or self.task_retries < 0 or self.es_max_retries < 0:
            raise ValueError("replicas, task_retries and es_max_retries must be >= 0")
        if self.page_timeout < 0:
            raise ValueError(f"page_timeout must be >= 0 (0: no limit), got {self.page_timeout}")
        if self.max_page_bytes < 1024:
            raise ValueError(f"max_page_bytes must be >= 1024, got {self.max_page_bytes}")
        self._check_web()
        if self.index != self.index.lower() or not self.index or self.index.startswith(("-", "_")):
            raise ValueError(f"index must be a lower-case Elasticsearch name, got {self.index!r}")
        if self.corrections_index is not None and (
            self.corrections_index != self.corrections_index.lower()
            or not self.corrections_index
            or self.corrections_index.startswith(("-", "_"))
            or any(ch in self.corrections_index for ch in '*?,"<>|/\\ #:')
            or self.corrections_index == self.index
        ):
            raise ValueError(
                "corrections_index must be a lower-case Elasticsearch name other than the index, "
                f"got {self.corrections_index!r}"
            )

    def _check_web(self) -> None:
        """Validate the login settings (the hash values are never echoed)."""
        if not self.admin_user or len(self.admin_user) > 100 or not self.admin_user.isprintable():
            raise ValueError(f"admin_user must be 1-100 printable characters, got {self.admin_user[:100]!r}")
        if self.admin_password_hash is not None and not _PASSWORD_HASH.match(self.admin_password_hash):
            raise ValueError(
                "admin_password_hash is not a password hash like 'scrypt:32768:8:1$<salt>$<hex>'; "
                "make one with `newsfold hash-password`"
            )
        api_token_digests(self.api_token_hashes)
        for name in ("session_hours", "login_max_failures", "login_lockout_seconds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides) -> Settings:
        """Read settings from the environment (``os.environ`` by default).

        Args:
            environ: the mapping to read instead of ``os.environ``.
            **overrides: field values that win over the environment.

        Returns:
            The validated settings.

        Raises:
            ValueError: a value does not parse or is out of range; the
                message names the variable.
        """
        environ = os.environ if environ is None else environ
        values = {}
        for f in fields(cls):
            name = ENV_NAMES[f.name]
            raw = environ.get(name)
            if raw is None or raw == "":
                continue
            values[f.name] = _parse(name, raw, f.type)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def replace(self, **changes) -> Settings:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def signature_meta(self) -> dict:
        """The parameters that make two signatures comparable."""
        import datasketch

        return {
            "signature_version": SIGNATURE_VERSION,
            "datasketch": datasketch.__version__,
            "hash_scheme": HASH_SCHEME,
            "num_perm": self.num_perm,
            "seed": self.seed,
            "bands": self.bands,
            "rows": self.rows,
            "shingles": self.shingles,
            "word_shingle": self.word_shingle,
            "cjk_shingle": self.cjk_shingle,
            "cjk_method": self.cjk_method,
            "cleanup": self.cleanup,
            "signature": self.signature,
            "shingle_filter": self.shingle_filter,
        }


ENV_NAMES = {f.name: _UNPREFIXED.get(f.name, "NEWSFOLD_" + f.name.upper()) for f in fields(Settings)}


def _parse(name: str, raw: str, kind: str):
    kind = str(kind)
    try:
        if kind.startswith("bool"):
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError(raw)
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid {kind.split(' ')[0]}") from None
    return raw


def api_token_digests(value: str | None) -> dict[str, str]:
    """The API tokens of ``NEWSFOLD_API_TOKEN_HASHES`` as ``{sha256 hex digest: token name}``.

    Args:
        value: comma- or whitespace-separated ``name:sha256hex`` entries, or None.

    Returns:
        One entry per token; empty when ``value`` is empty.

    Raises:
        ValueError: an entry is malformed or a name is used twice (the message names the entry's position).
    """
    digests: dict[str, str] = {}
    names: set[str] = set()
    for position, entry in enumerate(re.split(r"[,\s]+", (value or "").strip()), start=1):
        if not entry:
            continue
        found = _TOKEN_ENTRY.match(entry)
        if not found:
            raise ValueError(
                f"api_token_hashes entry {position} must be 'name:<64 hex digits of the token's SHA-256>' "
                "(make one with `newsfold api-token NAME`)"
            )
        name, digest = found.groups()
        if name in names:
            raise ValueError(f"api_token_hashes uses the name {name!r} twice")
        names.add(name)
        digests[digest] = name
    return digests


def settings_env(settings: Settings) -> dict[str, str]:
    """Environment variables that reproduce ``settings`` in another process."""
    env = {}
    for f in fields(Settings):
        value = getattr(settings, f.name)
        if value is None:
            continue
        env[ENV_NAMES[f.name]] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    return env
