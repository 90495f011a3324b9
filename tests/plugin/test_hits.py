"""The fields a hit shows have one home, ``plugin/hits.py``: what reads, returns, describes or shows a hit agrees.

Adding a field to every hit is one edit of ``PUBLIC_FIELDS``; these tests name every other place that must follow
(the OpenAPI schemas of hits, the templates that show hits).
"""

from __future__ import annotations

import ast
import json
import re

import pytest

from newsfold.plugin import hits
from newsfold.plugin.fold.document import CONTENT_FIELDS, FOLD_FIELDS, VERSION_SOURCE, path
from newsfold.plugin.search.story_versions import STORY_SOURCE
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT
OPENAPI = json.loads((ROOT / "web" / "openapi.json").read_text(encoding="utf-8"))["components"]["schemas"]
TEMPLATES = ROOT / "web" / "templates"

#: the OpenAPI schemas of a hit: a version, a story or a cluster member as the JSON API returns it
HIT_SCHEMAS = ("Version", "Story", "ClusterMember", "TopStory", "StoryVersion", "VersionText")
#: schemas with a title or url that are not hits, and why
NOT_HITS = {
    "Page": "a page submitted to POST /api/pages",
    "Origin": "where a story came from, not one of its versions",
    "ClusterListRow": "a story of the editor's queue: its figures, headed by its face's title and site",
}
#: the templates that show hits -> the public fields each leaves out on purpose, and why
HIT_TEMPLATES = {
    "search.html": {},
    "_top_stories.html": {
        "url": "a top story links to its story page",
        "published": "a top story shows when its latest version appeared",
    },
    "story.html": {},  # a version's language is its title's lang attribute
    "version.html": {"lang": "the page shows one version's text"},
}


def test_the_lists_name_fields_the_index_has():
    unknown = sorted(set(hits.ARTICLE_SOURCE) - set(CONTENT_FIELDS))
    assert not unknown, f"not article fields of the index (plugin/fold/document.py CONTENT_FIELDS): {unknown}"
    assert set(hits.PUBLIC_FIELDS) <= set(hits.ARTICLE_SOURCE)
    assert set(hits.FOLD_SOURCE) | set(hits.COMPARE_SOURCE) <= set(FOLD_FIELDS)
    mapping = json.loads((ROOT / "mappings" / "articles.json").read_text(encoding="utf-8"))["mappings"]["properties"]
    assert set(hits.ARTICLE_SOURCE) <= set(mapping), "a hit's article field has no mapping in mappings/articles.json"


def test_newsfold_writes_every_article_field_it_lists():
    """A field listed in ``CONTENT_FIELDS`` (so a hit may read it) is one ``content_fields`` writes for every page."""
    from newsfold.plugin import Settings, SignedPage, TextMeta, sign_text
    from newsfold.plugin.fold.document import content_fields

    signed = sign_text("A storm hit the coast on Monday. " * 30,
                       TextMeta(title="Storm", url="https://a.example/x"), settings=Settings())  # fmt: skip
    assert isinstance(signed, SignedPage), signed
    written = content_fields(signed, ingested="2026-01-01T00:00:00.000Z")
    assert set(written) == set(CONTENT_FIELDS), "write the field in plugin/fold/document.py content_fields"


def test_the_sources_of_the_search_and_the_story_lists_are_derived_from_it():
    read = [*hits.ARTICLE_SOURCE, *(path(f) for f in hits.FOLD_SOURCE)]
    assert read == STORY_SOURCE
    assert [*read, *(path(f) for f in hits.COMPARE_SOURCE)] == VERSION_SOURCE


def test_the_home_of_the_fields_imports_nothing():
    tree = ast.parse((ROOT / "plugin" / "hits.py").read_text(encoding="utf-8"))
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)]
    assert imports == ["from __future__ import annotations"]


def test_public_fields_copies_exactly_the_public_fields():
    source = {"title": "T", "url": "u", "body": "text", "newsfold": {"signature": "x"}}
    assert hits.public_fields(source) == {name: source.get(name) for name in hits.PUBLIC_FIELDS}
    assert set(hits.public_fields(None)) == set(hits.PUBLIC_FIELDS)


def _properties(schema: dict) -> dict:
    found = dict(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        found.update(part.get("properties", {}))
    return found


@pytest.mark.parametrize("name", HIT_SCHEMAS)
def test_every_hit_schema_lists_the_public_fields(name):
    properties = _properties(OPENAPI[name])
    missing = [field for field in hits.PUBLIC_FIELDS if field not in properties]
    assert not missing, f"web/openapi.json: schema {name} lacks the public fields {missing} (plugin/hits.py)"
    for field in hits.PUBLIC_FIELDS:
        assert "null" in properties[field]["type"], f"{name}.{field}: a page may lack it, so it may be null"


def test_every_schema_with_a_title_or_url_is_a_hit_or_says_why_not():
    unknown = sorted(
        name
        for name, schema in OPENAPI.items()
        if {"title", "url"} & set(_properties(schema)) and name not in HIT_SCHEMAS and name not in NOT_HITS
    )
    assert not unknown, f"add these schemas to HIT_SCHEMAS (they return hits) or to NOT_HITS: {unknown}"


@pytest.mark.parametrize("template", sorted(HIT_TEMPLATES))
def test_every_template_that_shows_hits_shows_the_public_fields(template):
    text = (TEMPLATES / template).read_text(encoding="utf-8")
    left_out = HIT_TEMPLATES[template]
    assert set(left_out) <= set(hits.PUBLIC_FIELDS), f"{template}: leaves out fields that are not public"
    shown = {field for field in hits.PUBLIC_FIELDS if re.search(rf"\.{field}\b", text)}
    missing = [field for field in hits.PUBLIC_FIELDS if field not in shown and field not in left_out]
    assert not missing, f"web/templates/{template} does not show {missing}: show them, or say why in HIT_TEMPLATES"
    stale = sorted(field for field in left_out if field in shown)
    assert not stale, f"web/templates/{template} shows {stale}: take them out of HIT_TEMPLATES"


def test_no_web_module_lists_the_public_fields_again():
    """A second list of the public fields in web/ would drift from plugin/hits.py."""
    public = set(hits.PUBLIC_FIELDS)
    copies = []
    for module in sorted((ROOT / "web").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if "title" in names and len(names & public) >= 3:  # PAGE_FIELDS (a submitted page) has no title
                    copies.append(f"{module.relative_to(ROOT)}:{node.lineno}")
    assert not copies, f"use newsfold.plugin.hits (PUBLIC_FIELDS, public_fields) instead: {copies}"
