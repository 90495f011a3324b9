"""Which version of a story a search result shows: the editor's choice, else the fullest version that matched.

A folded search ranks a story by its best-matching version, and relevance
scoring (BM25) favours short texts: the same words in a copy cut to 60% of
the story score higher than in the full text. Shown as is, most results
would link to a shorter copy while the full one sits folded beneath. So a
result shows (:func:`shown_version`):

1. the version an editor made the story's representative;
2. else the hit itself when it holds the whole story (the reference, a full
   copy, a copy that adds material, or the story's origin);
3. else the best-scoring version that holds the whole story and matches the
   search, unless the hit matched the query better: its score is more than
   :data:`MATCH_MARGIN` times that version's (a headline of its own with
   the query's words, or words the fuller text lacks; a version that does
   not match at all never replaces the hit);
4. else the hit.

The scores come from the request that lists the stories' versions
(``plugin.search.queries.versions_of(..., scored_by=...)``), so the choice
costs no request of its own. Pure: no server is contacted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from newsfold.plugin.fold.document import fold_of
from newsfold.plugin.search.version_relations import relation_of

#: a version holding less than the whole story is kept when its score is more than this many times a fuller one's
MATCH_MARGIN = 1.25
#: the relations of a version that holds the whole story (``plugin.sign.novelty``)
WHOLE = ("reference", "copy", "adds")


def holds_whole_story(
    hit: Mapping[str, Any], references: Mapping[str, Mapping[str, Any]], *, origin_id: str | None = None
) -> bool:
    """Whether a version holds its whole story: its relation to the reference is in :data:`WHOLE`, or it is
    the story's origin (``origin_id``)."""
    if origin_id and hit.get("_id") == origin_id:
        return True
    found = relation_of(hit, references)
    return found is not None and found["kind"] in WHOLE


def shown_version(
    hit: dict[str, Any],
    versions: Sequence[dict[str, Any]],
    references: Mapping[str, Mapping[str, Any]],
    *,
    margin: float = MATCH_MARGIN,
) -> dict[str, Any]:
    """The version a result shows in place of its story's best-matching ``hit``.

    Args:
        hit: the search's hit for the story (``_id``, ``_source``).
        versions: the story's versions, each with its ``_score`` for the search (0 or None: no match).
        references: ``cluster id -> reference hit`` (``plugin.search.version_relations.read_references``).
        margin: see :data:`MATCH_MARGIN`.

    Returns:
        ``hit`` itself, or one of ``versions``.
    """
    chosen = next((v for v in (hit, *versions) if fold_of(v.get("_source")).get("representative")), None)
    if chosen is not None:
        return chosen
    origin_id = fold_of(hit.get("_source")).get("origin_id")
    if holds_whole_story(hit, references, origin_id=origin_id):
        return hit
    scores = {v.get("_id"): float(v.get("_score") or 0.0) for v in versions}
    own = scores.get(hit.get("_id"))
    fuller = [v for v in versions if scores[v.get("_id")] > 0 and v.get("_id") != hit.get("_id")
              and holds_whole_story(v, references, origin_id=origin_id)]  # fmt: skip
    if not fuller:
        return hit
    best = max(fuller, key=lambda v: scores[v.get("_id")])  # the first of equals: the oldest
    if own is not None and own > margin * scores[best.get("_id")]:
        return hit
    return best
