"""The admin area: access, the cluster list, a cluster's detail with its evidence, and comparison.

Real servers only (the osmem stand-in or ``ELASTICSEARCH_URL``, a real Redis);
the editor logs in through the login view and posts forms with their CSRF token.
"""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET

import pytest

from newsfold.plugin.edit.correction_log import MAX_NOTE_CHARS
from newsfold.web.actions import cluster_list as web_clusters
from tests.web.admin.helpers import (
    BEARER,
    HOSTILE,
    cluster_rows,
    html_of,
)

# ---------------------------------------------------------------- pure parts: query builders


# ---------------------------------------------------------------- pure parts: evidence


# ---------------------------------------------------------------- the app


# ---------------------------------------------------------------- access


def test_admin_pages_and_correction_api_need_a_login(make_app, admin_settings, corpus):
    anonymous = make_app(admin_settings).test_client()
    for path in ("/admin/clusters", f"/admin/clusters/{corpus['a']}", "/admin/stats", "/admin/corrections"):
        res = anonymous.get(path)
        assert res.status_code == 303 and "/login" in res.headers["Location"], path
    res = anonymous.post(f"/api/clusters/{corpus['a']}/split", json={"page_id": "a3"})
    assert res.status_code == 401
    assert anonymous.get("/api/corrections").status_code == 401  # the log names editors: not public
    assert anonymous.get("/api/corrections", headers=BEARER).status_code == 200


# ---------------------------------------------------------------- cluster list


def test_cluster_list_sorts_filters_and_pages(make_app, admin_settings, corpus):
    client = make_app(admin_settings, ADMIN_CLUSTERS=1).test_client()
    a, b = corpus["a"], corpus["b"]
    first = client.get("/admin/clusters", headers=BEARER)
    html = html_of(first)
    assert first.status_code == 200
    assert "2 clusters" in html and cluster_rows(html) == [a]  # largest first, one per page
    assert 'aria-sort="descending"' in html
    second = html_of(client.get("/admin/clusters?page=2", headers=BEARER))
    assert cluster_rows(second) == [b] and 'rel="prev"' in second
    assert cluster_rows(html_of(client.get("/admin/clusters?sort=size&order=asc", headers=BEARER))) == [b]
    assert cluster_rows(html_of(client.get("/admin/clusters?sort=first_seen&order=asc", headers=BEARER))) == [a]
    assert cluster_rows(html_of(client.get("/admin/clusters?sort=last_seen", headers=BEARER))) == [b]
    assert cluster_rows(html_of(client.get("/admin/clusters?sort=sites", headers=BEARER))) == [a]
    assert cluster_rows(html_of(client.get("/admin/clusters?min_size=3", headers=BEARER))) == [a]
    only_b = html_of(client.get("/admin/clusters?max_size=2", headers=BEARER))
    assert cluster_rows(only_b) == [b] and "1 cluster;" in only_b
    # page filters pick clusters; the size shown is the whole cluster's
    by_site = html_of(client.get("/admin/clusters?site=five.test", headers=BEARER))
    assert cluster_rows(by_site) == [b] and re.search(
        r'data-label="Pages">2</td>\s*<td class="num" data-label="Sites">2</td>', by_site
    )
    assert cluster_rows(html_of(client.get("/admin/clusters?q=zephyrton", headers=BEARER))) == [a]
    assert cluster_rows(html_of(client.get("/admin/clusters?q=quillbrook+storm", headers=BEARER))) == [b]
    assert cluster_rows(html_of(client.get("/admin/clusters?lang=xx", headers=BEARER))) == []
    today = dt.datetime.now(dt.UTC).date()
    tomorrow, yesterday = today + dt.timedelta(days=1), today - dt.timedelta(days=1)
    assert cluster_rows(html_of(client.get(f"/admin/clusters?first_from={tomorrow}", headers=BEARER))) == []
    assert cluster_rows(html_of(client.get(f"/admin/clusters?last_to={yesterday}", headers=BEARER))) == []
    in_range = html_of(client.get(f"/admin/clusters?first_from={today}&last_to={today}&page=2", headers=BEARER))
    assert cluster_rows(in_range) == [b]
    # the sort links keep the filters and flip the order of the current sort
    assert 'href="/admin/clusters?min_size=3&amp;order=asc"' in html_of(
        client.get("/admin/clusters?min_size=3", headers=BEARER)
    )


def test_broad_page_filters_are_matched_inside_the_aggregation(make_app, admin_settings, corpus, monkeypatch, es):
    monkeypatch.setattr(web_clusters, "MAX_CLUSTERS_BY_ID", 0)  # every filter counts as broad here
    client = make_app(admin_settings).test_client()
    assert cluster_rows(html_of(client.get("/admin/clusters?q=zephyrton", headers=BEARER))) == [corpus["a"]]
    by_site = html_of(client.get("/admin/clusters?site=five.test&sort=size&order=asc", headers=BEARER))
    assert cluster_rows(by_site) == [corpus["b"]] and "2 clusters" not in by_site
    everything = web_clusters.ClusterListParams()
    capped = web_clusters.load_cluster_list(es, admin_settings, everything, page_size=10, max_clusters=1)
    assert capped.truncated and capped.total == 1 and capped.rows[0]["cluster_id"] == corpus["a"]
    assert not web_clusters.load_cluster_list(es, admin_settings, everything, page_size=10).truncated


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("min_size=abc", "min_size must be a whole number"),
        ("min_size=5&max_size=2", "max_size 2 is below min_size 5"),
        ("first_from=2024-13-01", "first_from must be a date"),
        ("last_from=2024-05-02&last_to=2024-05-01", "last_from 2024-05-02 is after last_to"),
        ("sort=title", "sort must be one of"),
        ("page=0", "page must be between"),
        ("q=" + "+".join(["storm"] * 33), "the query has 33 words"),
        ("q=" + "x" * 501, "the query has 501 characters; the limit is 500"),
    ],
)
def test_cluster_list_explains_bad_filters(make_app, admin_settings, corpus, query, message):
    res = make_app(admin_settings).test_client().get(f"/admin/clusters?{query}", headers=BEARER)
    assert res.status_code == 400
    assert message in html_of(res) and 'data-testid="cluster-filters"' in html_of(res)


# ---------------------------------------------------------------- cluster detail


def test_cluster_detail_members_scores_heatmap_pairs_and_evidence(client, corpus):
    a = corpus["a"]
    res = client.get(f"/admin/clusters/{a}")
    html = html_of(res)
    assert res.status_code == 200
    assert "3 pages on 3 sites" in html
    rows = re.findall(r'data-testid="member-row" data-page-id="([^"]+)"', html)
    assert rows == ["a1", "a2", "a3"]  # the reference first, then by date (the pages have none: by ingest)
    assert html.count('data-testid="representative-badge"') == 1 and "reference (first published)" in html
    # the note fields take what the corrections log keeps
    # (the merge note is on /admin/merge): not duplicates, and each member's split and representative forms
    forms = html.count('data-testid="split-form"') + html.count('data-testid="representative-form"')
    assert forms == 6 and html.count(f'name="note" type="text" maxlength="{MAX_NOTE_CHARS}"') == 1 + forms
    jaccards = re.findall(r'data-testid="member-jaccard">([^<]+)<', html)
    scores = [int(j.rstrip("%")) for j in jaccards]
    assert scores[0] == 100 and scores[1] >= 90  # the representative itself, then a copy of the same text
    assert 35 <= scores[2] < scores[1]  # the edited copy
    # heat map: a 3 x 3 SVG whose off-diagonal cells link to the comparison, with a table fallback
    svg = re.search(r"<svg .*?</svg>", html, re.S).group(0)
    root = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    assert len([r for r in root.iter(f"{ns}rect") if r.get("class") == "nf-cell"]) == 9
    hrefs = [link.get("href") for link in root.iter(f"{ns}a")]
    assert len(hrefs) == 6 and f"/admin/clusters/{a}/compare?a=a1&b=a3" in hrefs
    assert 'data-testid="heatmap-table"' in html
    # pairs, least similar first: the two pairs with the edited copy come before the identical pair
    pair_rows = re.findall(r'data-testid="pair-row">.*?</tr>', html, re.S)
    assert len(pair_rows) == 3 and "3. three.test" in pair_rows[0] and "3. three.test" not in pair_rows[2]
    # evidence: the edited copy matched one of the others, with passages and signals
    evidence = re.search(r'data-testid="evidence" data-page-id="a3">.*?</details>', html, re.S).group(0)
    assert 'data-testid="signal-jaccard" data-matched="yes"' in evidence
    assert 'data-testid="signal-band_keys" data-matched="yes"' in evidence
    assert 'data-testid="signal-site" data-matched="no"' in evidence
    assert "matched when ingested" in evidence and 'data-testid="passage"' in evidence
    # correction forms carry the CSRF token
    assert html.count('name="csrf_token"') >= 2 * 3 + 2


def test_cluster_detail_escapes_hostile_titles_and_answers_404(client, corpus):
    html = html_of(client.get(f"/admin/clusters/{corpus['b']}"))
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    svg = re.search(r"<svg .*?</svg>", html, re.S).group(0)
    ET.fromstring(svg)  # the hostile title in the tooltips keeps the SVG well-formed
    listing = html_of(client.get("/admin/clusters"))
    assert HOSTILE not in listing
    missing = client.get("/admin/clusters/no-such-cluster")
    assert missing.status_code == 404 and "no-such-cluster" in html_of(missing)


def test_admin_pages_have_no_inline_script_or_style(client, corpus):
    for path in (
        "/admin/",
        "/admin/clusters",
        f"/admin/clusters/{corpus['a']}",
        f"/admin/clusters/{corpus['a']}/compare",
        "/admin/stats",
        "/admin/corrections",
    ):
        res = client.get(path)
        html = html_of(res)
        assert res.status_code == 200, path
        assert not re.search(r"<script(?![^>]*\bsrc=)", html) and " style=" not in html, path  # files only
        assert "/static/admin.css" in html, path
        assert "script-src 'self'" in res.headers["Content-Security-Policy"]


# ---------------------------------------------------------------- compare


def test_compare_highlights_word_differences_least_similar_first(client, corpus):
    a = corpus["a"]
    default = client.get(f"/admin/clusters/{a}/compare")
    html = html_of(default)
    assert default.status_code == 200
    # by default the least similar pair: one side is the edited copy, whose new words are marked
    assert "three.test" in html
    marked = " ".join(re.findall(r"<(?:ins|del)>(.*?)</(?:ins|del)>", html, re.S))
    assert "Brightwater orchestra rehearsed" in marked
    assert 'data-testid="compare-jaccard"' in html and 'data-testid="signal-jaccard" data-matched="yes"' in html
    same = html_of(client.get(f"/admin/clusters/{a}/compare?a=a1&b=a2"))
    sides = same[same.index('data-testid="side-by-side"') : same.index("<h2>Evidence</h2>")]
    changed = " ".join(re.findall(r"<(?:ins|del)>(.*?)</(?:ins|del)>", sides, re.S)).split()
    assert set(changed) <= {"council", "approves", "passes"}  # only the headlines differ (extraction keeps them)
    assert re.search(r'data-testid="compare-unchanged">100%<', same)
    assert client.get(f"/admin/clusters/{a}/compare?a=a1&b=a1").status_code == 400
    assert client.get(f"/admin/clusters/{a}/compare?a=a1&b=b1").status_code == 404  # not in this cluster
    assert client.get(f"/admin/clusters/{a}/compare?a=a1&b=nope").status_code == 404


# ---------------------------------------------------------------- corrections through the forms


# ---------------------------------------------------------------- corrections through the API


# ---------------------------------------------------------------- statistics


# ---------------------------------------------------------------- jobs


# ---------------------------------------------------------------- indices


def test_the_overview_lists_the_indices_behind_the_alias_with_their_write_role(client, corpus, admin_settings, es):
    from newsfold.plugin.fold.by_id import behind
    from newsfold.plugin.fold.rollover import roll_over

    first = behind(es, admin_settings.index).write
    new = roll_over(es, admin_settings, force=True)
    page = client.get("/admin/")
    assert page.status_code == 200
    import lxml.html

    rows = lxml.html.fromstring(html_of(page)).xpath("//table[@data-testid='indices']/tbody/tr")
    cells = [r.xpath("./td")[0].text_content().split() for r in rows]
    assert cells == [[new, "write"], [first]]


def test_the_overview_shows_the_clusters_health_read_from_the_node(client, corpus, es):
    import lxml.html

    health = es.cluster.health()
    root = lxml.html.fromstring(html_of(client.get("/admin/")))
    assert root.xpath("string(//*[@data-testid='cluster-status'])") == health["status"]
    assert root.xpath("string(//*[@data-testid='cluster-nodes'])").startswith(str(health["number_of_nodes"]))
    assert root.xpath("string(//*[@data-testid='unassigned-shards'])") == str(health["unassigned_shards"])
