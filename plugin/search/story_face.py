"""A story's face: the one page whose headline, link, picture and time every surface shows for the story.

The rule (docs/stories.md, "A story's face"), declared once as an order (``plugin.fold.origin_order``):

1. the version an editor made the story's representative;
2. else the fullest version: the most words (``newsfold.token_count``), so that a full text is shown before
   an excerpt of it, and a copy cut short is never the story's face while its full text is folded under it;
3. else (equally full) the earliest, by what provenance believes of the times (:data:`BELIEVED_FIRST`), then
   the stated time, the ingest time and the URL.

Elasticsearch sorts by :func:`face_sort` (a ``top_hits`` of size 1 beside the request that lists the
stories, so the face costs no request of its own); :func:`face_key` ranks the same way in memory. Top
stories, search results (HTML and JSON), a story's page, the feeds and the admin's lists show the face;
a search result may show, under it, the passage of the version that matched.

Pure: no server is contacted.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.document import CLUSTER_ID, path
from newsfold.plugin.fold.origin_order import By, Order, earliest_first, sort_clauses, sort_key, source_value

#: the name of the face's ``top_hits`` aggregation wherever a request lists stories
FACE_AGG = "face"


def face_order(time_field: str = "published") -> Order:
    """The rule as an order: the representative, then the most words, then the earliest."""
    return (
        By(path("representative"), "boolean", descending=True),
        By(path("token_count"), "number", descending=True),
        *earliest_first(time_field),
    )


def face_sort(time_field: str = "published") -> list[dict[str, Any]]:
    """The Elasticsearch sort of :func:`face_order` (its first hit is the face)."""
    return sort_clauses(face_order(time_field))


def face_agg(source: Sequence[str] | bool, *, time_field: str = "published") -> dict[str, Any]:
    """A ``top_hits`` aggregation giving a story's face (under a ``terms`` aggregation on the cluster id)."""
    return {"top_hits": {"size": 1, "sort": face_sort(time_field), "_source": source}}


def face_key(source: Mapping[str, Any], *, time_field: str = "published") -> tuple[Any, ...]:
    """A Python sort key ranking ``_source`` documents as :func:`face_sort` ranks them (the face is the least)."""
    return sort_key(face_order(time_field), source_value(source))


def read_face(bucket: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The face's raw hit from a bucket holding :func:`face_agg` under :data:`FACE_AGG` (None: none)."""
    hits = ((bucket or {}).get(FACE_AGG) or {}).get("hits", {}).get("hits", [])
    return hits[0] if hits else None


def with_faces(
    body: dict[str, Any], *, agg: str, source: Sequence[str], time_field: str = "published"
) -> dict[str, Any]:
    """A copy of a search body whose ``terms`` aggregation ``agg`` on the cluster id also gives each story's face
    (:func:`face_agg` under :data:`FACE_AGG`, read by :func:`read_face`)."""
    out = copy.deepcopy(body)
    out["aggs"][agg].setdefault("aggs", {})[FACE_AGG] = face_agg(list(source), time_field=time_field)
    return out


def faces(cluster_ids: Sequence[str], *, source: Sequence[str], time_field: str = "published") -> dict[str, Any]:
    """Search body: the face of each of some stories (one hit per story, collapsed on the cluster id); a
    response ``plugin.search.version_relations.read_references`` and ``read_top_stories`` read as they read
    a ``references`` one.

    Raises:
        InputError: no cluster id.
    """
    ids = [c for c in dict.fromkeys(cluster_ids) if c]
    if not ids:
        raise InputError("no story to look up")
    return {
        "query": {"terms": {CLUSTER_ID: ids}},
        "size": len(ids),
        "collapse": {"field": CLUSTER_ID},
        "sort": face_sort(time_field),
        "_source": list(dict.fromkeys([*source, CLUSTER_ID])),
    }
