"""Story names and founding: which page's call reports a story ``new``, exactly once, under racing writers.

A cluster id is a *name*. A new story is named after the page that founds it
(its page id), unless another story already carries that name (the page was
rewritten with unrelated text, or deleted while its copies stayed): then the
name gets the new text's hash, ``<page id>~<8 hex>`` (then ``~<8 hex>1``, ... and at last a random
suffix): every name is checked free before it is used (:func:`free_names`), since page ids can
look like story names and squat them. Names never follow their
founder afterwards: the founder may be rewritten or deleted and the story keeps
its name as long as any page carries it.

Founding is a two-step handshake, so that exactly one call reports ``new`` for
every story that exists when the writers are done, however their writes
interleave:

1. ``ingest`` writes the founder with ``newsfold.founding`` set to the story's
   name: the story is *pending*;
2. after its reconcile, ``ingest`` *commits* it: it creates the story's mark
   (``op_type: create``) in the founding index, ``<alias>-founding``, if the
   founder is still in that story. Only then is the outcome ``new``.

A merge (``plugin.fold.regroup.relabel``) that would absorb a pending story first
*claims* it by creating the same mark, naming the survivor. Commit and claim
race on one create, so one of them fails: a story is committed and reported,
or absorbed and never reported. A merge never absorbs a committed story into a
pending one (it turns round); two committed stories merge only when a page
joins both, and that page's outcome is ``merged``, naming the stories that
ceased to exist.

The founder's page is written once: the handshake's second step writes a mark
of about 150 bytes in a side index instead of indexing the page again. A
mark's id (:func:`founding_key`) holds the founder's write, so a name used
again later is a founding of its own.

Pure except the functions that take a client.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from newsfold.plugin.errors import ServerError
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.by_id import mget_started, read_docs, search_whole
from newsfold.plugin.fold.document import FOUNDING_SOURCE, fold_of
from newsfold.plugin.fold.index import ensure_side_index, founding_index
from newsfold.plugin.settings import Settings

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

#: times a claim or a commit reads again after losing a version race before giving up on it (other partial
#: updates, such as a story's origin written onto its pages, also move a founder's version)
VERSION_RETRIES = 10


def renamed(page_id: str, content_hash: str, attempt: int = 0) -> str:
    """The name of a story founded by ``page_id`` when its own id already names another story."""
    suffix = content_hash[:8] if attempt == 0 else f"{content_hash[:8]}{attempt}"
    return f"{page_id}~{suffix}"


def founder_ids(name: str) -> list[str]:
    """The page ids that may have founded a story of this name (the name, and the name without a suffix)."""
    ids = [name]
    if "~" in name:
        ids.append(name.rsplit("~", 1)[0])
    return ids


def names_in_use(
    names: Iterable[str], *, besides: Iterable[str], client: Elasticsearch, settings: Settings
) -> set[str]:
    """The names among ``names`` that some page other than ``besides`` carries as its cluster id."""
    names = sorted(set(names))
    if not names:
        return set()
    body = lookups.names_in_use(names, exclude_ids=sorted(set(besides)))
    res = search_whole(client, settings.index, **body)
    return {b["key"] for b in res["aggregations"]["names"]["buckets"]}


def free_names(
    founders: dict[str, tuple[str, str]], *, besides: Iterable[str], client: Elasticsearch, settings: Settings
) -> dict[str, str]:
    """A free name for each new story: its founder's id, else ``renamed(id, hash, n)`` for n = 0, 1, ...

    ``founders`` maps each new story's proposed name to its founder's page id and content hash. A name
    is free when no page besides ``besides`` carries it and no other story of the call took it. Every
    name is checked before it is used: page ids may look like story names (``victim~1a2b3c4d``), so
    anyone may squat the first names a rewritten page would try, and a story named without a check
    would take the rewritten page into the squatter's story while reporting it ``new``. After
    :data:`NAME_ROUNDS` rounds of taken names the suffix is random (still checked).

    Raises:
        ServerError: no free name after the random rounds too (practically never).
    """
    besides = sorted(set(besides))
    chosen: dict[str, str] = {}
    todo = dict(sorted(founders.items()))
    for attempt in range(NAME_ROUNDS + RANDOM_ROUNDS):
        proposals = {name: _proposals(name, pid, digest, attempt) for name, (pid, digest) in todo.items()}
        taken = names_in_use({n for names in proposals.values() for n in names}, besides=besides,
                             client=client, settings=settings)  # fmt: skip
        if attempt == 0:  # first, every story whose own name is free keeps it: no rename lands on a kept name
            chosen.update({name: name for name in proposals if name not in taken})
        for name, names in proposals.items():
            free = next((n for n in names if n not in taken and n not in chosen.values()), None)
            if name not in chosen and free is not None:
                chosen[name] = free
        todo = {name: todo[name] for name in todo if name not in chosen}
        if not todo:
            return chosen
    raise ServerError(f"no free story name for the page {sorted(todo.values())[0][0]!r}: every one tried is taken")


#: rounds of names derived from the founder's text before the suffix is random; names tried in a round
NAME_ROUNDS = 3
NAMES_PER_ROUND = 4
RANDOM_ROUNDS = 5


def _proposals(name: str, page_id: str, content_hash: str, attempt: int) -> list[str]:
    if attempt >= NAME_ROUNDS:
        return [renamed(page_id, secrets.token_hex(8)) for _ in range(NAMES_PER_ROUND)]
    start = attempt * NAMES_PER_ROUND
    names = [renamed(page_id, content_hash, n) for n in range(start, start + NAMES_PER_ROUND)]
    return [name, *names] if attempt == 0 else names


@dataclass(frozen=True)
class Founder:
    """A story's founding as last read: its founder's page and the state of its mark in the founding index.

    ``state``: ``pending`` (founded, neither committed nor absorbed), ``committed`` (its founder's call
    committed it: ``committed_by`` is that call's token) or ``absorbed`` (a merge claimed it first; the name
    is dead, and a page written into it meanwhile is moved on by whoever finds it).
    """

    page_id: str
    name: str
    #: the ``_id`` of the story's mark in the founding index (:func:`founding_key`)
    key: str
    state: Literal["pending", "committed", "absorbed"]
    committed_by: str | None = None

    @property
    def absorbed(self) -> bool:
        return self.state == "absorbed"


def founding_key(name: str, page_id: str, folded: str | None) -> str:
    """The ``_id`` of a founding's mark: its story's name, its founder and the founder's write (``folded``).

    The founder's write is part of it, so a name used again (its story died, a page founds it anew) is
    another founding; a redelivered batch that does not write its founder again finds the same key.
    """
    digest = hashlib.blake2b(digest_size=16)
    for part in (name, page_id, folded or ""):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def foundings(names: Iterable[str], *, client: Elasticsearch, settings: Settings) -> dict[str, Founder]:
    """The stories among ``names`` whose founder still carries ``founding``, each with its state (realtime reads:
    the founders' pages, then the marks of the founding index).

    A name left out is a story founded before the handshake existed, or committed by a version of newsfold that
    cleared ``founding`` (fold layout 8 and before): committed.
    """
    names = sorted(set(names))
    ids = sorted({i for n in names for i in founder_ids(n)})
    if not ids:
        return {}
    out: dict[str, Founder] = {}
    wanted = set(names)
    for d in read_docs(client, settings.index, ids, source=FOUNDING_SOURCE):
        fold = fold_of(d.get("_source")) if d.get("found") else {}
        name = fold.get("founding")
        if name in wanted and (name not in out or out[name].absorbed):
            # a founder moved by a claim of fold layout 8 and before is in another story: absorbed
            moved = fold.get("cluster_id") != name
            out[name] = Founder(d["_id"], name, founding_key(name, d["_id"], fold.get("folded")),
                                "absorbed" if moved else "pending")  # fmt: skip
    marks = _marks([f.key for f in out.values() if not f.absorbed], client=client, settings=settings)
    for name, f in out.items():
        mark = marks.get(f.key)
        if mark is not None:
            state: Literal["committed", "absorbed"] = "absorbed" if mark.get("claimed_into") else "committed"
            out[name] = replace(f, state=state, committed_by=mark.get("committed_by"))
    return out


def founders(names: Iterable[str], *, client: Elasticsearch, settings: Settings) -> dict[str, Founder]:
    """The stories among ``names`` that are pending or were absorbed, with their founders (a realtime read).

    A name left out is a committed story (or one founded before the handshake existed).
    """
    known = foundings(names, client=client, settings=settings)
    return {n: f for n, f in known.items() if f.state != "committed"}


def pending(names: Iterable[str], *, client: Elasticsearch, settings: Settings) -> dict[str, Founder]:
    """The stories among ``names`` that are pending (founded, neither committed nor absorbed)."""
    return {n: f for n, f in foundings(names, client=client, settings=settings).items() if f.state == "pending"}


def _marks(keys: list[str], *, client: Elasticsearch, settings: Settings) -> dict[str, dict[str, Any]]:
    """The founding index's marks of ``keys`` (a realtime read, waiting for a shard another process has just
    created, as every read by id does: ``plugin.fold.by_id``)."""
    if not keys:
        return {}
    name = founding_index(settings)
    if not client.indices.exists(index=name):  # no story was committed or claimed through this alias yet
        return {}
    docs = mget_started(client, name, [{"_index": name, "_id": key} for key in keys], True)
    return {d["_id"]: d["_source"] for d in docs if d.get("found")}


def _mark(founders: dict[str, Founder], body: dict[str, Any], *, client: Elasticsearch, settings: Settings) -> set[str]:
    """Create each founder's mark (``op_type: create``); returns the keys whose mark this call created.

    Commit and claim race on one mark, so exactly one of them creates it; the other is refused (409).
    """
    from newsfold.plugin.fold.store import bulk_failures

    if not founders:
        return set()
    name = ensure_side_index(client, settings, founding_index(settings), "founding")
    at = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    actions = [
        {"_op_type": "create", "_index": name, "_id": f.key,
         "_source": {"story": f.name, "page": f.page_id, "at": at, **body}}
        for f in founders.values()
    ]  # fmt: skip
    failed = bulk_failures(client, actions, settings=settings, missing_ok=False)
    for key, reason in sorted(failed.items()):
        if not ("version" in reason and "conflict" in reason):  # only a conflict says another create came first
            raise ServerError(f"writing the founding mark {key!r} to {name!r} failed: {reason}")
    return {f.key for f in founders.values() if f.key not in failed}


def claim(founder: Founder, survivor: str, *, client: Elasticsearch, settings: Settings) -> bool:
    """Absorb a pending story: mark it claimed into ``survivor`` unless its founder's call committed it first.

    The founder's page is then moved with the story's other pages (``plugin.fold.regroup.relabel``).
    """
    return bool(_mark({founder.name: founder}, {"claimed_into": survivor}, client=client, settings=settings))


def commit_token(delivery: str | None, pages: Iterable[tuple[str, str]] = ()) -> str:
    """The ``committed_by`` mark of one delivery's commits, random without ``delivery``.

    Derived from the delivery's name and its batch, ``pages`` as ``(page id, content hash)`` pairs: the same on
    every redelivery of the batch, and another mark for the same name given to other pages, or to a page whose
    content changed (a reused name is then another delivery, whose stories an earlier one reported).
    """
    if delivery is None:
        return secrets.token_hex(8)
    digest = hashlib.blake2b(delivery.encode("utf-8", "surrogatepass"), digest_size=8)
    for page_id, content_hash in sorted(set(pages)):
        for part in (page_id, content_hash):
            digest.update(b"\0" + part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def commit(founders: dict[str, str], *, client: Elasticsearch, settings: Settings, token: str) -> set[str]:
    """Commit the stories that pages founded (page id -> story name); returns the page ids whose commit held.

    A commit creates the story's mark in the founding index; the founder's page is not written again. A page is
    left out when its story was absorbed by a merge first (a claim created the mark), or the page is gone: that
    call must not report the story ``new``.

    ``token`` marks this delivery's commits (:func:`commit_token`), the same each time a batch is delivered
    again: a founder that an earlier run of this delivery committed (then died before it reported) is returned
    again, so the story is reported ``new`` by the run that ends. Elasticsearch may also answer a conflict for a
    create that took place (a retry across a primary failover meets its own write): the mark is read again.
    """
    todo = dict(founders)
    done: set[str] = set()
    for _ in range(VERSION_RETRIES):
        if not todo:
            break
        known = foundings(todo.values(), client=client, settings=settings)
        mine = {pid: f for pid, name in todo.items() if (f := known.get(name)) is not None and f.page_id == pid}
        done |= {pid for pid, f in mine.items() if f.state == "committed" and f.committed_by == token}
        ready = {pid: f for pid, f in mine.items() if f.state == "pending"}
        created = _mark(ready, {"committed_by": token}, client=client, settings=settings)
        done |= {pid for pid, f in ready.items() if f.key in created}
        todo = {pid: todo[pid] for pid, f in ready.items() if f.key not in created}  # refused: read again
    return done
