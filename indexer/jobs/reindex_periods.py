"""What a reindex does to the indices behind the alias, one period at a time (``indexer.jobs.reindex`` runs it).

Each index behind the alias (each period of a rolled-over alias) is rebuilt
in turn, oldest first, into a new index that records the period it replaces
(``plugin.fold.index.with_period``), then swapped for the old one. While a
period is built, its pages are written through :func:`lookup_alias`: the new
index is its write index and the alias's older periods are behind it too, so
a copy finds its story's earlier copies within the lookup window, counted
back from its period's end, and a story across a rollover stays one story.
"""

from __future__ import annotations

from elasticsearch import Elasticsearch

from newsfold.plugin.errors import ServerError
from newsfold.plugin.fold.by_id import Behind, behind
from newsfold.plugin.fold.index import create_index, index_body, with_period
from newsfold.plugin.fold.presence import Presence
from newsfold.plugin.settings import Settings


def lookup_alias(target: str) -> str:
    """The alias a reindex writes through while it builds ``target`` (its write index) over the older periods."""
    return f"{target}-lookup"


def periods(client: Elasticsearch, alias: str) -> list[str]:
    """The indices behind ``alias``, oldest period first; empty when there is none."""
    try:
        return list(reversed(behind(client, alias).indices))
    except ServerError as exc:
        if exc.status != 404:
            raise
        return []


def create_period_index(
    client: Elasticsearch, settings: Settings, target: str, old: str, where: Behind, *, presence: Presence | None = None
) -> None:
    """Create ``target`` for the period of ``old`` (without replicas: they are restored before the swap).

    With ``presence``, ``target``'s filter is marked valid first: every chunk writes into it with that presence.

    The name is the job's own: "already exists" is the client's retry of a
    create that took place (its node died before answering), so that is success.
    """
    position = where.indices.index(old)
    end = where.created[position - 1] if position else None  # the next period's start: this one is over
    body = with_period(index_body(settings), where.created[position], end)
    body["settings"]["index"]["number_of_replicas"] = 0
    if presence is not None:
        presence.mark(target)
    create_index(client, target, body)


def open_lookup_alias(client: Elasticsearch, target: str, old: str, where: Behind) -> None:
    """Put ``target`` (as the write index) and the periods older than ``old`` behind :func:`lookup_alias`."""
    name = lookup_alias(target)
    older = where.indices[where.indices.index(old) + 1 :]
    actions = [{"add": {"index": target, "alias": name, "is_write_index": True}}]
    actions += [{"add": {"index": i, "alias": name, "is_write_index": False}} for i in older]
    client.indices.update_aliases(actions=actions)


def close_lookup_alias(client: Elasticsearch, target: str) -> None:
    """Take :func:`lookup_alias` off every index it is on (none: nothing to do)."""
    name = lookup_alias(target)
    try:
        holders = behind(client, name).indices
    except ServerError as exc:
        if exc.status == 404:
            return
        raise
    client.indices.update_aliases(actions=[{"remove": {"index": i, "alias": name}} for i in holders])


def swap_period(client: Elasticsearch, alias: str, old: str, target: str, *, writes: bool) -> None:
    """Swap ``old`` for ``target`` behind ``alias`` in one ``_aliases`` call (``target`` writes when ``old`` did)."""
    client.indices.update_aliases(
        actions=[
            {"remove": {"index": old, "alias": alias, "must_exist": True}},
            {"add": {"index": target, "alias": alias, "is_write_index": writes}},
        ]
    )
