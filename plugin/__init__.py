"""newsfold's core: the public API a host search embeds (docs/embedding.md).

    from newsfold.plugin import Settings, build_client, component_template, sign_page, sign_text, ingest, fold_query

    settings = Settings.from_env()
    client = build_client(settings)
    client.cluster.put_component_template(name="newsfold", **component_template(settings))
    signed = sign_text(text, title=title, url=url, page_id=doc_id, settings=settings)   # or sign_page(Page(html=...))
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
from typing import Any

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
    "Constraints": "fold.cluster",
    "Match": "fold.cluster",
    "decide": "fold.cluster",
    "verify": "fold.cluster",
    "Page": "sign.signed_page",
    "SignedPage": "sign.signed_page",
    "Outcome": "fold.document",
    "FOLD_FIELDS": "fold.document",
    "sign_page": "sign.signing",
    "sign_text": "sign.signing",
    "fold_query": "search.queries",
    "story_count": "search.queries",
    "folded_hits": "search.queries",
    "collapsed_search": "search.queries",
    "versions_of": "search.queries",
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
    "ensure_corrections_index": "edit.correction_log",
    "list_corrections": "edit.correction_log",
    "mark_not_duplicates": "edit.corrections",
    "merge_clusters": "edit.corrections",
    "reapply_corrections": "edit.corrections",
    "set_representative": "edit.corrections",
    "split_page": "edit.corrections",
    "undo_correction": "edit.undo",
}

__all__ = sorted(_EXPORTS)


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
