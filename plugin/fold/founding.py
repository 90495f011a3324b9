"""Story names and founding: which page's call reports a story ``new``, exactly once, under racing writers.

A cluster id is a *name*. A new story is named after the page that founds it
(its page id), unless another story already carries that name (the page was
rewritten with unrelated text, or deleted while its copies stayed): then the
name gets the new text's hash, ``<page id>~<8 hex>`` (then ``~<8 hex>1``, ... and at last a random
suffix): every name is checked free before it is used (:func:`free_names`), since page ids can
look like story names and squat them. Names never follow their
founder afterwards: the founder may be rewritten or deleted and the story keeps
its name as long as any page carries it.

Founding is a two-step handshake on the founder's document, so that exactly
one call reports ``new`` for every story that exists when the writers are
done, however their writes interleave:

1. ``ingest`` writes the founder with ``newsfold.founding`` set to the story's
   name: the story is *pending*;
2. after its reconcile, ``ingest`` *commits* it: a conditional update
   (``if_seq_no``/``if_primary_term``) clears ``founding`` if the document is
   still the one it read, still in that story. Only then is the outcome
   ``new``.

A merge (``plugin.fold.regroup.relabel``) that would absorb a pending story first
*claims* its founder with the same kind of conditional update (moving it to the
survivor). Commit and claim race on one document version, so one of them
fails: a story is committed and reported, or absorbed and never reported. A
merge never absorbs a committed story into a pending one (it turns round);
two committed stories merge only when a page joins both, and that page's
outcome is ``merged``, naming the stories that ceased to exist.

Pure except the functions that take a client.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from newsfold.plugin.errors import ServerError
from newsfold.plugin.fold import lookups
from newsfold.plugin.fold.by_id import read_docs
from newsfold.plugin.fold.document import FOUNDING_SOURCE, fold_of, fold_update
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
    res = client.search(index=settings.index, **body)
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
    """A story's founder document as last read (its version, for a conditional write).

    ``absorbed``: a merge claimed the story before it was committed; the
    founder is in another story now and the name is dead (a page written
    into it meanwhile is moved on by whoever finds it).
    """

    page_id: str
    name: str
    seq_no: int
    primary_term: int
    absorbed: bool = False
    #: the concrete index holding the document (a conditional write goes there, never through an alias)
    index: str = ""


def founders(names: Iterable[str], *, client: Elasticsearch, settings: Settings) -> dict[str, Founder]:
    """The stories among ``names`` that are pending or were absorbed, with their founders (a realtime read).

    A name left out is a committed story (or one founded before the handshake existed).
    """
    names = sorted(set(names))
    ids = sorted({i for n in names for i in founder_ids(n)})
    if not ids:
        return {}
    out: dict[str, Founder] = {}
    docs = read_docs(client, settings.index, ids, source=FOUNDING_SOURCE)
    wanted = set(names)
    for d in docs:
        if not d.get("found"):
            continue
        fold = fold_of(d.get("_source"))
        name = fold.get("founding")
        if name in wanted and (name not in out or out[name].absorbed):
            absorbed = fold.get("cluster_id") != name
            out[name] = Founder(d["_id"], name, int(d["_seq_no"]), int(d["_primary_term"]), absorbed, d["_index"])
    return out


def pending(names: Iterable[str], *, client: Elasticsearch, settings: Settings) -> dict[str, Founder]:
    """The stories among ``names`` that are pending (founded, neither committed nor absorbed)."""
    return {n: f for n, f in founders(names, client=client, settings=settings).items() if not f.absorbed}


def conditional_update(client: Elasticsearch, settings: Settings, founder: Founder, doc: dict[str, Any]) -> bool:
    """Update the founder's document only if it is still the version read; False when it changed (or is gone).

    No refresh: the handshake reads documents by id (realtime), never by search.
    """
    from elasticsearch import ConflictError, NotFoundError

    try:
        client.update(
            index=founder.index or settings.index,
            id=founder.page_id,
            doc=doc,
            if_seq_no=founder.seq_no,
            if_primary_term=founder.primary_term,
        )
    except (ConflictError, NotFoundError):
        return False
    return True


def claim(founder: Founder, survivor: str, *, client: Elasticsearch, settings: Settings) -> bool:
    """Absorb a pending story: move its founder to ``survivor`` unless it changed since it was read.

    The founder keeps ``founding``, so the name reads as absorbed from then on.
    """
    return conditional_update(client, settings, founder, fold_update(cluster_id=survivor))


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

    A page is left out when its story was absorbed by a merge first (the page
    is in another story now), or the page is gone: that call must not report
    the story ``new``.

    ``token`` marks this delivery's commits (:func:`commit_token`), the same
    each time a batch is delivered again: a founder that an earlier run of this
    delivery committed (then died before it reported) is returned again, so the
    story is reported ``new`` by the run that ends.
    """
    from newsfold.plugin.fold.store import bulk_failures

    todo = dict(founders)
    done: set[str] = set()
    for _ in range(VERSION_RETRIES):
        if not todo:
            break
        waiting = pending(todo.values(), client=client, settings=settings)
        ready = {pid: waiting[name] for pid, name in todo.items() if name in waiting and waiting[name].page_id == pid}
        done |= _committed_by(token, [pid for pid in todo if pid not in ready], client=client, settings=settings)
        doc = fold_update(founding=None, committed_by=token)
        actions = [
            {"_op_type": "update", "_index": f.index or settings.index, "_id": pid, "doc": doc,
             "if_seq_no": f.seq_no, "if_primary_term": f.primary_term}
            for pid, f in sorted(ready.items())
        ]  # fmt: skip
        failed = bulk_failures(client, actions, settings=settings, missing_ok=False)
        done |= {pid for pid in ready if pid not in failed}
        todo = {pid: todo[pid] for pid in ready if pid in failed}  # lost a version race (or seemed to): read again
    return done | _committed_by(token, list(todo), client=client, settings=settings)


def _committed_by(token: str, page_ids: list[str], *, client: Elasticsearch, settings: Settings) -> set[str]:
    """The pages among ``page_ids`` whose founding a commit carrying ``token`` cleared (a realtime read).

    Elasticsearch's compare-and-set may answer a version conflict for a write
    that took place (a retry across a primary failover meets its own write),
    and an earlier run of the same delivery may have committed before it died:
    the page then reads committed, by this delivery.
    """
    if not page_ids:
        return set()
    docs = read_docs(client, settings.index, page_ids, source=FOUNDING_SOURCE)
    return {
        d["_id"] for d in docs
        if d.get("found") and not fold_of(d.get("_source")).get("founding")
        and fold_of(d.get("_source")).get("committed_by") == token
    }  # fmt: skip
