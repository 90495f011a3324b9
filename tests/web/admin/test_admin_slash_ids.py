"""Cluster ids holding ``/`` (a folder ingest's ids are relative paths) work in every admin and API route."""

from __future__ import annotations

from urllib.parse import quote

from newsfold.plugin.sign.signed_page import Page
from tests.pages import page, story
from tests.web.admin.helpers import BEARER, PASSWORD, csrf_of, html_of, ingest_pages, post_form


def test_a_cluster_id_with_slashes_can_be_inspected_compared_and_corrected(make_app, admin_settings, es, settings):
    text = story(320, 16)
    out = ingest_pages(es, settings, [Page(html=page("Slashed story", text), id="news/2024/a.html", site="a.test")])
    out |= ingest_pages(es, settings, [Page(html=page("Slashed story too", text), id="news/2024/b.html",
                                            site="b.test")])  # fmt: skip
    cluster_id = out["news/2024/a.html"].cluster_id
    assert "/" in cluster_id and out["news/2024/b.html"].cluster_id == cluster_id
    client = make_app(admin_settings).test_client()
    form = client.get("/login")
    client.post("/login", data={"username": "admin", "password": PASSWORD, "csrf_token": csrf_of(form)})
    detail = client.get(f"/admin/clusters/{cluster_id}")
    assert detail.status_code == 200, detail.status_code
    assert "news/2024/b.html" in html_of(detail)
    compare = client.get(f"/admin/clusters/{cluster_id}/compare")
    assert compare.status_code == 200
    assert client.get(f"/api/clusters/{quote(cluster_id)}").status_code == 200
    res = post_form(client, f"/admin/clusters/{cluster_id}", f"/admin/clusters/{cluster_id}/split",
                    {"page_id": "news/2024/b.html"})  # fmt: skip
    assert res.status_code == 303, html_of(res)[:300]
    again = client.post(f"/api/clusters/{cluster_id}/representative", json={"page_id": "news/2024/a.html"},
                        headers=BEARER)  # fmt: skip
    assert again.status_code == 200, again.get_data(as_text=True)[:300]
