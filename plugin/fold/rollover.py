"""Time-based indices behind the alias: a new write index by age or size, and the window duplicate lookup searches.

newsfold's own index is an alias over ``<alias>-000001``, ``<alias>-000002``...
The write index rolls over with Elasticsearch's rollover API when it is older
than ``settings.rollover`` or a primary shard is larger than
``settings.rollover_size``; the alias keeps every index for reading, so
searches, story pages, the admin and feeds see them all. Duplicate lookup
searches only the indices that hold pages ingested in the last
``settings.lookup_window`` (:func:`lookup_indices`); the reconcile step only the
write index and the one before it. Old indices are force-merged by
``newsfold maintain`` (:func:`merge_old_indices`).

A page whose story's copies all sit in indices older than the window founds a
new story (docs/scaling.md says how often that happens in the dev set).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import check_type, refusals_as_server_errors
from newsfold.plugin.fold.by_id import Behind, behind
from newsfold.plugin.fold.index import create_index, index_body
from newsfold.plugin.settings import Settings, seconds

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from newsfold.plugin.fold.presence import Presence

#: seconds between two checks of one alias by one process (:func:`roll_over_when_due`)
CHECK_EVERY = 60.0
_checked: dict[tuple[int, str], float] = {}
#: seconds after a rollover during which a batch may still be writing into the index before (reconcile looks there)
ROLLOVER_GRACE = 600.0


def next_name(index: str) -> str:
    """The name of the index after ``index``: its trailing number plus one, as Elasticsearch's rollover names it."""
    m = re.fullmatch(r"(.*?)(\d+)", index)
    if m is None:
        return f"{index}-000002"
    prefix, digits = m.groups()
    return f"{prefix}{int(digits) + 1:0{len(digits)}d}"


def conditions(settings: Settings) -> dict[str, str]:
    """The rollover conditions the settings ask for (empty: never by age or size)."""
    out = {}
    if seconds(settings.rollover):
        out["max_age"] = settings.rollover
    if settings.rollover_size != "0":
        out["max_primary_shard_size"] = settings.rollover_size
    return out


@refusals_as_server_errors("roll_over")
def roll_over(
    client: Elasticsearch,
    settings: Settings,
    *,
    index: str | None = None,
    force: bool = False,
    presence: Presence | None = None,
) -> str | None:
    """Start a new write index behind the alias when the current one is due (``settings.rollover``, ``rollover_size``).

    Safe to call from many workers at once: the new index has a fixed name
    (:func:`next_name`), so two that try at once make one new index. Each of
    newsfold's workers calls it at most once a minute
    (:func:`roll_over_when_due`); a host with its own rollover (ILM, a data
    stream) never needs it.

    Args:
        client: an Elasticsearch client.
        settings: the settings the index was created with.
        index: a host's alias (default ``settings.index``); its new index gets the host's index template.
        force: roll over now, whatever the conditions.
        presence: the band keys' filter (``plugin.fold.presence``): the new index's is marked valid before the
            alias moves to it (when nothing rolls over, the mark of a name no index has yet is harmless).

    Returns:
        The new write index, or None when nothing was due (or another process rolled it over first).

    Raises:
        InputTypeError: ``settings``, ``index`` or ``force`` is of the wrong type (the message names it).
        ServerError: Elasticsearch refused the rollover.
    """
    from elasticsearch import BadRequestError

    check_type(settings, Settings, "settings")
    check_type(index, str, "index", optional=True)
    check_type(force, bool, "force")
    alias = index or settings.index
    wanted = conditions(settings)
    if not wanted and not force:
        return None
    where = behind(client, alias)
    new = next_name(where.write)
    if presence is not None:
        presence.mark(new)
    body = index_body(settings) if alias == settings.index else None  # a host index gets its own template
    extra: dict[str, Any] = {"settings": body["settings"], "mappings": body["mappings"]} if body else {}
    try:
        res = client.indices.rollover(alias=alias, new_index=new, conditions=None if force else wanted, **extra)
        return new if res["rolled_over"] else None
    except BadRequestError as exc:
        if exc.error == "resource_already_exists_exception":
            return None  # another process rolled it over first
        if "no handler found" not in str(exc):
            raise
    return _roll_by_hand(client, alias, where, new, body, due=force or _due_by_age(where, settings))


def _due_by_age(where: Behind, settings: Settings) -> bool:
    age = seconds(settings.rollover)
    created = dict(zip(where.indices, where.created, strict=True)).get(where.write, 0)
    return bool(age) and time.time() * 1000 - created >= age * 1000


def _roll_by_hand(
    client: Elasticsearch, alias: str, where: Behind, new: str, body: dict[str, Any] | None, *, due: bool
) -> str | None:
    """The rollover's steps for a server without its API (the stand-in): by age only."""
    if not due:
        return None
    if body is None:
        client.options(ignore_status=400).indices.create(index=new)
    else:
        create_index(client, new, body)  # two processes at once: one creates it, the other waits for it
    client.indices.update_aliases(
        actions=[
            {"add": {"index": where.write, "alias": alias, "is_write_index": False}},
            {"add": {"index": new, "alias": alias, "is_write_index": True}},
        ]
    )
    return new


def roll_over_when_due(
    client: Elasticsearch,
    settings: Settings,
    *,
    clock: Callable[[], float] = time.monotonic,
    presence: Presence | None = None,
) -> None:
    """:func:`roll_over` at most every :data:`CHECK_EVERY` seconds per process and alias (workers call it per batch)."""
    key = (id(client), settings.index)
    now = clock()
    if now - _checked.get(key, -CHECK_EVERY) < CHECK_EVERY:
        return
    _checked[key] = now
    roll_over(client, settings, presence=presence)


@dataclass(frozen=True)
class Scope:
    """The concrete indices a band lookup searches, and whether any may hold pages of fold layout 7 or before
    (the lookup then also asks their band keys, ``plugin.fold.lookups.band_lookup``)."""

    indices: tuple[str, ...]
    legacy: bool = False

    @classmethod
    def of(cls, where: Behind, indices: tuple[str, ...]) -> Scope:
        return cls(indices, any(i in where.legacy for i in indices))


def lookup_scope(client: Elasticsearch, settings: Settings) -> Scope:
    """Where duplicate lookup searches: the indices holding pages ingested within ``settings.lookup_window``."""
    where = behind(client, settings.index)
    return Scope.of(where, where.within(seconds(settings.lookup_window), int(time.time() * 1000)))


def lookup_indices(client: Elasticsearch, settings: Settings) -> tuple[str, ...]:
    """The indices of :func:`lookup_scope`."""
    return lookup_scope(client, settings).indices


def reconcile_scope(client: Elasticsearch, settings: Settings) -> Scope:
    """Where the reconcile step searches: where a racing writer's pages can be.

    That is the write index; for :data:`ROLLOVER_GRACE` seconds after a rollover
    also the index before it (a batch that started before the rollover wrote
    there), unless it has left the lookup window.
    """
    where = behind(client, settings.index)
    now = int(time.time() * 1000)
    created = dict(zip(where.indices, where.created, strict=True)).get(where.write, 0)
    if now - created > ROLLOVER_GRACE * 1000:
        return Scope.of(where, (where.write,))
    window = where.within(seconds(settings.lookup_window), now)
    return Scope.of(where, tuple(i for i in where.recent() if i in window))


def reconcile_indices(client: Elasticsearch, settings: Settings) -> tuple[str, ...]:
    """The indices of :func:`reconcile_scope`."""
    return reconcile_scope(client, settings).indices


@dataclass(frozen=True)
class IndexFacts:
    """One index behind the alias, as the admin and ``newsfold maintain`` show it."""

    name: str
    created_ms: int
    docs: int
    bytes: int
    segments: int
    write: bool

    @property
    def since(self) -> str:
        """When the index was created (it holds the pages ingested from then on), ISO 8601 in UTC."""
        return dt.datetime.fromtimestamp(self.created_ms / 1000, dt.UTC).isoformat(timespec="seconds")


def index_facts(client: Elasticsearch, alias: str) -> list[IndexFacts]:
    """Every index behind ``alias``, newest first, with its document count, size and segment count."""
    where = behind(client, alias)
    stats = client.indices.stats(index=alias, metric=["docs", "store", "segments"])["indices"]
    out = []
    for name, created in zip(where.indices, where.created, strict=True):
        primaries = (stats.get(name) or {}).get("primaries") or {}
        out.append(
            IndexFacts(
                name,
                created,
                int((primaries.get("docs") or {}).get("count") or 0),
                int((primaries.get("store") or {}).get("size_in_bytes") or 0),
                int((primaries.get("segments") or {}).get("count") or 0),
                name == where.write,
            )
        )
    return out


@refusals_as_server_errors("merge_old_indices")
def merge_old_indices(
    client: Elasticsearch, settings: Settings, *, progress: Callable[[str], None] | None = None
) -> list[str]:
    """Force-merge every index that has left the write role to one segment per shard; safe to run twice.

    An index already at one segment per shard is skipped, so a second run sends
    nothing. The merge of a large index takes minutes: the request waits for it.

    Returns:
        The indices merged by this call.
    """
    merged = []
    for facts in index_facts(client, settings.index):
        shards = _primary_shards(client, facts.name)
        if facts.write or facts.segments <= shards:
            if progress:
                progress(f"{facts.name}: {'write index, left as it is' if facts.write else 'already merged'}")
            continue
        if progress:
            progress(f"{facts.name}: merging {facts.segments} segments into {shards}")
        client.options(request_timeout=3600).indices.forcemerge(index=facts.name, max_num_segments=1)
        merged.append(facts.name)
    return merged


def _primary_shards(client: Elasticsearch, name: str) -> int:
    res = client.indices.get_settings(index=name, name="index.number_of_shards")
    return int(res[name]["settings"]["index"]["number_of_shards"])
