"""The fields a hit shows: the one list every search result, top story, story version and cluster member is built from.

A hit is one version of a story as the search page, the top stories, a
story's page, the JSON API and the feeds show it. Its fields are named here
once, and everything else is derived from these lists or checked against
them by ``tests/plugin/test_hits.py``:

- :data:`PUBLIC_FIELDS`: the article fields every hit returns as stored. The
  web copies exactly these into each hit it answers with; every hit schema of
  ``web/openapi.json`` lists them, and every template that shows hits shows
  each of them (or says why not).
- :data:`ARTICLE_SOURCE`: what a hit reads of the article: the public fields,
  and those shown in another form (when it was indexed, the lede a snippet
  falls back to, the picture).
- :data:`FOLD_SOURCE`: what a hit reads of the fold fields (names inside
  ``newsfold.``): its story, its passages (its relation to the story's
  reference), the editor's choice of representative, its wire and its story's
  origin.
- :data:`COMPARE_SOURCE`: fold fields the search reads besides, to compare the
  versions of a story with each other.

``plugin.fold.document.VERSION_SOURCE`` (the search) and
``plugin.search.story_versions.STORY_SOURCE`` (top stories and a story's page) are built
from these lists. To add a field to every hit, add it to ``PUBLIC_FIELDS``
and show it in the templates; the tests name anything else that is missing.

This module imports nothing: the document format and the web both read it.
"""

from __future__ import annotations

#: the article fields every hit returns to clients as stored (JSON API, templates, feeds)
PUBLIC_FIELDS = ("title", "url", "site", "lang", "published")
#: the article fields a hit reads: the public ones and those it shows in another form
ARTICLE_SOURCE = (*PUBLIC_FIELDS, "ingested", "lede", "image")
#: the fold fields a hit reads (inside ``newsfold.``)
FOLD_SOURCE = ("cluster_id", "passages", "representative", "wire", "origin_wire", "origin_site", "origin_id")
#: the fold fields the search reads besides, to compare a story's versions (similarity)
COMPARE_SOURCE = ("bands", "signature", "shingle_count")


def public_fields(source: dict[str, object] | None) -> dict[str, object]:  # object: this module imports nothing
    """The public fields of a hit's ``_source`` (None for a field it lacks)."""
    source = source or {}
    return {name: source.get(name) for name in PUBLIC_FIELDS}
