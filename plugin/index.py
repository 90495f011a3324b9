"""The articles index: its body (mapping + settings + _meta) and its alias.

The application reads and writes only through the alias
(``settings.index``); concrete indices are ``<alias>-<suffix>`` so a reindex
can build a new one and swap the alias atomically.
"""

from __future__ import annotations

import copy
import json
import time
from functools import lru_cache
from importlib import resources

from elasticsearch import BadRequestError, Elasticsearch, NotFoundError

from newsfold.plugin.settings import Settings


@lru_cache(maxsize=1)
def _mapping_file() -> dict:
    return json.loads(resources.files("newsfold.mappings").joinpath("articles.json").read_text("utf-8"))


@lru_cache(maxsize=1)
def _corrections_mapping_file() -> dict:
    return json.loads(resources.files("newsfold.mappings").joinpath("corrections.json").read_text("utf-8"))


def corrections_index(settings: Settings) -> str:
    """The corrections index: ``<alias>-corrections`` unless ``settings.corrections_index`` names another.

    It is a side index: never behind the articles alias, and a reindex keeps
    it (point the new build's settings at the live one's corrections index).
    """
    return settings.corrections_index or f"{settings.index}-corrections"


def corrections_index_body(settings: Settings) -> dict:
    """The body for ``indices.create`` of the corrections index (one small shard)."""
    body = copy.deepcopy(_corrections_mapping_file())
    body["settings"]["index"]["number_of_replicas"] = settings.replicas
    return body


def index_body(settings: Settings) -> dict:
    """The body for ``indices.create``: settings, mapping and ``_meta``.

    ``_meta`` records every parameter that makes signatures comparable
    (datasketch version and hash scheme, num_perm, seed, bands, rows, shingle
    lengths) and the mapping version.
    """
    body = copy.deepcopy(_mapping_file())
    body["settings"]["index"]["number_of_shards"] = settings.shards
    body["settings"]["index"]["number_of_replicas"] = settings.replicas
    body["mappings"]["_meta"].update(settings.signature_meta())
    return body


def new_index_name(settings: Settings) -> str:
    """A fresh concrete index name behind the alias."""
    return f"{settings.index}-{time.strftime('%Y%m%d%H%M%S')}-{time.time_ns() % 1_000_000:06d}"


def ensure_index(client: Elasticsearch, settings: Settings) -> str:
    """Create the index and alias if missing; check an existing one's ``_meta``.

    Returns:
        The concrete index name behind the alias.

    Raises:
        RuntimeError: the existing index was built with other signature
            parameters (its signatures are not comparable: reindex).
    """
    try:
        current = list(client.indices.get_alias(name=settings.index))
    except NotFoundError:
        current = []
    if not current:
        # A fixed first name: workers racing to create it get "already exists", not two indices.
        name = f"{settings.index}-000001"
        body = index_body(settings)
        try:
            client.indices.create(
                index=name,
                settings=body["settings"],
                mappings=body["mappings"],
                aliases={settings.index: {"is_write_index": True}},
            )
        except BadRequestError as exc:
            if exc.error != "resource_already_exists_exception":
                raise
        check_meta(client, settings, name)
        return name
    name = sorted(current)[-1]
    check_meta(client, settings, name)
    add_new_fields(client, name)
    return name


def add_new_fields(client: Elasticsearch, name: str) -> None:
    """Add fields a newer mapping defines to an existing index (additive changes need no reindex).

    Raises:
        elasticsearch.BadRequestError: a field changed its type; that needs ``newsfold reindex``.
    """
    properties = _mapping_file()["mappings"]["properties"]
    current = client.indices.get_mapping(index=name)[name]["mappings"].get("properties", {})
    missing = {field: spec for field, spec in properties.items() if field not in current}
    if missing:
        client.indices.put_mapping(index=name, properties=missing)


def check_meta(client: Elasticsearch, settings: Settings, name: str) -> None:
    """Raise when an index's signature parameters differ from the settings."""
    mapping = client.indices.get_mapping(index=name)
    meta = mapping[name]["mappings"].get("_meta", {})
    wanted = settings.signature_meta()
    diff = {k: (meta.get(k), v) for k, v in wanted.items() if meta.get(k) != v}
    if diff:
        detail = ", ".join(f"{k}: index has {a!r}, settings say {b!r}" for k, (a, b) in sorted(diff.items()))
        raise RuntimeError(f"index {name} was built with other signature parameters ({detail}); reindex it")


def drop_index(client: Elasticsearch, settings: Settings) -> None:
    """Delete every concrete index behind the alias and the side indices (for tests and fresh runs).

    The side indices are the corrections log (``plugin.corrections``) and the
    rejected pages (``<alias>-rejected``); missing ones are skipped.
    """
    try:
        names = list(client.indices.get_alias(name=settings.index))
    except NotFoundError:
        names = []
    for name in names:
        client.indices.delete(index=name)
    for side in (corrections_index(settings), f"{settings.index}-rejected"):
        client.options(ignore_status=404).indices.delete(index=side)


def current_index(client: Elasticsearch, settings: Settings) -> str | None:
    """The concrete index behind the alias (the write index when there are several), or None."""
    try:
        aliases = client.indices.get_alias(name=settings.index)
    except NotFoundError:
        return None
    names = sorted(aliases)
    writers = [n for n in names if aliases[n]["aliases"].get(settings.index, {}).get("is_write_index")]
    return (writers or names or [None])[-1]
