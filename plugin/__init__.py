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
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> module of newsfold.plugin that defines it
_EXPORTS = {
    "Article": "extract",
    "Rejection": "extract",
    "extract_article": "extract",
    "Settings": "settings",
    "NewsfoldError": "errors",
    "InputError": "errors",
    "InputTypeError": "errors",
    "IndexMismatchError": "errors",
    "ServerError": "errors",
    "Signature": "signature",
    "band_keys": "signature",
    "Constraints": "cluster",
    "Match": "cluster",
    "decide": "cluster",
    "verify": "cluster",
    "Page": "document",
    "SignedPage": "document",
    "Outcome": "document",
    "FOLD_FIELDS": "document",
    "sign_page": "signing",
    "sign_text": "signing",
    "fold_query": "queries",
    "story_count": "queries",
    "folded_hits": "queries",
    "collapsed_search": "queries",
    "versions_of": "queries",
    "component_template": "index",
    "index_body": "index",
    "build_client": "client",
    "ensure_index": "index",
    "ensure_fold_fields": "index",
    "ingest": "batch",
    "delete_pages": "lifecycle",
    "regroup_clusters": "lifecycle",
    "unfolded_documents": "lifecycle",
    "fold_search": "search",
    "Correction": "correction_log",
    "CorrectionError": "correction_log",
    "corrections_index": "index",
    "ensure_corrections_index": "correction_log",
    "list_corrections": "correction_log",
    "mark_not_duplicates": "corrections",
    "merge_clusters": "corrections",
    "reapply_corrections": "corrections",
    "set_representative": "corrections",
    "split_page": "corrections",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:  # the exported object, typed where its module defines it
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'newsfold.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"newsfold.plugin.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
