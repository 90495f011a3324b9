"""The id grammar (``plugin.ids``), and the public functions of the core that refuse what it excludes."""

from __future__ import annotations

import pytest

from newsfold.plugin import InputError, TextMeta, delete_pages, ingest, sign_page, sign_text
from newsfold.plugin.edit.correction_log import CorrectionError, check_page_id
from newsfold.plugin.ids import MAX_ID_BYTES, id_problem, is_page_id
from newsfold.plugin.ids import check_page_id as check_id
from newsfold.plugin.sign.signed_page import Page
from tests.pages import page, story

#: awkward but valid: every route, link, correction and delete must reach these (tests/web/test_id_routes.py)
AWKWARD = [
    "news/2024/a b.html",
    "https://site.test/a//b?x=1&y=%2F#frag",
    "trailing/",
    "日本/記事~1",
    '50% off "quoted" <b>',
    "versions/a",
    "compare/a",
    "a/versions-1",
    "a/compare/b",
    "merge/a",
    "a/merge/b",
    "a/splits",
    "..a/b..",
    "é" * 256,  # 512 bytes
]
BAD = {
    "": "is empty",
    " ": "is blank",
    " a": "starts or ends with whitespace",
    "a\u3000": "starts or ends with whitespace",
    "a\nb": "control character U+000A",
    "a\x00b": "control character U+0000",
    "a\x1bb": "control character U+001B",
    "a\x85b": "control character U+0085",
    "/a": "starts with /",
    "..": "a . or ..",
    "a/./b": "a . or ..",
    "../../x": "a . or ..",
    "a/..": "a . or ..",
    "x/versions/y": "versions after a slash",
    "x/versions": "versions after a slash",
    "x/compare": "ends with /compare",
    "x/merge": "/merge, /split",
    "a/b/split": "/split, /representative",
    "x/representative": "/representative, /not-duplicates",
    "x/not-duplicates": "/not-duplicates (words",
    "x" * (MAX_ID_BYTES + 1): "513 bytes",
    "é" * 257: "514 bytes",
    "a\ud800": "lone surrogate",
}


@pytest.mark.parametrize("value", AWKWARD)
def test_awkward_ids_are_in_the_grammar(value):
    assert id_problem(value) is None and is_page_id(value)


@pytest.mark.parametrize(("value", "why"), sorted(BAD.items()))
def test_ids_outside_the_grammar_are_named_with_the_reason(value, why):
    assert why in (id_problem(value) or "")
    with pytest.raises(InputError, match="^page_a "):
        check_id(value, "page_a")
    if "bytes" not in why:  # a correction may name a story, whose name is longer than a page id
        with pytest.raises(CorrectionError, match="^page_a "):
            check_page_id(value, "page_a")


def test_a_story_name_may_be_longer_than_a_page_id():
    name = "x" * MAX_ID_BYTES + "~0123abcd"
    assert id_problem(name) is not None and check_page_id(name, "cluster_a") == name


@pytest.mark.parametrize("value", ["x" * 513, "a\nb", "../x", " "])
def test_the_public_functions_refuse_a_bad_id_naming_the_argument(settings, es, value):
    html = page("A story", story(3201))
    with pytest.raises(InputError, match=r"^page\.id "):
        sign_page(Page(html=html, id=value), settings)
    with pytest.raises(InputError, match=r"^page_id "):
        sign_text("\n".join(story(3201)), TextMeta(page_id=value), settings=settings)
    signed = sign_page(Page(html=html, id="fine"), settings)
    signed.page_id = value  # a host that edits a signed page
    with pytest.raises(InputError, match=r"^pages\[0\]\.page_id "):
        ingest([signed], client=es, settings=settings)


def test_delete_pages_removes_a_page_whose_id_predates_the_grammar(settings, es):
    """A blank id (accepted before the grammar) can still be deleted; only what no document can have is refused."""
    signed = sign_page(Page(html=page("Blank", story(3202)), id="placeholder"), settings)
    signed.page_id = "   "
    from newsfold.plugin.fold.document import own_document  # the stored form, written as an old version did

    doc = own_document(signed, cluster_id="   ", match=None, ingested="2024-01-01T00:00:00Z")
    es.index(index=settings.index, id="   ", document=doc, refresh=True)
    (gone,) = delete_pages(["   "], client=es, settings=settings)
    assert gone.status == "deleted"
    with pytest.raises(InputError, match=r"page_ids\[0\] has more than 512 bytes"):
        delete_pages(["x" * 513], client=es, settings=settings)
