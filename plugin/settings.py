"""Settings: the detection, index and ingest settings, one validated, frozen dataclass read from the environment.

The environment variable of a field is given by ``ENV_NAMES`` (``NEWSFOLD_``
plus the upper-cased field name, except the well-known server URLs); the fields
are grouped by concern (``CONCERNS``) and ``MUST_SET`` names those a deployment
must set. The web's own settings (login, cookies, tokens, pages) are
``newsfold.web.config.WebSettings``; ``newsfold.settings_registry`` derives every
variable of both, and docs/configuration.md is their table.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import InputError
from newsfold.plugin.page_limits import DEFAULT_MAX_PAGE_BYTES, MarkupLimits

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

HASH_SCHEME = "affine32"  # datasketch >= 2.0 scheme; recorded in the index _meta
SIGNATURE_VERSION = 1  # bump when shingling or signing changes meaning
CJK_METHODS = ("ngram", "periods")
SHINGLE_SCHEMES = ("words", "stopwords")  # the names of plugin.sign.shingles.SCHEMES (a test checks they agree)
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
    # the kind-naming fields keep their historical short variable names
    "shingle_scheme": "NEWSFOLD_SHINGLES",
    "signature_kind": "NEWSFOLD_SIGNATURE",
}


#: fields with a least value -> (that value, its unit in the message)
_LEAST = {
    "num_perm": (16, ""),
    **dict.fromkeys(
        ("word_shingle", "cjk_shingle", "min_tokens", "stats_min_stories", "batch_size", "shards"), (1, "")
    ),
    **dict.fromkeys(("max_attributes", "max_depth", "max_elements", "max_attribute_chars"), (1, "")),
    "heartbeat_ttl": (1, " second"),
    "page_timeout": (0, " (0: no limit)"),
    "max_page_bytes": (1024, ""),
}
#: a duration setting: 0 (off) or a count of seconds, minutes, hours or days (Elasticsearch's units)
DURATION = r"0|[1-9]\d*(s|m|h|d)"
#: a size setting: 0 (off) or a count of bytes, kilo-, mega-, giga- or terabytes (Elasticsearch's units)
SIZE = r"0|[1-9]\d*(b|kb|mb|gb|tb)"
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: passwords and secrets that examples and old versions shipped, refused at start wherever a secret is set
#: (compared case-insensitively): a copied example must never give a working credential
PLACEHOLDER_SECRETS = frozenset({"change-me-please", "change-me-too", "change-me", "changeme", "dev-only-change-me"})


def is_placeholder(secret: str | None) -> bool:
    """Whether ``secret`` is one of :data:`PLACEHOLDER_SECRETS`."""
    return secret is not None and secret.strip().lower() in PLACEHOLDER_SECRETS


def seconds(duration: str) -> float:
    """A duration setting in seconds (0 when it is off)."""
    unit = duration.lstrip("0123456789")
    return float(int(duration[: len(duration) - len(unit)]) * _SECONDS[unit]) if unit else 0.0


def size_bytes(size: str) -> int:
    """A size setting (:data:`SIZE`) in bytes (0 when it is off); 1kb is 1,024 bytes."""
    unit = size.lstrip("0123456789")
    return int(size[: len(size) - len(unit)]) * 1024 ** ("b", "kb", "mb", "gb", "tb").index(unit) if unit else 0


#: fields that are a share, in (0, 1]
_SHARES = ("threshold", "containment_threshold", "containment_min_ratio", "frequent_share", "rare_share")


def _choices() -> dict[str, tuple[str, ...]]:
    """Fields that name one of a few kinds -> the kinds, read when checked (a new kind is added to its tuple)."""
    return {
        "shingle_scheme": SHINGLE_SCHEMES,
        "signature_kind": SIGNATURE_KINDS,
        "shingle_filter": SHINGLE_FILTERS,
        "cjk_verifier": CJK_VERIFIERS,
        "cjk_method": CJK_METHODS,
    }


@dataclass(frozen=True)
class Settings:
    """The settings of detection, the index and ingest, validated on construction.

    The fields stand in the order of their concerns (:data:`CONCERNS`): a new field goes with its kind.
    """

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
    refresh_interval: str = "1s"  # of a new index and its side indices; ingest waits for one refresh
    corrections_index: str | None = None  # default: <index>-corrections
    rollover: str = "30d"  # age of the write index at which a new one starts behind the alias; "0": never by age
    rollover_size: str = "50gb"  # size of a primary shard of the write index at which a new one starts; "0": never
    lookup_window: str = "90d"  # duplicate lookup searches the indices that overlap this last period; "0": all
    presence: bool = False  # the band keys' presence pre-filter in Redis (newsfold.indexer.presence)
    presence_size: str = "128mb"  # its Bloom filter per concrete index (at most 511mb)
    # signatures
    num_perm: int = 256
    seed: int = 1
    bands: int = 128
    rows: int = 2
    min_bands: int = 2
    shingle_scheme: str = "stopwords"
    word_shingle: int = 2
    cjk_shingle: int = 4
    signature_kind: str = "minhash"
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
    task_retries: int = 5
    read_roots: str | None = None  # folders (os.pathsep-separated) workers may read page files from
    outage_wait: float = 300.0  # seconds a job's coordinator waits for Redis to come back
    heartbeat_ttl: float = 10.0  # seconds a worker's heartbeat on a unit of a job outlives its last renewal
    # limits on hostile pages
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES  # raw bytes, and bytes after inflating (plugin.page_limits)
    max_attributes: int = MarkupLimits.max_attributes  # on one element, checked before parsing
    max_depth: int = MarkupLimits.max_depth  # elements open inside each other
    max_elements: int = MarkupLimits.max_elements
    max_attribute_chars: int = MarkupLimits.max_attribute_chars  # a longer attribute value is emptied before parsing
    page_timeout: float = 60.0

    def __post_init__(self) -> None:
        self._check_bounds()
        self._check_bands()
        self._check_index_names()
        if is_placeholder(self.elasticsearch_password):
            raise InputError(
                "elasticsearch_password (ELASTICSEARCH_PASSWORD; ELASTIC_PASSWORD in docker compose's .env) is an "
                "example's placeholder: set a real password, e.g. the output of "
                "`python3 -c 'import secrets; print(secrets.token_urlsafe(24))'`"
            )

    def _check_bounds(self) -> None:
        """One check per kind of field, read from the tables: least values, shares, choices."""
        for name, (least, unit) in _LEAST.items():
            if getattr(self, name) < least:
                raise InputError(f"{name} must be >= {least}{unit}, got {getattr(self, name)}")
        for name in _SHARES:
            if not 0.0 < getattr(self, name) <= 1.0:
                raise InputError(f"{name} must be in (0, 1], got {getattr(self, name)}")
        for name, allowed in _choices().items():
            if getattr(self, name) not in allowed:
                raise InputError(f"{name} must be one of {', '.join(allowed)}, got {getattr(self, name)!r}")
        if self.replicas < 0 or self.task_retries < 0 or self.es_max_retries < 0:
            raise InputError("replicas, task_retries and es_max_retries must be >= 0")
        for name in ("rollover", "lookup_window"):
            if not re.fullmatch(DURATION, str(getattr(self, name))):
                raise InputError(f"{name} must be 0 or a time such as 30d, 12h or 90m, got {getattr(self, name)!r}")
        if not re.fullmatch(SIZE, str(self.rollover_size)):
            raise InputError(f"rollover_size must be 0 or a size such as 50gb or 500mb, got {self.rollover_size!r}")
        if not (re.fullmatch(SIZE, str(self.presence_size)) and 1024 <= size_bytes(self.presence_size) < 2**29):
            raise InputError(
                f"presence_size must be a size from 1kb to 511mb, such as 128mb, got {self.presence_size!r}"
            )
        if not re.fullmatch(r"[1-9]\d*(ms|s|m)", str(self.refresh_interval)):
            raise InputError(
                f"refresh_interval must be a positive Elasticsearch time such as 1s or 200ms, "
                f"got {self.refresh_interval!r} (-1 is refused: ingest waits for a refresh)"
            )

    def _check_bands(self) -> None:
        """The LSH bands fit the signature, and a lookup asks for at most all of them."""
        if self.bands < 1 or self.rows < 1:
            raise InputError(f"bands and rows must be >= 1, got bands={self.bands} rows={self.rows}")
        if self.bands * self.rows > self.num_perm:
            raise InputError(
                f"bands x rows must not exceed num_perm: {self.bands} x {self.rows} = "
                f"{self.bands * self.rows} > {self.num_perm}"
            )
        if not 1 <= self.min_bands <= self.bands:
            raise InputError(f"min_bands must be in [1, bands={self.bands}], got {self.min_bands}")

    def _check_index_names(self) -> None:
        """The index, and the corrections index when named, are lower-case Elasticsearch names, not the same."""
        if self.index != self.index.lower() or not self.index or self.index.startswith(("-", "_")):
            raise InputError(f"index must be a lower-case Elasticsearch name, got {self.index!r}")
        if self.corrections_index is not None and (
            self.corrections_index != self.corrections_index.lower()
            or not self.corrections_index
            or self.corrections_index.startswith(("-", "_"))
            or any(ch in self.corrections_index for ch in '*?,"<>|/\\ #:')
            or self.corrections_index == self.index
        ):
            raise InputError(
                "corrections_index must be a lower-case Elasticsearch name other than the index, "
                f"got {self.corrections_index!r}"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
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
        return cls(**read_env(cls, environ, ENV_NAMES, overrides))

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @property
    def markup_limits(self) -> MarkupLimits:
        """How complex a page's markup may be (checked before it is parsed)."""
        return MarkupLimits(self.max_attributes, self.max_depth, self.max_elements, self.max_attribute_chars)

    def signature_meta(self) -> dict[str, Any]:
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
            "shingles": self.shingle_scheme,  # _meta keys are stored in indexes: never renamed
            "word_shingle": self.word_shingle,
            "cjk_shingle": self.cjk_shingle,
            "cjk_method": self.cjk_method,
            "cleanup": self.cleanup,
            "signature": self.signature_kind,
            "shingle_filter": self.shingle_filter,
        }


ENV_NAMES = {f.name: _UNPREFIXED.get(f.name, "NEWSFOLD_" + f.name.upper()) for f in fields(Settings)}


#: the concerns of the fields, each by its first field (the fields stand in this order)
CONCERNS = {
    "elasticsearch_url": "Servers",
    "index": "The index",
    "num_perm": "Signatures",
    "cleanup": "Extraction",
    "threshold": "Decisions",
    "archive_dir": "Ingest and workers",
    "max_page_bytes": "Limits on hostile pages",
}
#: the fields a deployment must set (unset, ``newsfold demo`` and ``cluster`` start embedded stand-ins instead)
MUST_SET = ("elasticsearch_url", "redis_url")


def read_env(
    cls: type[DataclassInstance],
    environ: Mapping[str, str] | None,
    names: Mapping[str, str],
    overrides: Mapping[str, Any],
) -> dict[str, Any]:
    """The field values of dataclass ``cls`` found in the environment, parsed by their types, then ``overrides``.

    Raises:
        ValueError: a value does not parse; the message names the variable.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for f in fields(cls):
        name = names[f.name]
        raw = environ.get(name)
        if raw is None or raw == "":
            continue
        values[f.name] = _parse(name, raw, f.type)
    values.update({k: v for k, v in overrides.items() if v is not None})
    return values


def _parse(name: str, raw: str, kind: object) -> bool | int | float | str:
    kind = str(kind)
    try:
        if kind.startswith("bool"):
            lowered = raw.strip().lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise InputError(raw)
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
    except ValueError:
        raise InputError(f"{name}={raw!r} is not a valid {kind.split(' ')[0]}") from None
    return raw


def settings_env(settings: Settings) -> dict[str, str]:
    """Environment variables that reproduce ``settings`` in another process."""
    env = {}
    for f in fields(Settings):
        value = getattr(settings, f.name)
        if value is None:
            continue
        env[ENV_NAMES[f.name]] = ("1" if value else "0") if isinstance(value, bool) else str(value)
    return env
