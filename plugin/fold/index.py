"""Index bodies: the fold fields as a component template, newsfold's own index, and checking an index's ``_meta``.

newsfold's fields (``plugin.fold.document.FOLD_FIELDS``) are one component
template (:func:`component_template`) that a host composes into its own index
template; newsfold's own index is the same fields plus the article fields of
``mappings/articles.json``. Every index records the signature parameters in
``_meta.newsfold``; newsfold refuses to write into an index whose parameters
differ (its signatures would not be comparable).

The application reads and writes only through the alias
(``settings.index``); concrete indices are ``<alias>-<suffix>`` so a reindex
can build a new one and swap the alias atomically.

Pure except the functions that take a client (which import ``elasticsearch``
when called).
"""

from __future__ import annotations

import copy
import json
import time
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import IndexMismatchError, InputError, check_type, refusals_as_server_errors
from newsfold.plugin.fold.by_id import is_legacy
from newsfold.plugin.fold.document import FOLD, FOLD_FIELDS, fold_mapping
from newsfold.plugin.settings import Settings

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from newsfold.plugin.fold.presence import Presence

#: the layout of the fold fields; recorded in ``_meta.newsfold`` and checked like the signature parameters
FOLD_LAYOUT = 9
#: older layouts the current one only adds fold fields to (3 added ``passages``, 4 ``founding``, 5 the
#: provenance fields ``wire`` and ``origin_*``, 6 what provenance believes of a page: ``wire_by``, ``domain``,
#: ``believed_time``, ``archive_aged``, ``first_seen``; 7 ``committed_by``; 8 ``bands``, the signature stored
#: once as band tokens; 9 no field: a story's commit is its mark in ``<index>-founding``, so ``founding`` stays on
#: a committed founder, which a worker of layout 8 would read as pending): an index recording one is brought up to
#: date in place (an additive ``put_mapping``) the first time newsfold checks it, never refused. One upgraded from
#: before 8 records ``legacy_bands``: its
#: older pages keep ``band_keys`` and ``signature``, which lookups then ask and read too, until
#: ``newsfold reindex`` (or a host's re-ingest) rewrites them
ADDITIVE_FROM = (2, 3, 4, 5, 6, 7, 8)
_META_CACHE_SECONDS = 60.0
_checked: dict[tuple[int, str, str], float] = {}


@lru_cache(maxsize=4)
def mapping_file(name: str) -> dict[str, Any]:
    """An index body of ``mappings/`` (``articles``, ``corrections``, ``rejected``), read once; copy before changing."""
    text = resources.files("newsfold.mappings").joinpath(f"{name}.json").read_text("utf-8")
    mapping: dict[str, Any] = json.loads(text)
    return mapping


def corrections_index(settings: Settings) -> str:
    """The corrections index: ``<alias>-corrections`` unless ``settings.corrections_index`` names another.

    It is a side index: never behind the articles alias, and a reindex keeps
    it (point the new build's settings at the live one's corrections index).
    """
    return settings.corrections_index or f"{settings.index}-corrections"


def founding_index(settings: Settings) -> str:
    """The founding index, the mark of each story committed or claimed (``plugin.fold.founding``): beside the
    corrections index, ``<alias>-founding`` (``<name>-founding`` for a corrections index not named
    ``...-corrections``). A side index read by id; a reindex that keeps the corrections index keeps it too, so the
    stories of a rebuilt index stay committed once it is behind the alias."""
    name = corrections_index(settings)
    return name.removesuffix("-corrections") + "-founding"


def ensure_side_index(client: Elasticsearch, settings: Settings, name: str, mapping: str) -> str:
    """Create the side index ``name`` with the body of ``mappings/<mapping>.json`` if it is missing; returns
    ``name``. Asked on every call (a ``HEAD``, answered from the cluster state), never remembered: a write into
    an index deleted meanwhile would create it with a mapping of Elasticsearch's guessing."""
    from elasticsearch import BadRequestError

    if not client.indices.exists(index=name):
        body = side_index_body(mapping, settings)
        try:
            client.indices.create(index=name, settings=body["settings"], mappings=body["mappings"])
        except BadRequestError as exc:
            if exc.error != "resource_already_exists_exception":  # another worker made it first
                raise
    return name


def side_index_body(name: str, settings: Settings) -> dict[str, Any]:
    """The body for ``indices.create`` of a side index of ``mappings/`` (``corrections``, ``rejected``): one small
    shard, the replicas and refresh interval of ``settings`` (a correction is logged with ``refresh=wait_for``)."""
    body = copy.deepcopy(mapping_file(name))
    body["settings"]["index"]["number_of_replicas"] = settings.replicas
    body["settings"]["index"]["refresh_interval"] = settings.refresh_interval
    return body


def corrections_index_body(settings: Settings) -> dict[str, Any]:
    """The body for ``indices.create`` of the corrections index (:func:`side_index_body`)."""
    return side_index_body("corrections", settings)


def corrections_index_body_fields() -> dict[str, Any]:
    """The fields of the corrections mapping (``mappings/corrections.json``)."""
    return dict(mapping_file("corrections")["mappings"]["properties"])


def fold_meta(settings: Settings) -> dict[str, Any]:
    """What ``_meta.newsfold`` of an index records: the fold-field layout and every signature parameter."""
    return {"fold_layout": FOLD_LAYOUT, **settings.signature_meta()}


def component_template(settings: Settings) -> dict[str, Any]:
    """The body of an Elasticsearch component template holding newsfold's fields.

    A host composes it into its own index template::

        client.cluster.put_component_template(name="newsfold", **component_template(settings))
        client.indices.put_index_template(name="news", index_patterns=["news-*"],
                                          composed_of=["newsfold"], template={"mappings": {...}})

    Returns:
        ``{"template": {"mappings": {"_meta": {"newsfold": ...}, "properties": {"newsfold": ...}}}, "_meta": ...}``:
        one object field ``newsfold`` holding the fold fields (``plugin.fold.document.FOLD_FIELDS``).
    """
    meta = fold_meta(settings)
    return {
        "template": {"mappings": {"_meta": {"newsfold": meta}, "properties": fold_mapping()}},
        "_meta": {"description": "newsfold fold fields (docs/embedding.md)", "newsfold": meta},
    }


def index_body(settings: Settings) -> dict[str, Any]:
    """The body for ``indices.create`` of newsfold's own index: settings, mapping and ``_meta``.

    The mapping is the article fields of ``mappings/articles.json`` plus the
    fold fields of :func:`component_template`; ``_meta.newsfold`` records
    every parameter that makes signatures comparable (datasketch version and
    hash scheme, num_perm, seed, bands, rows, shingle lengths).
    """
    body = copy.deepcopy(mapping_file("articles"))
    body["settings"]["index"]["number_of_shards"] = settings.shards
    body["settings"]["index"]["number_of_replicas"] = settings.replicas
    body["settings"]["index"]["refresh_interval"] = settings.refresh_interval
    body["mappings"]["properties"].update(fold_mapping())
    body["mappings"]["_meta"]["newsfold"] = fold_meta(settings)
    return body


def with_period(body: dict[str, Any], start_ms: int, end_ms: int | None = None) -> dict[str, Any]:
    """``body`` (from :func:`index_body`) for an index that rebuilds a period: it records the period's start (and
    its end, for a period that is over) in ``_meta.newsfold``, so the lookup window, the rollover age and the
    order of the indices behind the alias are those of the period, not of the rebuild (``plugin.fold.by_id``).

    Raises:
        InputError: ``body`` holds no newsfold record at ``mappings._meta.newsfold`` (a host's own body: add
            ``component_template(settings)["template"]["mappings"]["_meta"]``), or an argument is of the wrong type.
    """
    check_type(body, dict, "body")
    check_type(start_ms, int, "start_ms")
    check_type(end_ms, int, "end_ms", optional=True)
    meta: Any = body
    for key in ("mappings", "_meta", "newsfold"):
        meta = meta.get(key) if isinstance(meta, dict) else None
    if not isinstance(meta, dict):
        raise InputError(
            "body has no newsfold record at mappings._meta.newsfold: pass index_body(settings), or your own "
            "index body with component_template(settings)['template']['mappings']['_meta'] merged into its mappings"
        )
    meta["period_start"] = start_ms
    if end_ms:
        meta["period_end"] = end_ms
    return body


def new_index_name(settings: Settings) -> str:
    """A fresh concrete index name behind the alias."""
    return f"{settings.index}-{time.strftime('%Y%m%d%H%M%S')}-{time.time_ns() % 1_000_000:06d}"


def create_index(
    client: Elasticsearch, name: str, body: dict[str, Any], *, aliases: dict[str, Any] | None = None
) -> None:
    """Create an index, or, when another process created it first, wait until its primary shards are active.

    ``indices.create`` returns once the primaries are started; a process that
    lost the race to create gets "already exists" at once, and its first
    search could otherwise fail with ``no_shard_available_action_exception``.
    """
    from elasticsearch import BadRequestError

    try:
        client.indices.create(index=name, settings=body["settings"], mappings=body["mappings"], aliases=aliases)
    except BadRequestError as exc:
        if exc.error != "resource_already_exists_exception":
            raise
        wait_until_active(client, name)


def wait_until_active(client: Elasticsearch, name: str, timeout: str = "30s") -> None:
    """Wait (bounded) until every primary shard of ``name`` is active (cluster health yellow or green)."""
    client.options(ignore_status=408).cluster.health(index=name, wait_for_status="yellow", timeout=timeout)


@refusals_as_server_errors("ensure_index")
def ensure_index(client: Elasticsearch, settings: Settings, *, presence: Presence | None = None) -> str:
    """Create newsfold's own index and alias if missing; check an existing one's ``_meta``.

    With ``presence`` (``plugin.fold.presence``), the first index's filter is
    marked valid before the index is created.

    Returns:
        The concrete index name behind the alias.

    Raises:
        IndexMismatchError: the existing index was built with other signature
            parameters (its signatures are not comparable: reindex).
    """
    from elasticsearch import NotFoundError

    try:
        current = list(client.indices.get_alias(name=settings.index))
    except NotFoundError:
        current = []
    if not current:
        # A fixed first name: workers racing to create it get "already exists", not two indices.
        name = f"{settings.index}-000001"
        if presence is not None:
            presence.mark(name)
        create_index(client, name, index_body(settings), aliases={settings.index: {"is_write_index": True}})
        check_meta(client, settings, name)
        return name
    name = sorted(current)[-1]
    # Another process may have just created it: its alias is in the cluster state before its primaries start.
    wait_until_active(client, name)
    check_meta(client, settings, name)
    add_new_fields(client, name)
    return name


def add_new_fields(client: Elasticsearch, name: str) -> None:
    """Add fields a newer mapping defines to an existing index (additive changes need no reindex).

    Raises:
        elasticsearch.BadRequestError: a field changed its type; that needs ``newsfold reindex``.
    """
    current = client.indices.get_mapping(index=name)[name]["mappings"].get("properties", {})
    missing = {f: spec for f, spec in mapping_file("articles")["mappings"]["properties"].items() if f not in current}
    missing.update(_missing_fold_fields(current))
    if missing:
        client.indices.put_mapping(index=name, properties=missing)


def _missing_fold_fields(current: dict[str, Any]) -> dict[str, Any]:
    """The part of the ``newsfold`` object mapping an index lacks (empty when it has every fold field)."""
    have = (current.get(FOLD) or {}).get("properties", {})
    lacking = {f: spec for f, spec in FOLD_FIELDS.items() if f not in have}
    return {FOLD: {"properties": lacking}} if lacking else {}


@refusals_as_server_errors("ensure_fold_fields")
def ensure_fold_fields(client: Elasticsearch, index: str, settings: Settings) -> list[str]:
    """Add newsfold's fields and ``_meta.newsfold`` to a host index (or every index behind an alias) that exists.

    The way to adopt newsfold in an index created before its template held
    ``component_template``: additive ``put_mapping`` calls, no reindex. The
    host's own ``_meta`` keys are kept. An index that already records other
    signature parameters is refused.

    Returns:
        The concrete index names updated.

    Raises:
        IndexMismatchError: a host field has one of newsfold's names with another
            mapping, or the recorded signature parameters differ.
    """
    mappings = client.indices.get_mapping(index=index)
    wanted = fold_meta(settings)
    for name, body in sorted(mappings.items()):
        current = body["mappings"].get("properties", {})
        mine = current.get(FOLD)
        have = (mine or {}).get("properties", {})
        clash = sorted(f for f, spec in FOLD_FIELDS.items() if f in have and have[f].get("type") != spec["type"])
        if (mine is not None and "properties" not in mine) or clash:
            raise IndexMismatchError(
                f"index {name} already has a field {FOLD!r} that is not newsfold's "
                f"({', '.join(clash) or 'not an object'}): newsfold's fields live in that object"
            )
        meta = dict(body["mappings"].get("_meta") or {})
        had = meta.get("newsfold")
        if had not in (None, wanted):
            check_meta(client, settings, name)
        meta["newsfold"] = _with_layout(had, wanted) if isinstance(had, dict) else wanted
        missing = _missing_fold_fields(current) if mine is not None else fold_mapping()
        client.indices.put_mapping(index=name, properties=missing, meta=meta)
    return sorted(mappings)


def check_meta(client: Elasticsearch, settings: Settings, name: str) -> None:
    """Raise when an index's signature parameters (``_meta.newsfold``) differ from the settings.

    An index at an older fold layout that only lacks fields (:data:`ADDITIVE_FROM`) is upgraded instead.
    """
    mapping = client.indices.get_mapping(index=name)
    for concrete, body in sorted(mapping.items()):
        meta = (body["mappings"].get("_meta") or {}).get("newsfold")
        if meta is None:
            raise IndexMismatchError(
                f"index {concrete} has no newsfold fields (_meta.newsfold is missing): compose "
                "component_template() into its index template, or call ensure_fold_fields() (docs/embedding.md)"
            )
        wanted = fold_meta(settings)
        diff = {k: (meta.get(k), v) for k, v in wanted.items() if meta.get(k) != v}
        if set(diff) == {"fold_layout"} and meta.get("fold_layout") in ADDITIVE_FROM:
            _upgrade_layout(client, concrete, body["mappings"])
            continue
        if diff:
            detail = ", ".join(f"{k}: index has {a!r}, settings say {b!r}" for k, (a, b) in sorted(diff.items()))
            raise IndexMismatchError(
                f"index {concrete} was built with other signature parameters ({detail}); reindex it"
            )


def _upgrade_layout(client: Elasticsearch, name: str, mappings: dict[str, Any]) -> None:
    """Add the fold fields a newer layout defines to an index and record the layout (other ``_meta`` kept)."""
    meta = dict(mappings.get("_meta") or {})
    meta["newsfold"] = _with_layout(meta["newsfold"], {"fold_layout": FOLD_LAYOUT})
    missing = _missing_fold_fields(mappings.get("properties", {}))
    client.indices.put_mapping(index=name, meta=meta, properties=missing or None)  # None: the parameter is left out


def _with_layout(had: dict[str, Any], wanted: dict[str, Any]) -> dict[str, Any]:
    """An index's ``_meta.newsfold`` brought to ``wanted``, keeping what else it records (its period), and
    marking an index upgraded from before :data:`BANDS_LAYOUT` as possibly holding older pages."""
    meta = {**had, **wanted}
    if is_legacy(had):
        meta["legacy_bands"] = True
    return meta


def check_meta_cached(client: Elasticsearch, settings: Settings, name: str) -> None:
    """:func:`check_meta` at most once a minute per client, index and signature settings (the ingest path calls it
    per batch; other settings on the same client and index are checked on their own)."""
    key = (id(client), name, repr(sorted(settings.signature_meta().items())))
    now = time.monotonic()
    if now - _checked.get(key, -_META_CACHE_SECONDS) < _META_CACHE_SECONDS:
        return
    check_meta(client, settings, name)
    _checked[key] = now


def drop_index(client: Elasticsearch, settings: Settings) -> None:
    """Delete every concrete index behind the alias and the side indices (for tests and fresh runs).

    The side indices are the corrections log (``plugin.edit.corrections``), the
    rejected pages (``<alias>-rejected``) and the founding marks (``<alias>-founding``); missing ones are skipped.
    """
    from elasticsearch import NotFoundError

    try:
        names = list(client.indices.get_alias(name=settings.index))
    except NotFoundError:
        names = []
    for name in names:
        client.indices.delete(index=name)
    for side in (corrections_index(settings), f"{settings.index}-rejected", founding_index(settings)):
        client.options(ignore_status=404).indices.delete(index=side)


def current_index(client: Elasticsearch, settings: Settings) -> str | None:
    """The concrete index behind the alias (the write index when there are several), or None."""
    from elasticsearch import NotFoundError

    try:
        aliases = client.indices.get_alias(name=settings.index)
    except NotFoundError:
        return None
    names = sorted(aliases)
    writers = [n for n in names if aliases[n]["aliases"].get(settings.index, {}).get("is_write_index")]
    candidates = writers or names
    return candidates[-1] if candidates else None
