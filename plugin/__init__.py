"""newsfold's core: the public API a host search embeds (docs/embedding.md).

    from newsfold.plugin import (Settings, TextMeta, build_client, component_template, sign_page, sign_text,
                                 ingest, fold_query)

    settings = Settings.from_env()
    client = build_client(settings)
    client.cluster.put_component_template(name="newsfold", **component_template(settings))
    meta = TextMeta(title=title, url=url, page_id=doc_id)
    signed = sign_text(text, meta, settings=settings)                                   # or sign_page(Page(html=...))
    outcomes = ingest([signed], client=client, settings=settings, index="my-news")      # finds/assigns the cluster
    body = fold_query({"query": {...}, "size": 10}, versions=3)                          # one hit per story

Names resolve lazily (PEP 562), so ``import newsfold.plugin.text`` (or any
pure module: text, shingles, signature, band keys, cluster decision, query
builders, URL and title normalisation, the document format) needs neither
``elasticsearch`` nor ``redis`` installed. Everything is pure except the
functions that take ``client=``.

The modules are grouped by feature (docs/architecture.md): ``extract``, ``sign``,
``fold``, ``edit``, ``search`` and ``admin``, over ``settings``, ``client``,
``errors``, ``text``, ``urls`` and ``page_limits``. The flat module paths of
newsfold 0.1 that docs/embedding.md named (``newsfold.plugin.search.queries``, ...)
still import: :data:`MOVED` maps each to its home.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

#: public name -> module of newsfold.plugin that defines it
_EXPORTS = {
    "Article": "extract.result",
    "Rejection": "extract.result",
    "extract_article": "extract.article",
    "Settings": "settings",
    "NewsfoldError": "errors",
    "InputError": "errors",
    "InputTypeError": "errors",
    "IndexMismatchError": "errors",
    "ServerError": "errors",
    "Signature": "sign.signature",
    "band_keys": "sign.signature",
    "band_tokens": "sign.stored",
    "Constraints": "fold.cluster",
    "Match": "fold.cluster",
    "decide": "fold.cluster",
    "verify": "fold.cluster",
    "Page": "sign.signed_page",
    "SignedPage": "sign.signed_page",
    "TextMeta": "sign.signed_page",
    "Outcome": "fold.document",
    "Presence": "fold.presence",
    "PresenceUnavailable": "fold.presence",
    "RecurringPresence": "fold.presence",
    "FOLD_FIELDS": "fold.document",
    "sign_page": "sign.signing",
    "sign_text": "sign.signing",
    "fold_query": "search.queries",
    "story_count": "search.queries",
    "folded_hits": "search.queries",
    "collapsed_search": "search.queries",
    "versions_of": "search.queries",
    "with_story_counts": "search.queries",
    "story_buckets": "search.queries",
    "newest": "search.story_queries",
    "read_newest": "search.story_queries",
    "top_stories": "search.story_queries",
    "read_top_stories": "search.story_queries",
    "add_relations": "search.version_relations",
    "SearchRequest": "search.request",
    "Version": "search.hits",
    "StoryHit": "search.hits",
    "Origin": "search.hits",
    "story_hits": "search.hits",
    "read_versions": "search.hits",
    "page_clusters": "search.hits",
    "with_faces": "search.story_face",
    "component_template": "fold.index",
    "index_body": "fold.index",
    "build_client": "client",
    "ensure_index": "fold.index",
    "ensure_fold_fields": "fold.index",
    "ingest": "fold.batch",
    "delete_pages": "fold.lifecycle",
    "regroup_clusters": "fold.lifecycle",
    "unfolded_documents": "fold.lifecycle",
    "fold_search": "search.folded_search",
    "fold_versions": "search.folded_search",
    "Correction": "edit.correction_log",
    "CorrectionError": "edit.correction_log",
    "corrections_index": "fold.index",
    "with_period": "fold.index",
    "ensure_corrections_index": "edit.correction_log",
    "list_corrections": "edit.correction_log",
    "mark_not_duplicates": "edit.corrections",
    "merge_clusters": "edit.corrections",
    "reapply_corrections": "edit.corrections",
    "set_representative": "edit.corrections",
    "split_page": "edit.corrections",
    "undo_correction": "edit.undo",
    "roll_over": "fold.rollover",
    "originals_filter": "fold.provenance",
    "no_wire_filter": "fold.provenance",
}

__all__ = [
    "Article",
    "Constraints",
    "Correction",
    "CorrectionError",
    "FOLD_FIELDS",
    "IndexMismatchError",
    "InputError",
    "InputTypeError",
    "Match",
    "NewsfoldError",
    "Origin",
    "Outcome",
    "Page",
    "Presence",
    "PresenceUnavailable",
    "RecurringPresence",
    "Rejection",
    "SearchRequest",
    "ServerError",
    "Settings",
    "Signature",
    "SignedPage",
    "StoryHit",
    "TextMeta",
    "Version",
    "add_relations",
    "band_keys",
    "band_tokens",
    "build_client",
    "collapsed_search",
    "component_template",
    "corrections_index",
    "decide",
    "delete_pages",
    "ensure_corrections_index",
    "ensure_fold_fields",
    "ensure_index",
    "extract_article",
    "fold_query",
    "fold_search",
    "fold_versions",
    "folded_hits",
    "index_body",
    "ingest",
    "list_corrections",
    "mark_not_duplicates",
    "merge_clusters",
    "newest",
    "no_wire_filter",
    "originals_filter",
    "page_clusters",
    "read_newest",
    "read_top_stories",
    "read_versions",
    "reapply_corrections",
    "regroup_clusters",
    "roll_over",
    "set_representative",
    "sign_page",
    "sign_text",
    "split_page",
    "story_buckets",
    "story_count",
    "story_hits",
    "top_stories",
    "undo_correction",
    "unfolded_documents",
    "verify",
    "versions_of",
    "with_faces",
    "with_period",
    "with_story_counts",
]

if TYPE_CHECKING:  # the same names for a type checker, exported by __all__ (a test checks the three agree)
    from newsfold.plugin.client import build_client
    from newsfold.plugin.edit.correction_log import (
        Correction,
        CorrectionError,
        ensure_corrections_index,
        list_corrections,
    )
    from newsfold.plugin.edit.corrections import (
        mark_not_duplicates,
        merge_clusters,
        reapply_corrections,
        set_representative,
        split_page,
    )
    from newsfold.plugin.edit.undo import undo_correction
    from newsfold.plugin.errors import (
        IndexMismatchError,
        InputError,
        InputTypeError,
        NewsfoldError,
        ServerError,
    )
    from newsfold.plugin.extract.article import extract_article
    from newsfold.plugin.extract.result import Article, Rejection
    from newsfold.plugin.fold.batch import ingest
    from newsfold.plugin.fold.cluster import (
        Constraints,
        Match,
        decide,
        verify,
    )
    from newsfold.plugin.fold.document import FOLD_FIELDS, Outcome
    from newsfold.plugin.fold.index import (
        component_template,
        corrections_index,
        ensure_fold_fields,
        ensure_index,
        index_body,
        with_period,
    )
    from newsfold.plugin.fold.lifecycle import (
        delete_pages,
        regroup_clusters,
        unfolded_documents,
    )
    from newsfold.plugin.fold.presence import Presence, PresenceUnavailable, RecurringPresence
    from newsfold.plugin.fold.provenance import no_wire_filter, originals_filter
    from newsfold.plugin.fold.rollover import roll_over
    from newsfold.plugin.search.folded_search import fold_search, fold_versions
    from newsfold.plugin.search.hits import Origin, StoryHit, Version, page_clusters, read_versions, story_hits
    from newsfold.plugin.search.queries import (
        collapsed_search,
        fold_query,
        folded_hits,
        story_buckets,
        story_count,
        versions_of,
        with_story_counts,
    )
    from newsfold.plugin.search.request import SearchRequest
    from newsfold.plugin.search.story_face import with_faces
    from newsfold.plugin.search.story_queries import newest, read_newest, read_top_stories, top_stories
    from newsfold.plugin.search.version_relations import add_relations
    from newsfold.plugin.settings import Settings
    from newsfold.plugin.sign.signature import Signature, band_keys
    from newsfold.plugin.sign.signed_page import Page, SignedPage, TextMeta
    from newsfold.plugin.sign.signing import sign_page, sign_text
    from newsfold.plugin.sign.stored import band_tokens


#: module paths of newsfold 0.1 (named in docs/embedding.md) -> the module that holds that code now
MOVED = {
    "signature": "sign.signature",
    "shingles": "sign.shingles",
    "signing": "sign.signing",
    "cluster": "fold.cluster",
    "document": "fold.document",
    "index": "fold.index",
    "queries": "search.queries",
    "stories": "search.story_queries",
    "admin_queries": "admin.admin_queries",
    "headlines": "extract.headlines",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``newsfold.plugin.<old>`` as the module that holds its code now (one module object, two names)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        parent, _, name = fullname.rpartition(".")
        if parent != __name__ or name not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(f"{__name__}.{MOVED[spec.name.rpartition('.')[2]]}")

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported under its own name by :meth:`create_module`."""


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())


def __getattr__(name: str) -> Any:  # the exported object, typed where its module defines it
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'newsfold.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"newsfold.plugin.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
