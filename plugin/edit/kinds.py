"""The kinds of editor correction, each declared once: the table everything else is built from.

An entry names the kind as it is logged, its core function, what it does to the clusters and how it is
undone (all three in the kind's own module), the fields a request gives it, whether it is made on a story
or on a pair of pages, the word of its routes, and the words an editor reads (label, summary, the sentence
said once it is made). The undo (``plugin.edit.undo``), the reapplying of cut-off corrections
(``plugin.edit.corrections``), the admin's forms and routes, the JSON API and its OpenAPI document, and the
log's labels read this table; ``tests/plugin/edit/test_kinds.py`` fails when a kind is missing from any of
them. Adding a kind: docs/architecture.md, "Where things go".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from elasticsearch import Elasticsearch

from newsfold.plugin.edit import merge, not_duplicates, representative, split
from newsfold.plugin.edit.correction_log import UNDO, Correction, CorrectionError
from newsfold.plugin.edit.steps import Effect, UndoEffect, UndoPlan, finish
from newsfold.plugin.settings import Settings

__all__ = ["KINDS", "CorrectionKind", "RequestField", "finish_logged", "kind_named"]


@dataclass(frozen=True)
class RequestField:
    """One field of a correction request (the JSON body, the admin form); ``note`` is every kind's, not listed."""

    name: str
    #: a page id (checked to be in the request's story), a story id, or a yes/no flag
    what: Literal["page", "story", "flag"]
    description: str  # what the field is; a flag's is the API's description of it (an id's there is the id grammar)


@dataclass(frozen=True)
class CorrectionKind:
    """One kind of correction (module docstring)."""

    name: str  # as logged (``Correction.kind``), and the name of its admin and API endpoints
    function: Callable[..., Correction]  # the core function: ``function(*args, user=, client=, settings=, note=)``
    effect: Effect  # what it does to the clusters once logged (applied again after a failure)
    undo: UndoEffect  # what its undo does to the clusters
    args: tuple[str, ...]  # the core function's ids, in order: request fields, or ``cluster_id`` (the request's story)
    fields: tuple[RequestField, ...]  # what a request gives it besides the optional ``note``
    scope: Literal["story", "pair"]  # made on a story (``/clusters/<id>/<route>``) or on two pages (``/pairs/<route>``)
    route: str  # the word its routes end with (one of ``plugin.ids.LAST_ROUTE_WORDS``)
    label: str  # its name in the log and the forms
    summary: str  # what it does, in a sentence (the forms' hint, the API's summary)
    #: what the web says once it is made; {a} and {b} are what ``args`` name, {a_now} and {b_now} the stories
    #: they are in now (a story merged away: its survivor), {story} the request's story; each is said by its
    #: headline with its id beside it
    message: str
    operation: str  # the summary of its API operation (``web.api.openapi_doc`` builds the operation from this entry)
    details: str = ""  # the operation's description, when the summary needs one
    story: str = "The cluster the correction is made on."  # the API's ``cluster_id``, said of a kind made on a story
    conflict: str = "The request does not fit the current clusters (for example the page is no longer in that cluster)."
    plan_undo: UndoPlan | None = None  # decided before its undo is logged (``Correction.restore``)
    reports_story: bool = False  # its answer names the story the page is in now (``story``)


KINDS: tuple[CorrectionKind, ...] = (
    CorrectionKind(
        name="split",
        function=split.split_page,
        effect=split.apply,
        undo=split.undo,
        args=("page_id",),
        fields=(RequestField("page_id", "page", "The page to take out of the story."),),
        scope="story",
        route="split",
        label="Split out",
        summary="Take a page out of its story: it becomes a story of its own, also after a reindex.",
        message="Page {a} was split out of story {story} into story {a_now}.",
        operation="Take a page out of its cluster",
        details="The page becomes a story of its own, and stays one when the index is rebuilt.",
        story="The cluster the page is in.",
        reports_story=True,
    ),
    CorrectionKind(
        name="merge",
        function=merge.merge_clusters,
        effect=merge.apply,
        undo=merge.undo,
        plan_undo=merge.plan_undo,
        args=("cluster_id", "other_cluster_id"),
        fields=(
            RequestField("other_cluster_id", "story", "The story to merge with this one."),
            RequestField(
                "confirm",
                "flag",
                "Needed (true) when no pair of pages of the two stories reaches the copy threshold "
                "(Settings.threshold, Jaccard estimated from the stored signatures); without it such a merge is "
                "refused with 409 and a message saying why. The admin shows the same comparison before a merge "
                "(/admin/clusters/{id}/merge).",
            ),  # fmt: skip
        ),
        scope="story",
        route="merge",
        label="Merged clusters",
        summary="Fold two stories into one; the log's Undo separates them again.",
        message="Stories {a} and {b} are merged into {a_now}.",
        operation="Fold another cluster into this one",
        story="The cluster to merge into.",
        conflict="The story is `other_cluster_id` itself, or the two stories are not similar (no pair of pages at or "
        'above the copy threshold) and the body has no "confirm": true; the error says the best pair\'s Jaccard and '
        "the threshold.",
    ),
    CorrectionKind(
        name="not_duplicates",
        function=not_duplicates.mark_not_duplicates,
        effect=not_duplicates.apply,
        undo=not_duplicates.undo,
        args=("page_a", "page_b"),
        fields=(
            RequestField("page_a", "page", "One page."),
            RequestField("page_b", "page", "The other page, a different story."),
        ),
        scope="pair",
        route="not-duplicates",
        label="Not duplicates",
        summary="Record that two pages are different stories: they are never folded together again.",
        message="Pages {a} and {b} are marked as not duplicates: the first is in story {a_now}, the second in story "
        "{b_now}.",
        operation="Record that two pages are different stories",
        details="The pages are put in different clusters and are never folded together again, also after a reindex.",
        conflict="The request does not fit the current clusters: `page_a` and `page_b` are one page, or a page is no "
        "longer in that cluster.",
    ),
    CorrectionKind(
        name="representative",
        function=representative.set_representative,
        effect=representative.apply,
        undo=representative.undo,
        args=("page_id",),
        fields=(RequestField("page_id", "page", "The page to show for its story."),),
        scope="story",
        route="representative",
        label="Representative",
        summary="Make a page the version shown for its story, and its origin.",
        message="Page {a} is now the representative of story {story}.",
        operation="Choose the page shown for a story",
        story="The cluster of the page.",
    ),
)

_BY_NAME = {kind.name: kind for kind in KINDS}


def kind_named(name: str) -> CorrectionKind:
    """The kind called ``name``.

    Raises:
        CorrectionError: no kind has that name (an undo is not a kind of its own: ``plugin.edit.undo``).
    """
    kind = _BY_NAME.get(name)
    if kind is None:
        raise CorrectionError(f"unknown correction {name!r}; the kinds are {', '.join(_BY_NAME)}")
    return kind


def finish_logged(correction: Correction, *, client: Elasticsearch, settings: Settings) -> Correction:
    """Apply a logged correction's effect (not an undo's: ``plugin.edit.undo``) and mark it done."""
    if correction.kind == UNDO:
        raise CorrectionError(f"correction {correction.id} is an undo: finish it with plugin.edit.undo")
    return finish(correction, kind_named(correction.kind).effect, client=client, settings=settings)
