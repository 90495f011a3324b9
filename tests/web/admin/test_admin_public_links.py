"""Issue 31 item 3: the admin and the public story page agree on the reference page and its dates, and link
each other."""

from __future__ import annotations

import re

from newsfold.plugin.sign.signed_page import Page
from tests.pages import page, story
from tests.web.admin.helpers import html_of, ingest_pages


def _published_out_of_order(es, settings) -> str:
    """Two copies: the one ingested first was published a day after the other."""
    text = story(311, 16)
    late = Page(html=page("Orchard festival returns", text, site="late.test"), id="late", site="late.test",
                published="2024-05-02T08:00:00Z")  # fmt: skip
    early = Page(html=page("Orchard festival is back", text, site="early.test"), id="early", site="early.test",
                 published="2024-05-01T08:00:00Z")  # fmt: skip
    out = ingest_pages(es, settings, [late])
    out |= ingest_pages(es, settings, [early])
    assert out["early"].cluster_id == out["late"].cluster_id
    return out["late"].cluster_id


def test_admin_and_public_page_name_the_same_reference_with_publication_dates(client, es, settings):
    """Fails before the fix: the admin's representative was the first page ingested ("late", "first seen")."""
    cluster = _published_out_of_order(es, settings)
    html = html_of(client.get(f"/admin/clusters/{cluster}"))
    rows = re.findall(r'data-testid="member-row" data-page-id="([^"]+)"', html)
    assert rows == ["early", "late"]
    assert "reference (first published)" in html and '<th scope="col">Published</th>' in html
    public = html_of(client.get(f"/stories/{cluster}"))
    versions = re.findall(r'data-testid="story-version" data-page-id="([^"]+)">(.*?)</tr>', public, re.S)
    assert [pid for pid, row in versions if 'data-testid="first-badge"' in row] == ["early"]


def test_admin_and_public_pages_link_each_other_for_a_logged_in_editor(client, make_app, admin_settings, corpus):
    """Fails before the fix: no "inspect" link on public cards and story pages, no public link in the admin."""
    a = corpus["a"]
    admin = html_of(client.get(f"/admin/clusters/{a}"))
    assert f'<a href="/stories/{a}" data-testid="public-story">' in admin
    inspect = f'<a href="/admin/clusters/{a}" data-testid="inspect-link">inspect</a>'
    assert inspect in html_of(client.get("/?q=Zephyrton"))
    assert inspect in html_of(client.get(f"/stories/{a}"))
    anonymous = make_app(admin_settings).test_client()
    assert 'data-testid="inspect-link"' not in html_of(anonymous.get("/?q=Zephyrton"))
    assert 'data-testid="inspect-link"' not in html_of(anonymous.get(f"/stories/{a}"))
