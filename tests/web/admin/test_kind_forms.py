"""Issue 37, item 2: a kind of correction with no form of its own gets one on the cluster page, built from its
entry in ``plugin.edit.kinds.KINDS`` (web/templates/admin/_kind_form.html), and that form makes the correction.

The test takes every kind's own form away (``OWN_FORMS``), so each kind is served by the built form."""

from __future__ import annotations

import html as html_lib
import re

import pytest

from newsfold.plugin.edit.kinds import KINDS
from newsfold.web.admin import views
from tests.web.admin.helpers import cluster_of, csrf_of, html_of


def built_form(page: str, kind) -> tuple[str, dict[str, str], set[str]]:
    """The action of ``kind``'s built form, its fields' default values (a page field's selected member), and the
    names of all its fields."""
    form = rf'<form method="post" action="([^"]+)" class="card" data-testid="{kind.route}-form">(.*?)</form>'
    found = re.search(form, page, re.S)
    assert found, f"no built form for {kind.name}"
    action, body = html_lib.unescape(found.group(1)), found.group(2)
    names = set(re.findall(r'name="([^"]+)"', body)) - {"csrf_token"}
    defaults = {}
    for name, options in re.findall(r'<select id="[^"]+" name="([^"]+)" required>(.*?)</select>', body, re.S):
        defaults[name] = html_lib.unescape(re.search(r'<option value="([^"]+)" selected>', options).group(1))
    return action, defaults, names


@pytest.fixture
def built_only(monkeypatch):
    monkeypatch.setattr(views, "OWN_FORMS", frozenset())


def test_every_kind_without_a_form_of_its_own_gets_one_built_from_its_entry(built_only, client, corpus):
    page = html_of(client.get(f"/admin/clusters/{corpus['a']}"))
    for kind in KINDS:
        action, _, names = built_form(page, kind)
        assert action == f"/admin/clusters/{corpus['a']}/{kind.route}"
        assert names == {f.name for f in kind.fields} | {"note"}, kind.name
        assert f">{kind.label}</button>" in page


def test_the_built_forms_make_their_corrections(built_only, client, corpus, es, settings):
    url = f"/admin/clusters/{corpus['a']}"
    by_name = {kind.name: kind for kind in KINDS}

    action, defaults, _ = built_form(html_of(client.get(url)), by_name["not_duplicates"])
    assert defaults == {"page_a": "a1", "page_b": "a2"}  # the first two members
    res = client.post(action, data={**defaults, "note": "two stories", "csrf_token": csrf_of(client.get(url))})
    assert res.status_code == 303
    assert cluster_of(es, settings, "a1") != cluster_of(es, settings, "a2")

    url = f"/admin/clusters/{cluster_of(es, settings, 'a1')}"
    action, _, _ = built_form(html_of(client.get(url)), by_name["merge"])
    data = {"other_cluster_id": corpus["b"], "confirm": "true", "csrf_token": csrf_of(client.get(url))}
    res = client.post(action, data=data)  # the two stories are not similar: the checkbox confirms it
    assert res.status_code == 303
    assert cluster_of(es, settings, "a1") == cluster_of(es, settings, "b1")


def test_a_story_of_one_page_shows_no_form_that_needs_two_of_its_pages(client, corpus):
    page = html_of(client.get(f"/admin/clusters/{corpus['lone']}"))
    assert 'data-testid="not-duplicates-form"' not in page
    page = html_of(client.get(f"/admin/clusters/{corpus['a']}"))  # not duplicates is a built form, not built-only
    assert 'data-testid="not-duplicates-form"' in page and "not_duplicates" not in views.OWN_FORMS
