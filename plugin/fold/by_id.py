"""Reads, updates and deletes by id through a name that may stand for several indices.

Elasticsearch runs a read, update or delete by id on one index only. Through
an alias over several indices (a rolled-over alias, a host's monthly indices)
it refuses each document, one at a time, inside a 200 answer ("alias [x] has
more than one index associated with it"), and a bulk ``update`` through the
alias goes to its write index, where it would create a second document with
the same id. So every operation by id newsfold sends names the concrete index
of its page:

- :func:`behind` says which indices a name stands for (one metadata request);
- :func:`read_docs` is ``mget`` that answers the same through an alias over
  several indices: one realtime ``mget`` asks every index behind the name for
  each id, and the newest index holding it answers;
- :func:`route` gives each bulk ``update`` and ``delete`` the concrete index
  of its page, found the same way (a page found nowhere goes to the write
  index).

Both are realtime: a page is found in the index it was written to before any
refresh, wherever a host wrote it (a back-dated article in its month's index,
a write a rollover overtook). A search would not see such a page, and newsfold
would then write a second document, a ghost, into the write index.

Through a name that stands for one index this costs one metadata request and
nothing else; through several, one ``mget`` item per id and index. A refusal of
one document is a :class:`ServerError`, never taken for "not indexed".
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import ServerError, item_refusal, server_error
from newsfold.plugin.fold.lookups import WHOLE

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

#: pauses (seconds) before asking again when a read finds no active shard (after waiting for the index's health)
SHARD_WAITS = (0.2, 1.0, 3.0)
#: error types of a shard copy that is not started yet (a new index, a recovery, a failover)
#: (a search asked whole, ``lookups.WHOLE``, names none of them: it is "rejected due to missing shards")
UNSTARTED = ("no_shard_available_action_exception", "illegal_index_shard_state_exception",
             "unavailable_shards_exception", "rejected due to missing shards")  # fmt: skip
log = logging.getLogger(__name__)

#: the fold layout that stores the signature once, as band tokens (``newsfold.bands``); older ones hold
#: ``newsfold.band_keys`` (``plugin.fold.index.FOLD_LAYOUT`` is this or later)
BANDS_LAYOUT = 8

#: ids x indices per realtime ``mget`` when reading or locating pages through a name over several indices
MGET_ITEMS = 10_000


@dataclass(frozen=True)
class Behind:
    """The concrete indices a name stands for, newest first, and the one writes through it go to."""

    indices: tuple[str, ...]
    write: str
    #: when each index's period began (epoch milliseconds), in the order of ``indices``: its creation, or for an
    #: index a reindex rebuilt, the period of the index it replaced (``_meta.newsfold.period_start``)
    created: tuple[int, ...] = ()
    #: when each index's period ended, where recorded (a rebuilt old period; 0: at the next index's start)
    ended: tuple[int, ...] = ()
    #: the indices that may hold pages stored at fold layout 7 or before (their band keys are in another field):
    #: those recording an older layout, or upgraded in place from one (``_meta.newsfold.legacy_bands``)
    legacy: frozenset[str] = frozenset()

    @property
    def single(self) -> bool:
        return len(self.indices) == 1

    def recent(self) -> tuple[str, ...]:
        """Where a racing writer's newest pages can be: the write index and the newest index before it."""
        older = [i for i in self.indices if i != self.write]
        return (self.write, *older[:1])

    def within(self, seconds: float, now_ms: int) -> tuple[str, ...]:
        """The indices holding pages ingested in the last ``seconds`` (all of them when 0), newest first.

        An index holds the pages ingested from the start of its period (its
        creation) until the next index's start (the newest one until now, or
        until the end recorded for a rebuilt old period: the window is then
        counted back from that end, as when the period was ingested).
        """
        if not seconds or len(self.created) != len(self.indices):
            return self.indices
        ends = [now_ms, *self.created[:-1]]
        for n, end in enumerate(self.ended):
            ends[n] = end or ends[n]
        since = min(now_ms, ends[0]) - seconds * 1000
        return tuple(i for i, end in zip(self.indices, ends, strict=True) if end >= since) or self.indices[:1]


def behind(client: Elasticsearch, name: str) -> Behind:
    """The indices behind ``name`` (an index, an alias or a data stream), newest first.

    One request lists the indices with their aliases, creation dates and
    uuids (``features=aliases,settings``: no mapping is read or sent). The
    period and layout an index records in ``_meta.newsfold`` never change once
    it exists (``with_period`` is set at creation, and an index upgraded in
    place was legacy before), so they are read once per index, by uuid: an
    index dropped and made again under its name is read anew. A batch thus
    reads no mapping, however many periods the alias holds.

    Raises:
        ServerError: no such index or alias (or Elasticsearch refused the request).
    """
    res = _listing(client, name)
    uuids = {i: str(((v.get("settings") or {}).get("index") or {}).get("uuid") or "") for i, v in res.items()}
    facts = {i: _facts_of(v["mappings"]) for i, v in res.items() if "mappings" in v}  # a server without features
    with _FACTS_LOCK:
        facts.update({i: _FACTS[u] for i, u in uuids.items() if i not in facts and u in _FACTS})
    facts.update(_index_facts(client, name, {i: u for i, u in uuids.items() if i not in facts}))
    created, ended, legacy = {}, {}, set()
    for i, v in res.items():
        period_start, period_end, old = facts[i]
        created[i] = period_start or int((v.get("settings") or {}).get("index", {}).get("creation_date") or 0)
        ended[i] = period_end
        if old:
            legacy.add(i)
    indices = tuple(sorted(res, key=lambda i: (created[i], i), reverse=True))
    flagged = [i for i, v in res.items() if ((v.get("aliases") or {}).get(name) or {}).get("is_write_index")]
    return Behind(
        indices, flagged[0] if flagged else indices[0], tuple(created[i] for i in indices),
        tuple(ended[i] for i in indices), frozenset(legacy),
    )  # fmt: skip


#: clients whose server refuses ``features`` on a get-index request (the stand-in): :func:`behind` then reads
#: the mappings' ``_meta`` in the same request, as before
_NO_FEATURES: set[int] = set()
_FACT_PATHS = ["*.mappings._meta.newsfold.period_start", "*.mappings._meta.newsfold.period_end",
               "*.mappings._meta.newsfold.fold_layout", "*.mappings._meta.newsfold.legacy_bands"]  # fmt: skip


def _listing(client: Elasticsearch, name: str) -> dict[str, Any]:
    """Each index behind ``name`` with its aliases, creation date and uuid (and its ``_meta`` facts where the
    server cannot leave the mappings out)."""
    from elasticsearch import ApiError, BadRequestError

    wanted = ["*.aliases", "*.settings.index.creation_date", "*.settings.index.uuid"]
    try:
        if id(client) not in _NO_FEATURES:
            try:
                res: dict[str, Any] = client.indices.get(index=name, features=["aliases", "settings"],
                                                         filter_path=wanted).body  # fmt: skip
            except BadRequestError as exc:
                if "features" not in str(exc):
                    raise
                _NO_FEATURES.add(id(client))
        if id(client) in _NO_FEATURES:
            res = client.indices.get(index=name, filter_path=wanted + _FACT_PATHS).body
            res = {i: {**v, "mappings": v.get("mappings") or {}} for i, v in res.items()}
    except ApiError as exc:
        raise server_error(exc, f"resolving {name!r}") from exc
    if not res:
        raise ServerError(f"{name!r} names no index")
    return res


def _facts_of(mappings: dict[str, Any]) -> tuple[int, int, bool]:
    period = (mappings.get("_meta") or {}).get("newsfold") or {}
    return int(period.get("period_start") or 0), int(period.get("period_end") or 0), is_legacy(period)


def is_legacy(meta: dict[str, Any]) -> bool:
    """Whether an index recording ``meta`` (its ``_meta.newsfold``) may hold pages of fold layout 7 or before."""
    return bool(meta.get("legacy_bands")) or int(meta.get("fold_layout") or BANDS_LAYOUT) < BANDS_LAYOUT


#: per index uuid: its period's start and end (0: not recorded) and whether it may hold pages of fold layout 7
#: or before, as its ``_meta.newsfold`` records them (:func:`behind`); bounded, the oldest forgotten first
_FACTS: dict[str, tuple[int, int, bool]] = {}
_FACTS_LOCK = threading.Lock()
FACTS_KEPT = 4096


#: characters of index names in one request for their records (Elasticsearch's request line holds 4 KB)
NAMES_PER_REQUEST = 3000


def _chunks(names: list[str]) -> list[list[str]]:
    """``names`` cut so that each request's list of them stays within :data:`NAMES_PER_REQUEST` characters."""
    out: list[list[str]] = []
    size = NAMES_PER_REQUEST
    for n in names:
        if size + len(n) + 1 > NAMES_PER_REQUEST:
            out.append([])
            size = 0
        out[-1].append(n)
        size += len(n) + 1
    return out


def forget_index_facts() -> None:
    """Forget the kept ``_meta`` facts: for a tool that rewrites an existing index's recorded period (newsfold
    records it only when it makes an index; ``benchmarks/archive_lookup_bench.py`` re-dates its months)."""
    with _FACTS_LOCK:
        _FACTS.clear()


def _index_facts(client: Elasticsearch, name: str, unknown: dict[str, str]) -> dict[str, tuple[int, int, bool]]:
    """The ``_meta.newsfold`` facts of the indices ``unknown`` (index -> uuid), read in one request and kept."""
    from elasticsearch import ApiError

    res: dict[str, Any] = {}
    try:
        for chunk in _chunks(sorted(unknown)):
            res.update(client.indices.get_mapping(index=",".join(chunk), filter_path=_FACT_PATHS,
                                                  ignore_unavailable=True).body)  # fmt: skip
    except ApiError as exc:
        raise server_error(exc, f"resolving {name!r}") from exc
    out = {}
    for i, uuid in unknown.items():
        out[i] = _facts_of((res.get(i) or {}).get("mappings") or {})
        # an index deleted since it was listed answers nothing (its reads by id then fail, or find nothing, as
        # they would have a moment later); a server that gives no uuid: read every time
        if uuid and i in res:
            with _FACTS_LOCK:
                while len(_FACTS) >= FACTS_KEPT:
                    del _FACTS[next(iter(_FACTS))]
                _FACTS[uuid] = out[i]
    return out


def _behind_if_any(client: Elasticsearch, name: str) -> Behind | None:
    """:func:`behind`, or None when there is no such index (its actions then fail, or are skipped, one by one)."""
    try:
        return behind(client, name)
    except ServerError as exc:
        if exc.status == 404:
            return None
        raise


def mget_started(client: Elasticsearch, name: str, wanted: list[dict[str, str]], source: Any) -> list[dict[str, Any]]:
    """One realtime ``mget`` of ``wanted`` (index and id pairs), waiting for shards that are not started yet.

    Raises:
        ServerError: Elasticsearch refused to read a document.
    """
    for wait in (*SHARD_WAITS, None):
        docs: list[dict[str, Any]] = client.mget(docs=wanted, source=source)["docs"]
        if wait is None or not any(no_shard(d) or not_known_yet(d) for d in docs):
            break
        # a primary not started yet (an index another process has just created) or recovering, or an index this
        # node does not know yet (every index asked for was listed by `behind` a moment ago): wait, ask again
        _wait_for_shards(client, name, wait, "a read by id")
    for doc in docs:
        if "error" in doc:
            # a shard not started yet or a node lost: a 503 the workers retry
            raise item_refusal(f"reading page {doc.get('_id')!r} from {doc.get('_index')!r} failed", doc)
    return docs


def search_whole(client: Elasticsearch, index: str, **request: Any) -> Any:
    """A search answered from every shard (``lookups.WHOLE``), asked again while a shard is not started yet (an
    index another process has just created, a rollover's) as a read by id is; any other shard failure raises.

    Raises:
        elasticsearch.ApiError: a shard refused the query (400), or one stayed missing (503, which workers retry).
    """
    from elasticsearch import ApiError

    for wait in SHARD_WAITS:
        try:
            return client.search(index=index, **WHOLE, **request)
        except ApiError as exc:
            if not (isinstance(exc.body, dict) and no_shard(exc.body)):
                raise
        _wait_for_shards(client, index, wait, "a search")
    return client.search(index=index, **WHOLE, **request)


def _wait_for_shards(client: Elasticsearch, name: str, wait: float, what: str) -> None:
    """Wait until ``name``'s shards have started (its health yellow, at most 30 s), then ``wait`` seconds more."""
    log.info("%s in %s found a shard not started; waiting %.1f s", what, name, wait)
    client.options(ignore_status=408).cluster.health(index=name, wait_for_status="yellow", timeout="30s")
    time.sleep(wait)


def whole(res: Any, what: str) -> Any:
    """``res`` when every shard answered it; else a 503 :class:`ServerError` naming ``what`` (for a scroll's later
    pages, which a search asked whole does not guard: a shard lost mid-scroll fails only its part)."""
    shards = res.get("_shards") or {}
    if shards.get("failed"):
        first = (shards.get("failures") or [{}])[0]
        err = ServerError(f"{what}: {shards['failed']} of {shards.get('total')} shards failed ({first.get('reason')})")
        err.status = 503
        raise err
    return res


def _found(client: Elasticsearch, name: str, where: Behind, ids: Sequence[str], source: Any) -> list[dict[str, Any]]:
    """Realtime answers for ``ids`` from every index behind ``name``: the found documents, newest index first."""
    per = max(1, MGET_ITEMS // len(where.indices))
    out: list[dict[str, Any]] = []
    for start in range(0, len(ids), per):
        wanted = [{"_index": i, "_id": pid} for pid in ids[start : start + per] for i in where.indices]
        out += [d for d in mget_started(client, name, wanted, source) if d.get("found")]
    return out


def read_docs(
    client: Elasticsearch, name: str, ids: Iterable[str], *, source: bool | str | Sequence[str] = True
) -> list[dict[str, Any]]:
    """A realtime read of ``ids`` through ``name``: one ``mget`` answer per id, in order, each naming its ``_index``.

    Through a name over several indices every index is asked for every id, and
    the newest index holding a page answers for it.

    Raises:
        ServerError: no such index, or Elasticsearch refused to read a document.
    """
    ids = list(dict.fromkeys(ids))
    if not ids:
        return []
    where = behind(client, name)
    if where.single:
        out: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), MGET_ITEMS):
            wanted = [{"_index": where.indices[0], "_id": pid} for pid in ids[start : start + MGET_ITEMS]]
            out.update((d["_id"], d) for d in mget_started(client, name, wanted, source))
        return [out[pid] for pid in ids]
    found: dict[str, dict[str, Any]] = {}
    for doc in _found(client, name, where, ids, source):  # newest index first: the first copy found wins
        found.setdefault(doc["_id"], doc)
    return [found.get(pid) or {"_id": pid, "found": False} for pid in ids]


def no_shard(response: dict[str, Any]) -> bool:
    """An answer (of a search or of one document) refused because no copy of its shard is started."""
    return "error" in response and any(kind in str(response["error"]) for kind in UNSTARTED)


def not_known_yet(response: dict[str, Any]) -> bool:
    """An answer refused for an index its node does not know (yet).

    Asked of an index :func:`behind` named a moment ago, that is a new index
    (a rollover's) whose creation has not reached the node that coordinated
    the request: on a cluster each node applies the new cluster state on its
    own, so for a moment one node lists the index and another has never heard
    of it. Waiting a little and asking again is the remedy.
    """
    return "error" in response and "index_not_found_exception" in str(response["error"])


def route(client: Elasticsearch, actions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bulk actions whose ``update`` and ``delete`` name the concrete index of their page.

    An action through a name that stands for several indices goes to the index
    the page is in (a delete, to every index holding a document of that id);
    a page found nowhere is written to the write index (an upsert creates it
    there). Other actions are left as they are.
    """
    names = {a["_index"] for a in actions if a.get("_op_type") in ("update", "delete") and "_index" in a}
    spread = {n: b for n in sorted(names) if (b := _behind_if_any(client, n)) is not None and not b.single}
    if not spread:
        return list(actions)
    found: dict[str, dict[str, list[str]]] = {n: {} for n in spread}
    for n, where in spread.items():
        ids = list(dict.fromkeys(a["_id"] for a in actions if a.get("_index") == n))
        for doc in _found(client, n, where, ids, False):
            found[n].setdefault(doc["_id"], []).append(doc["_index"])
    out: list[dict[str, Any]] = []
    for a in actions:
        name = a.get("_index")
        if a.get("_op_type") not in ("update", "delete") or name not in spread:
            out.append(a)
            continue
        places = found[a["_index"]].get(a["_id"]) or [spread[a["_index"]].write]
        if a["_op_type"] == "update":
            places = places[:1]
        out += [{**a, "_index": i} for i in places]
    return out
