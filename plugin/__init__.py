"""newsfold's core: the public API an Elasticsearch-backed news search embeds.

    from newsfold.plugin import Settings, Page, build_client, ensure_index, sign_page, ingest, collapsed_search

    settings = Settings.from_env()
    client = build_client(settings)
    ensure_index(client, settings)                      # mapping from index_body(settings)
    signed = sign_page(Page(html=raw_bytes, url=url), settings)
    outcomes = ingest([signed], client=client, settings=settings)   # finds/assigns the cluster
    body = collapsed_search("election", page=1)          # one hit per story, for your own search
    split_page(page_id, user="ed", client=client, settings=settings)  # editor corrections (docs/corrections.md)

Everything here is pure except the functions that take ``client=``.
"""

from newsfold.plugin.client import build_client
from newsfold.plugin.cluster import Constraints, Match, decide, verify
from newsfold.plugin.corrections import (
    Correction,
    CorrectionError,
    corrections_index,
    ensure_corrections_index,
    list_corrections,
    mark_not_duplicates,
    merge_clusters,
    reapply_corrections,
    set_representative,
    split_page,
)
from newsfold.plugin.dedup import Outcome, Page, SignedPage, ingest, sign_page
from newsfold.plugin.extract import Article, Rejection, extract_article
from newsfold.plugin.index import ensure_index, index_body
from newsfold.plugin.queries import collapsed_search, versions_of
from newsfold.plugin.settings import Settings
from newsfold.plugin.signature import Signature, band_keys, sign_text

__all__ = [
    "Article",
    "Constraints",
    "Correction",
    "CorrectionError",
    "Match",
    "Outcome",
    "Page",
    "Rejection",
    "Settings",
    "Signature",
    "SignedPage",
    "band_keys",
    "build_client",
    "collapsed_search",
    "corrections_index",
    "decide",
    "ensure_corrections_index",
    "ensure_index",
    "extract_article",
    "index_body",
    "ingest",
    "list_corrections",
    "mark_not_duplicates",
    "merge_clusters",
    "reapply_corrections",
    "set_representative",
    "sign_page",
    "sign_text",
    "split_page",
    "verify",
    "versions_of",
]
