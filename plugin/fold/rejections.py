"""Rejected pages, recorded durably with their reason in a side index.

``<alias>-rejected`` holds one document per rejected page (``_id`` = page
id, or a digest of an id too long to be one: :func:`record_id`):
``page_id, url, site, reason, detail, at, job_id``. It is a side index:
never behind the articles alias and never matched by a wildcard. A page that
is indexed later (a retry, or a reindex whose new extraction accepts it)
loses its record in the same bulk request, so the index lists the pages that
are rejected now, not every rejection ever made.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable
from typing import Any

from elasticsearch import Elasticsearch

from newsfold.plugin.errors import clean_text
from newsfold.plugin.fold.document import Outcome
from newsfold.plugin.fold.index import ensure_side_index
from newsfold.plugin.fold.store import bulk_write
from newsfold.plugin.ids import MAX_ID_BYTES
from newsfold.plugin.settings import Settings

#: outcomes of a page written now: an earlier rejection record of it is stale
WRITTEN = ("new", "duplicate", "merged", "updated")


def rejections_index(settings: Settings) -> str:
    """The rejected-pages index of the articles alias: ``<alias>-rejected``."""
    return f"{settings.index}-rejected"


def ensure_rejections_index(client: Elasticsearch, settings: Settings) -> str:
    """Create the rejected-pages index (strict mapping) if it is missing; returns its name."""
    return ensure_side_index(client, settings, rejections_index(settings), "rejected")


def record_id(page_id: str) -> str:
    """The ``_id`` of a page's rejection record: its page id, or for an id Elasticsearch cannot take as one
    (over 512 bytes, a lone surrogate: a ``bad_id`` rejection) a digest of it, so the record is still written."""
    try:
        if len(page_id.encode("utf-8")) <= MAX_ID_BYTES:
            return page_id
    except UnicodeEncodeError:
        pass
    return "sha256:" + hashlib.sha256(page_id.encode("utf-8", "surrogatepass")).hexdigest()


def rejection_actions(
    outcomes: Iterable[Outcome | dict[str, Any]], *, index: str, job_id: str | None = None, at: str | None = None
) -> list[dict[str, Any]]:
    """Bulk actions for a batch's outcomes: index each rejected page, delete the record of each indexed one.

    Pure; ``url`` and ``site`` are taken from outcome dicts that carry them.
    """
    at = at or dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
    actions = []
    for outcome in outcomes:
        o = outcome.as_dict() if isinstance(outcome, Outcome) else outcome
        page_id = o.get("page_id")
        if not page_id:
            continue
        if o.get("status") == "rejected":
            doc_id = record_id(str(page_id))
            shown_id = str(page_id) if doc_id == str(page_id) else clean_text(str(page_id)[:MAX_ID_BYTES]) + "..."
            source = {
                "page_id": shown_id,
                "url": o.get("url"),
                "site": o.get("site"),
                "reason": o.get("reason") or "unknown",
                "detail": o.get("detail"),
                "at": at,
                "job_id": job_id,
            }
            actions.append({"_op_type": "index", "_index": index, "_id": doc_id, "_source": source})
        elif o.get("status") in WRITTEN:
            actions.append({"_op_type": "delete", "_index": index, "_id": record_id(str(page_id))})
    return actions


def record_rejections(
    outcomes: Iterable[Outcome | dict[str, Any]],
    *,
    client: Elasticsearch,
    settings: Settings,
    job_id: str | None = None,
) -> int:
    """Record a batch's rejected pages (and drop stale records of its indexed pages) in one bulk request.

    Args:
        outcomes: the batch's outcomes (``Outcome`` objects or their dicts;
            dicts may add ``url`` and ``site``).
        client: an Elasticsearch client.
        settings: ``settings.index`` is the articles alias.
        job_id: the job the batch belongs to, stored with each record.

    Returns:
        How many rejected pages were recorded.

    Raises:
        RuntimeError: Elasticsearch refused a record (a missing record to
            delete is not an error).
    """
    actions = rejection_actions(outcomes, index=rejections_index(settings), job_id=job_id)
    if not actions:
        return 0
    recorded = sum(1 for a in actions if a["_op_type"] == "index")
    if recorded:  # deletes alone need no index: on a missing one they answer 404, ignored below
        ensure_rejections_index(client, settings)
    bulk_write(client, actions, settings=settings, what="recording rejected pages")
    return recorded
