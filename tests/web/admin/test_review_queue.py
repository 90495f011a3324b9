"""Issue 38, item 2: the editor's queue, stories from the weakest pair up, in HTML and JSON, one click from the pair."""

from __future__ import annotations

import dataclasses
import html as html_lib
import re

import pytest

from newsfold.plugin.sign.signed_page import Page
from newsfold.web.auth import new_api_token
from tests.pages import page, story
from tests.web.admin.helpers import ADMIN_WEB, BEARER, cluster_rows, html_of, ingest_pages

EDITOR, EDITOR_ENTRY = new_api_token("editor", "read,edit")
READER, READER_ENTRY = new_api_token("reader", "read")
QUEUE_WEB = dataclasses.replace(
    ADMIN_WEB, api_token_hashes=",".join([ADMIN_WEB.api_token_hashes, EDITOR_ENTRY, READER_ENTRY])
)


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _stored_pairs(es, settings) -> dict[str, list[tuple[float, str, str]]]:
    """Every story's pairs as the index holds them: (similarity, page, the page it joined), by cluster."""
    es.indices.refresh(index=settings.index)
    res = es.search(index=settings.index, size=100, query={"match_all": {}})
    out: dict[str, list[tuple[float, str, str]]] = {}
    for hit in res["hits"]["hits"]:
        fold = hit["_source"]["newsfold"]
        if fold.get("similarity") is not None:
            out.setdefault(fold["cluster_id"], []).append((fold["similarity"], hit["_id"], fold["matched_id"]))
    return out


@pytest.fixture
def editor_client(web_app, admin_settings, corpus):
    return web_app(admin_settings, QUEUE_WEB).test_client()


def test_the_json_queue_is_ordered_by_each_storys_weakest_pair(editor_client, corpus, es, settings):
    pairs = _stored_pairs(es, settings)
    res = editor_client.get("/api/clusters?sort=weakest", headers=_bearer(EDITOR))
    assert res.status_code == 200, res.get_data(as_text=True)
    body = res.get_json()
    assert body["sort"] == "weakest" and body["order"] == "asc" and body["total"] == 2
    listed = [row["cluster_id"] for row in body["clusters"]]
    expected = sorted(pairs, key=lambda c: (min(pairs[c])[0], c))
    assert listed == expected and set(listed) == {corpus["a"], corpus["b"]}
    for row in body["clusters"]:
        similarity, page_id, matched = min(pairs[row["cluster_id"]])
        assert row["weakest_similarity"] == pytest.approx(similarity, abs=1e-4)
        assert row["weakest_pair"] == {"page_id": page_id, "matched_id": matched}
        assert row["corrections"] is None
    # the edited copy (a3) is cluster A's weakest pair and weaker than B's exact copies
    assert body["clusters"][0]["cluster_id"] == corpus["a"] and body["clusters"][0]["weakest_pair"]["page_id"] == "a3"
    flipped = editor_client.get("/api/clusters?sort=weakest&order=desc", headers=_bearer(EDITOR)).get_json()
    assert [row["cluster_id"] for row in flipped["clusters"]] == expected[::-1]


def test_the_queue_needs_an_editors_token_and_one_story_stays_public(editor_client, corpus):
    assert editor_client.get("/api/clusters?sort=weakest").status_code == 401
    refused = editor_client.get("/api/clusters?sort=weakest", headers=_bearer(READER))
    assert refused.status_code == 403 and refused.get_json()["required_scope"] == "edit"
    assert editor_client.get(f"/api/clusters/{corpus['a']}").status_code == 200
    bad = editor_client.get("/api/clusters?sort=shakiest", headers=_bearer(EDITOR))
    assert bad.status_code == 400 and "sort must be one of" in bad.get_json()["error"]


def test_the_html_queue_links_each_row_to_its_pair_side_by_side(editor_client, corpus, es, settings):
    pairs = _stored_pairs(es, settings)
    home = html_of(editor_client.get("/admin/", headers=BEARER))
    link = re.search(r'href="([^"]+)" data-testid="review-queue-link"', home)
    assert link and html_lib.unescape(link.group(1)) == "/admin/clusters?sort=weakest"  # click 1
    queue = html_of(editor_client.get("/admin/clusters?sort=weakest", headers=BEARER))
    assert cluster_rows(queue) == sorted(pairs, key=lambda c: (min(pairs[c])[0], c))
    shown = [float(s) for s in re.findall(r'data-testid="weakest" data-similarity="([0-9.]+)"', queue)]
    assert shown == sorted(shown) and len(shown) == 2
    first = re.search(r'href="([^"]+)" data-testid="weakest-compare"', queue)
    assert first, "the first row links its pair"
    _, page_id, matched = min(pairs[corpus["a"]])
    compare = editor_client.get(html_lib.unescape(first.group(1)), headers=BEARER)  # click 2
    text = html_of(compare)
    assert compare.status_code == 200 and f"<code>{page_id}</code>" in text and f"<code>{matched}</code>" in text


def test_site_and_language_filters_offer_the_index_values(editor_client, corpus):
    queue = html_of(editor_client.get("/admin/clusters?sort=weakest&site=five.test", headers=BEARER))
    site_select = re.search(r'<select id="site".*?</select>', queue, re.S)
    assert site_select, "the site filter is a list"
    options = re.findall(r'<option value="([^"]*)"', site_select.group(0))
    assert options == ["", "five.test", "four.test", "one.test", "six.test", "three.test", "two.test"]
    assert '<option value="five.test" selected>' in site_select.group(0)
    assert cluster_rows(queue) == [corpus["b"]]
    lang_select = re.search(r'<select id="lang".*?</select>', queue, re.S)
    assert lang_select and '<option value="en">' in lang_select.group(0)


def test_most_corrected_lists_only_corrected_stories_most_first(editor_client, corpus):
    assert editor_client.get("/api/clusters?sort=corrected", headers=_bearer(EDITOR)).get_json()["total"] == 0
    # with a token no CSRF field is needed
    res = editor_client.post(f"/admin/clusters/{corpus['b']}/representative", data={"page_id": "b2"}, headers=BEARER)
    assert res.status_code == 303
    body = editor_client.get("/api/clusters?sort=corrected", headers=_bearer(EDITOR)).get_json()
    assert [(r["cluster_id"], r["corrections"]) for r in body["clusters"]] == [(corpus["b"], 1)]


def test_newest_and_most_sites_sorts_use_publication_dates_and_site_counts(editor_client, es, settings, corpus):
    text = story(311, 18)
    ingest_pages(es, settings, [Page(html=page("Old ferry", text), id="o1", site="s1.test", published="2020-01-02")])
    ingest_pages(es, settings, [Page(html=page("Old ferry", text), id="o2", site="s2.test", published="2020-01-05")])
    es.indices.refresh(index=settings.index)
    old = es.get(index=settings.index, id="o1")["_source"]["newsfold"]["cluster_id"]
    newest = editor_client.get("/api/clusters?sort=newest&order=asc", headers=_bearer(EDITOR)).get_json()
    dated = [r for r in newest["clusters"] if r["latest_published"]]
    assert [r["cluster_id"] for r in dated] == [old] and dated[0]["first_published"].startswith("2020-01-02")
    assert dated[0]["latest_published"].startswith("2020-01-05")
    assert newest["clusters"][-1]["cluster_id"] == old  # the undated stories count as oldest: first in asc
    sites = editor_client.get("/api/clusters?sort=sites", headers=_bearer(EDITOR)).get_json()["clusters"]
    assert [r["sites"] for r in sites] == sorted((r["sites"] for r in sites), reverse=True)
    queue = html_of(editor_client.get("/admin/clusters?sort=newest", headers=BEARER))
    assert cluster_rows(queue)[0] == old and "2 Jan 2020" in queue and "5 Jan 2020" in queue
