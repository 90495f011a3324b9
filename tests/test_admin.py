"""The admin area: cluster list, detail with evidence, comparison, corrections (forms and API), statistics, jobs.

Real servers only (the osmem stand-in or ``ELASTICSEARCH_URL``, a real Redis);
the editor logs in through the login view and posts forms with their CSRF token.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import xml.etree.ElementTree as ET

import pytest
import redis
from werkzeug.security import generate_password_hash

from newsfold.plugin import admin_queries, queries
from newsfold.plugin.batch import ingest
from newsfold.plugin.correction_log import MAX_NOTE_CHARS
from newsfold.plugin.document import Page
from newsfold.plugin.evidence import (
    choose_representative,
    least_similar_pairs,
    membership_evidence,
    shared_passages,
    similarity_matrix,
    word_diff,
)
from newsfold.plugin.rejections import record_rejections
from newsfold.plugin.signature import signature_of
from newsfold.plugin.signing import sign_page
from newsfold.state.jobs import JobStore
from newsfold.task_names import REINDEX, RETRY_FAILURES
from newsfold.web import clusters as web_clusters
from newsfold.web.auth import token_digest
from newsfold.web.clusters import select_buckets
from newsfold.web.config import WebSettings
from tests.pages import page, story

PASSWORD = "correct horse battery staple"
PASSWORD_HASH = generate_password_hash(PASSWORD)
TOKEN = "test-admin-token-0123456789abcdef"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
HOSTILE = "<script>alert(1)</script>"
MARKER = "Brightwater orchestra rehearsed beside the lighthouse while volunteers painted every bench"


# ---------------------------------------------------------------- pure parts: query builders


def test_cluster_list_query_without_filters():
    assert admin_queries.cluster_list() == {
        "size": 0,
        "query": {"match_all": {}},
        "aggs": {
            "clusters": {
                "terms": {
                    "field": "newsfold.cluster_id",
                    "size": 10_000,
                    "min_doc_count": 2,
                    "order": [{"_count": "desc"}, {"_key": "asc"}],
                    "shard_min_doc_count": 2,
                },
                "aggs": {
                    "sites": {"cardinality": {"field": "site"}},
                    "first": {"min": {"field": "ingested"}},
                    "last": {"max": {"field": "ingested"}},
                },
            }
        },
    }


def test_cluster_list_query_with_ids_page_filters_and_sort():
    body = admin_queries.cluster_list(
        cluster_ids=["c1", "c2"], min_size=3, sort="first_seen", order="asc", max_clusters=100, single_shard=False
    )
    assert body["query"] == {"terms": {"newsfold.cluster_id": ["c1", "c2"]}}
    assert body["aggs"]["clusters"]["terms"] == {
        "field": "newsfold.cluster_id",
        "size": 100,
        "min_doc_count": 3,
        "order": [{"first": "asc"}, {"_key": "asc"}],
    }
    filters = queries.page_filters(site="a.test", q="storm")
    assert filters == [
        {"term": {"site": "a.test"}},
        queries.text_query("storm"),
    ]
    body = admin_queries.cluster_list(matching=filters, sort="sites")
    assert body["aggs"]["clusters"]["aggs"]["matching"] == {"filter": {"bool": {"filter": filters}}}
    assert body["aggs"]["clusters"]["terms"]["order"][0] == {"sites": "desc"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sort": "title"}, "sort must be one of"),
        ({"order": "up"}, "order must be"),
        ({"min_size": 0}, "min_size must be >= 1"),
    ],
)
def test_cluster_list_query_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        admin_queries.cluster_list(**kwargs)


def test_select_buckets_applies_size_and_date_bounds_in_order():
    def bucket(key, size, first, last, matching=1):
        times = {"first": {"value": first}, "last": {"value": last}}
        return {"key": key, "doc_count": size, **times, "matching": {"doc_count": matching}}

    buckets = [bucket("a", 5, 100, 900), bucket("b", 2, 300, 400, matching=0), bucket("c", 3, 200, 250)]
    assert [b["key"] for b in select_buckets(buckets)] == ["a", "b", "c"]
    assert [b["key"] for b in select_buckets(buckets, max_size=3)] == ["b", "c"]
    assert [b["key"] for b in select_buckets(buckets, first_seen=(150, None))] == ["b", "c"]
    assert [b["key"] for b in select_buckets(buckets, first_seen=(None, 250), last_seen=(300, None))] == ["a"]
    assert [b["key"] for b in select_buckets(buckets, matching=True)] == ["a", "c"]


def test_page_filter_and_statistics_queries():
    assert admin_queries.clusters_with_pages(site="a.test", lang="en", q="storm", max_clusters=50) == {
        "size": 0,
        "query": {
            "bool": {
                "filter": [
                    {"term": {"site": "a.test"}},
                    {"term": {"lang": "en"}},
                    {
                        "simple_query_string": {
                            "query": "storm",
                            "fields": ["title^2", "body"],
                            "default_operator": "and",
                            "flags": "AND|OR|NOT|PHRASE|PRECEDENCE|WHITESPACE|ESCAPE",
                        }
                    },
                ]
            }
        },
        "aggs": {"clusters": {"terms": {"field": "newsfold.cluster_id", "size": 50}}},
    }
    with pytest.raises(ValueError, match="limit is 500"):
        admin_queries.clusters_with_pages(q="x" * 501)
    sim = admin_queries.similarity_distribution(interval=0.1)
    assert sim["aggs"]["rejected"] == {
        "histogram": {
            "field": "newsfold.nearest_rejected",
            "interval": 0.1,
            "min_doc_count": 0,
            "extended_bounds": {"min": 0, "max": 1},
        }
    }
    assert admin_queries.rate_interval(0, 30 * 60_000) == ("1m", 60_000)
    assert admin_queries.rate_interval(0, 3 * 86_400_000) == ("6h", 21_600_000)
    assert admin_queries.ingest_rate(start_ms=0, end_ms=86_400_000)["aggs"]["rate"]["date_histogram"] == {
        "field": "ingested",
        "fixed_interval": "1h",
        "min_doc_count": 0,
        "extended_bounds": {"min": 0, "max": 86_400_000},
    }
    assert admin_queries.rejection_reasons(size=5)["aggs"] == {"reasons": {"terms": {"field": "reason", "size": 5}}}
    detail = admin_queries.cluster_detail("c1", size=10)
    assert detail["query"] == {"term": {"newsfold.cluster_id": "c1"}} and detail["size"] == 10
    representative_first = {"order": "desc", "unmapped_type": "boolean", "missing": "_last"}
    assert detail["sort"][0] == {"newsfold.representative": representative_first}
    assert "body" in detail["_source"] and "newsfold.band_keys" in detail["_source"]


# ---------------------------------------------------------------- pure parts: evidence


def test_shared_passages_and_word_diff():
    common = "the council voted to approve the new harbour budget after a long and heated debate on tuesday"
    a = f"Intro one. {common.capitalize()}. Then something else entirely happened in the town square."
    b = f"Another opening line here. {common}! A different ending follows with other words."
    passages = shared_passages(a, b, min_words=8)
    assert passages == [f"{common.capitalize()}."]  # quoted as written in the first text
    assert shared_passages(a, "nothing in common at all with the first text here", min_words=8) == []
    left, right, unchanged = word_diff("The council met.\nIt voted yes today.", "the council met!\nIt voted no today.")
    assert [s.text for s in left if s.changed] == ["yes"]
    assert [s.text for s in right if s.changed] == ["no"]
    assert "".join(s.text for s in left) == "The council met.\nIt voted yes today."
    assert unchanged == pytest.approx(12 / 14, abs=1e-4)


def test_matrix_pairs_representative_and_signals(settings):
    base = " ".join(story(11, 20))
    edited = base.replace(base.split(". ")[3], MARKER)
    sigs = [signature_of(base, settings), signature_of(base, settings), signature_of(edited, settings), None]
    matrix = similarity_matrix(sigs)
    assert matrix[0][1] == 1.0 and matrix[0][2] < 1.0 and matrix[0][3] is None and matrix[3][3] == 1.0
    pairs = least_similar_pairs(matrix)
    assert [(i, j) for i, j, _ in pairs] == [(0, 2), (1, 2), (0, 1)]  # pairs without scores are left out
    members = [
        {"id": "b", "ingested": "2024-05-02"},
        {"id": "a", "ingested": "2024-05-01"},
        {"id": "c", "ingested": "2024-05-03"},
    ]
    assert choose_representative(members) == 1  # the first seen
    members[2]["representative"] = True
    assert choose_representative(members) == 2  # an editor's choice wins
    page_a = {"id": "x", "site": "one.test", "title": "Budget Passes", "band_keys": ["1:a", "2:b", "3:c"], "body": base}
    page_b = {"id": "y", "site": "two.test", "title": "budget  passes", "band_keys": ["1:a", "3:c"], "body": edited}
    ev = membership_evidence(page_a, page_b, settings, member_signature=sigs[0], reference_signature=sigs[2])
    signals = {s.name: s.matched for s in ev.signals}
    assert signals == {"jaccard": True, "containment": True, "band_keys": True, "title": True, "site": False}
    assert ev.shared_bands == 2 and ev.is_copy and ev.passages
    assert ev.as_dict()["signals"][0]["name"] == "jaccard"
    lonely = membership_evidence(page_a, page_b, settings, member_signature=sigs[0], reference_signature=None)
    assert lonely.jaccard is None and not lonely.is_copy


# ---------------------------------------------------------------- the app


@pytest.fixture
def admin_settings(settings, redis_url):
    return settings.replace(redis_url=redis_url)


ADMIN_WEB = WebSettings(
    secret_key="test-secret-" + "k" * 24,
    admin_password_hash=PASSWORD_HASH,
    cookie_secure=False,
    api_token_hashes=f"robot:{token_digest(TOKEN)}",
)


@pytest.fixture
def make_app(web_app):
    return lambda settings, **config: web_app(settings, ADMIN_WEB, **config)


def _ingest(es, settings, pages):
    return {o.page_id: o for o in ingest([sign_page(p, settings) for p in pages], client=es, settings=settings)}


@pytest.fixture
def corpus(es, settings):
    """Cluster A: three copies on three sites, the third edited; cluster B: two copies, one titled with markup.

    Then a lone page. Ingested in that order, batch by batch, so A was first seen before B.
    """
    text = story(301, 20)
    edited = list(text)
    edited[3] = MARKER + ". " + edited[3].split(". ", 1)[0] + "."
    storm = story(302, 16)
    # one page per batch: a page written in the same batch as its first copy would be "matched" too
    out = _ingest(es, settings, [Page(html=page("Zephyrton council approves budget", text), id="a1", site="one.test")])
    out |= _ingest(es, settings, [Page(html=page("Zephyrton budget passes", text), id="a2", site="two.test")])
    third = Page(html=page("Zephyrton budget approved", edited, site="three.test"), id="a3", site="three.test")
    out |= _ingest(es, settings, [third])
    hostile = page("Quillbrook &lt;script&gt;alert(1)&lt;/script&gt; storm", storm, site="four.test")
    out |= _ingest(es, settings, [Page(html=hostile, id="b1", site="four.test")])
    out |= _ingest(es, settings, [Page(html=page("Harbour storm warning", storm), id="b2", site="five.test")])
    out |= _ingest(es, settings, [Page(html=page("A lone story", story(303)), id="lone", site="six.test")])
    a, b = out["a1"].cluster_id, out["b1"].cluster_id
    assert out["a2"].cluster_id == a and out["a3"].cluster_id == a, "the three copies must form one cluster"
    assert out["b2"].cluster_id == b and a != b and out["lone"].cluster_id not in (a, b)
    return {"a": a, "b": b, "lone": out["lone"].cluster_id}


def _html(res) -> str:
    return res.get_data(as_text=True)


def _csrf(res) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', _html(res))
    assert found, "the page has no CSRF field"
    return found.group(1)


@pytest.fixture
def client(make_app, admin_settings, corpus):
    """A test client logged in as the admin through the login form."""
    client = make_app(admin_settings).test_client()
    form = client.get("/login")
    res = client.post("/login", data={"username": "admin", "password": PASSWORD, "csrf_token": _csrf(form)})
    assert res.status_code == 303
    return client


def _post_form(client, page_url: str, action: str, data: dict):
    """Post a form of ``page_url`` with the CSRF token shown there; returns the (not followed) response."""
    token = _csrf(client.get(page_url))
    return client.post(action, data={**data, "csrf_token": token})


def _rows(html: str) -> list[str]:
    return re.findall(r'data-testid="cluster-row" data-cluster-id="([^"]+)"', html)


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
    html = _html(first)
    assert first.status_code == 200
    assert "2 clusters" in html and _rows(html) == [a]  # largest first, one per page
    assert 'aria-sort="descending"' in html
    second = _html(client.get("/admin/clusters?page=2", headers=BEARER))
    assert _rows(second) == [b] and 'rel="prev"' in second
    assert _rows(_html(client.get("/admin/clusters?sort=size&order=asc", headers=BEARER))) == [b]
    assert _rows(_html(client.get("/admin/clusters?sort=first_seen&order=asc", headers=BEARER))) == [a]
    assert _rows(_html(client.get("/admin/clusters?sort=last_seen", headers=BEARER))) == [b]
    assert _rows(_html(client.get("/admin/clusters?sort=sites", headers=BEARER))) == [a]
    assert _rows(_html(client.get("/admin/clusters?min_size=3", headers=BEARER))) == [a]
    only_b = _html(client.get("/admin/clusters?max_size=2", headers=BEARER))
    assert _rows(only_b) == [b] and "1 cluster;" in only_b
    # page filters pick clusters; the size shown is the whole cluster's
    by_site = _html(client.get("/admin/clusters?site=five.test", headers=BEARER))
    assert _rows(by_site) == [b] and re.search(
        r'data-label="Pages">2</td>\s*<td class="num" data-label="Sites">2</td>', by_site
    )
    assert _rows(_html(client.get("/admin/clusters?q=zephyrton", headers=BEARER))) == [a]
    assert _rows(_html(client.get("/admin/clusters?q=quillbrook+storm", headers=BEARER))) == [b]
    assert _rows(_html(client.get("/admin/clusters?lang=xx", headers=BEARER))) == []
    today = dt.datetime.now(dt.UTC).date()
    tomorrow, yesterday = today + dt.timedelta(days=1), today - dt.timedelta(days=1)
    assert _rows(_html(client.get(f"/admin/clusters?first_from={tomorrow}", headers=BEARER))) == []
    assert _rows(_html(client.get(f"/admin/clusters?last_to={yesterday}", headers=BEARER))) == []
    in_range = _html(client.get(f"/admin/clusters?first_from={today}&last_to={today}&page=2", headers=BEARER))
    assert _rows(in_range) == [b]
    # the sort links keep the filters and flip the order of the current sort
    assert 'href="/admin/clusters?min_size=3&amp;order=asc"' in _html(
        client.get("/admin/clusters?min_size=3", headers=BEARER)
    )


def test_broad_page_filters_are_matched_inside_the_aggregation(make_app, admin_settings, corpus, monkeypatch, es):
    monkeypatch.setattr(web_clusters, "MAX_CLUSTERS_BY_ID", 0)  # every filter counts as broad here
    client = make_app(admin_settings).test_client()
    assert _rows(_html(client.get("/admin/clusters?q=zephyrton", headers=BEARER))) == [corpus["a"]]
    by_site = _html(client.get("/admin/clusters?site=five.test&sort=size&order=asc", headers=BEARER))
    assert _rows(by_site) == [corpus["b"]] and "2 clusters" not in by_site
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
    assert message in _html(res) and 'data-testid="cluster-filters"' in _html(res)


# ---------------------------------------------------------------- cluster detail


def test_cluster_detail_members_scores_heatmap_pairs_and_evidence(client, corpus):
    a = corpus["a"]
    res = client.get(f"/admin/clusters/{a}")
    html = _html(res)
    assert res.status_code == 200
    assert "3 pages on 3 sites" in html
    rows = re.findall(r'data-testid="member-row" data-page-id="([^"]+)"', html)
    assert rows == ["a1", "a2", "a3"]  # the representative (first seen) first, then oldest
    assert html.count('data-testid="representative-badge"') == 1 and "representative (first seen)" in html
    # the note fields take what the corrections log keeps
    assert html.count(f'name="note" type="text" maxlength="{MAX_NOTE_CHARS}"') == 2
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
    html = _html(client.get(f"/admin/clusters/{corpus['b']}"))
    assert HOSTILE not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    svg = re.search(r"<svg .*?</svg>", html, re.S).group(0)
    ET.fromstring(svg)  # the hostile title in the tooltips keeps the SVG well-formed
    listing = _html(client.get("/admin/clusters"))
    assert HOSTILE not in listing
    missing = client.get("/admin/clusters/no-such-cluster")
    assert missing.status_code == 404 and "no-such-cluster" in _html(missing)


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
        html = _html(res)
        assert res.status_code == 200, path
        assert "<script" not in html and " style=" not in html, path
        assert "/static/admin.css" in html, path
        assert "script-src 'self'" in res.headers["Content-Security-Policy"]


# ---------------------------------------------------------------- compare


def test_compare_highlights_word_differences_least_similar_first(client, corpus):
    a = corpus["a"]
    default = client.get(f"/admin/clusters/{a}/compare")
    html = _html(default)
    assert default.status_code == 200
    # by default the least similar pair: one side is the edited copy, whose new words are marked
    assert "three.test" in html
    marked = " ".join(re.findall(r"<(?:ins|del)>(.*?)</(?:ins|del)>", html, re.S))
    assert "Brightwater orchestra rehearsed" in marked
    assert 'data-testid="compare-jaccard"' in html and 'data-testid="signal-jaccard" data-matched="yes"' in html
    same = _html(client.get(f"/admin/clusters/{a}/compare?a=a1&b=a2"))
    sides = same[same.index('data-testid="side-by-side"') : same.index("<h2>Evidence</h2>")]
    changed = " ".join(re.findall(r"<(?:ins|del)>(.*?)</(?:ins|del)>", sides, re.S)).split()
    assert set(changed) <= {"council", "approves", "passes"}  # only the headlines differ (extraction keeps them)
    assert re.search(r'data-testid="compare-unchanged">100%<', same)
    assert client.get(f"/admin/clusters/{a}/compare?a=a1&b=a1").status_code == 400
    assert client.get(f"/admin/clusters/{a}/compare?a=a1&b=b1").status_code == 404  # not in this cluster
    assert client.get(f"/admin/clusters/{a}/compare?a=a1&b=nope").status_code == 404


# ---------------------------------------------------------------- corrections through the forms


def _cluster_of(es, settings, page_id: str) -> str:
    return es.get(index=settings.index, id=page_id)["_source"]["newsfold"]["cluster_id"]


def _search_ids(es, settings, cluster_id: str) -> set[str]:
    hits = es.search(index=settings.index, **queries.cluster_ids_only(cluster_id))["hits"]["hits"]
    return {h["_id"] for h in hits}


def test_split_and_representative_forms_take_effect_and_are_logged(client, corpus, es, settings):
    a = corpus["a"]
    url = f"/admin/clusters/{a}"
    res = _post_form(client, url, f"/admin/clusters/{a}/representative", {"page_id": "a2"})
    assert res.status_code == 303
    page = client.get(res.headers["Location"])
    html = _html(page)
    assert "Page a2 is now the representative" in html
    assert re.findall(r'data-testid="member-row" data-page-id="([^"]+)"', html)[0] == "a2"
    assert "representative (first seen)" not in html
    assert es.get(index=settings.index, id="a2")["_source"]["newsfold"]["representative"] is True

    res = _post_form(client, url, f"/admin/clusters/{a}/split", {"page_id": "a3"})
    assert res.status_code == 303
    html = _html(client.get(res.headers["Location"]))
    assert "Page a3 was split out of the cluster." in html
    assert _cluster_of(es, settings, "a3") != _cluster_of(es, settings, "a1")
    assert "a3" not in _search_ids(es, settings, _cluster_of(es, settings, "a1"))  # visible to search at once

    log = _html(client.get("/admin/corrections"))
    rows = re.findall(r'data-testid="correction-row" data-kind="([^"]+)"', log)
    assert rows == ["split", "representative"]  # newest first
    assert '<td data-label="Who">admin</td>' in log and "2 corrections" in log
    # the representative correction decided about every member, so it concerns a3 too; b1 was never touched
    assert re.findall(r'data-kind="([^"]+)"', _html(client.get("/admin/corrections?page_id=a3"))) == rows
    assert "No correction yet." in _html(client.get("/admin/corrections?page_id=b1"))


def test_merge_and_not_duplicates_forms(client, corpus, es, settings):
    a, b = corpus["a"], corpus["b"]
    fields = {"other_cluster_id": b, "note": "same storm"}
    res = _post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/merge", fields)
    assert res.status_code == 303
    survivor = min(a, b)
    assert res.headers["Location"].endswith(f"/admin/clusters/{survivor}")
    html = _html(client.get(res.headers["Location"]))
    assert "are merged into" in html and "5 pages on 5 sites" in html
    assert {_cluster_of(es, settings, p) for p in ("a1", "a2", "a3", "b1", "b2")} == {survivor}

    url = f"/admin/clusters/{survivor}"
    res = _post_form(client, url, f"{url}/not-duplicates", {"page_a": "a1", "page_b": "b1"})
    assert res.status_code == 303
    html = _html(client.get(res.headers["Location"]))
    assert "Pages a1 and b1 are marked as not duplicates." in html
    assert _cluster_of(es, settings, "a1") != _cluster_of(es, settings, "b1")
    log = _html(client.get("/admin/corrections"))
    assert re.findall(r'data-kind="([^"]+)"', log) == ["not_duplicates", "merge"]
    assert "same storm" in log


def test_form_errors_are_flashed_and_change_nothing(client, corpus, es, settings):
    a, b = corpus["a"], corpus["b"]
    res = _post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/split", {"page_id": "b1"})
    assert res.status_code == 303
    html = _html(client.get(res.headers["Location"]))
    assert "page &#39;b1&#39; is not in cluster" in html and 'data-testid="flash-error"' in html
    res = _post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/merge", {"other_cluster_id": a})
    assert "cannot be merged with itself" in _html(client.get(res.headers["Location"]))
    res = _post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/merge", {"other_cluster_id": "nope"})
    assert "unknown cluster" in _html(client.get(res.headers["Location"]))
    # without the CSRF token nothing happens
    forged = client.post(f"/admin/clusters/{a}/split", data={"page_id": "a3"})
    assert forged.status_code == 400
    assert _cluster_of(es, settings, "a3") == a and _cluster_of(es, settings, "b1") == b
    assert "No correction yet." in _html(client.get("/admin/corrections"))


# ---------------------------------------------------------------- corrections through the API


def test_correction_api_with_a_token(make_app, admin_settings, corpus, es, settings):
    api = make_app(admin_settings).test_client()
    a, b = corpus["a"], corpus["b"]
    res = api.post(f"/api/clusters/{a}/representative", json={"page_id": "a3"}, headers=BEARER)
    assert res.status_code == 200
    body = res.get_json()
    assert body["correction"]["kind"] == "representative" and body["correction"]["user"] == "token:robot"
    assert body["cluster_id"] == a
    note = "edited: " + "n" * (MAX_NOTE_CHARS - 8)  # the core's limit is the web's: a note it keeps is accepted
    res = api.post(f"/api/clusters/{a}/split", json={"page_id": "a3", "note": note}, headers=BEARER)
    assert res.status_code == 200 and res.get_json()["correction"]["note"] == note
    assert _cluster_of(es, settings, "a3") != a
    res = api.post(f"/api/clusters/{a}/merge", json={"other_cluster_id": b}, headers=BEARER)
    assert res.status_code == 200 and res.get_json()["correction"]["clusters"] == [a, b]
    res = api.post("/api/pairs/not-duplicates", json={"page_a": "a1", "page_b": "b2"}, headers=BEARER)
    assert res.status_code == 200 and res.get_json()["correction"]["pages"] == ["a1", "b2"]
    assert _cluster_of(es, settings, "a1") != _cluster_of(es, settings, "b2")

    log = api.get(f"/api/corrections?cluster_id={a}", headers=BEARER).get_json()
    assert log["total"] == 4 and [c["kind"] for c in log["corrections"]][-1] == "representative"
    assert api.get("/api/corrections?page_id=b2", headers=BEARER).get_json()["total"] == 1
    assert api.get("/api/corrections?page=x", headers=BEARER).status_code == 400


@pytest.mark.parametrize(
    ("path", "payload", "status", "message"),
    [
        ("/api/clusters/{a}/split", {}, 400, "page_id is required"),
        ("/api/clusters/{a}/split", {"page_id": 7}, 400, "page_id must be a string"),
        ("/api/clusters/{a}/split", {"page_id": "b1"}, 409, "is not in cluster"),
        ("/api/clusters/{a}/split", {"page_id": "nope"}, 404, "there is no page"),
        ("/api/clusters/{a}/merge", {"other_cluster_id": "{a}"}, 400, "cannot be merged with itself"),
        ("/api/pairs/not-duplicates", {"page_a": "a1", "page_b": "a1"}, 400, "two different pages"),
        ("/api/pairs/not-duplicates", {"page_a": "a1", "page_b": "nope"}, 404, "there is no page"),
        ("/api/clusters/{lone}/split", None, 400, "the body must be a JSON object"),
        ("/api/clusters/{a}/split", {"page_id": "a3", "note": "n" * 2001}, 400, "note must be at most 2000 printable"),
    ],
)
def test_correction_api_errors(make_app, admin_settings, corpus, path, payload, status, message):
    api = make_app(admin_settings).test_client()
    path = path.format(**corpus)
    if payload is None:
        res = api.post(path, data="not json", headers=BEARER)
    else:
        payload = {k: v.format(**corpus) if isinstance(v, str) else v for k, v in payload.items()}
        res = api.post(path, json=payload, headers=BEARER)
    assert res.status_code == status
    assert message in res.get_json()["error"]


def test_correction_api_with_the_session_needs_the_csrf_header(client, corpus, es, settings):
    a = corpus["a"]
    refused = client.post(f"/api/clusters/{a}/split", json={"page_id": "a3"})
    assert refused.status_code == 400 and "CSRF" in refused.get_json()["error"]
    token = _csrf(client.get("/admin/"))
    res = client.post(f"/api/clusters/{a}/split", json={"page_id": "a3"}, headers={"X-CSRFToken": token})
    assert res.status_code == 200 and res.get_json()["correction"]["user"] == "admin"
    assert _cluster_of(es, settings, "a3") != a


# ---------------------------------------------------------------- statistics


def test_stats_page_charts_with_data(client, corpus, es, settings):
    record_rejections(
        [
            {"page_id": "r1", "status": "rejected", "reason": "too_short", "url": "https://x.test/1"},
            {"page_id": "r2", "status": "rejected", "reason": "too_short"},
            {"page_id": "r3", "status": "rejected", "reason": "not_html"},
        ],
        client=es,
        settings=settings,
    )
    es.indices.refresh(index=f"{settings.index}-rejected")
    res = client.get("/admin/stats")
    html = _html(res)
    assert res.status_code == 200
    assert re.search(r'data-testid="stats-pages">6<', html)
    assert re.search(r'data-testid="stats-duplicates">3<', html)  # a2, a3, b2 matched an earlier copy
    assert re.search(r'data-testid="stats-duplicate-share">50%<', html)
    assert re.search(r'data-testid="stats-rejected">3<', html)
    svgs = {m.group(1): m.group(0) for m in re.finditer(r'<svg [^>]*id="([^"]+)".*?</svg>', html, re.S)}
    assert {"chart-sites", "chart-sizes", "chart-similarity", "chart-rate", "chart-reasons"} <= set(svgs)
    for svg in svgs.values():
        ET.fromstring(svg)
    assert "two.test (1): 100%" in svgs["chart-sites"] and "one.test (1): 0%" in svgs["chart-sites"]
    assert "3 pages: 1" in svgs["chart-sizes"] and "2 pages: 1" in svgs["chart-sizes"]
    assert "too_short: 2" in svgs["chart-reasons"] and "not_html: 1" in svgs["chart-reasons"]
    accepted = re.findall(r"<title>accepted, [^:]+: (\d+)</title>", svgs["chart-similarity"])
    assert sum(map(int, accepted)) == 3
    assert "polyline" in svgs["chart-rate"]
    assert re.search(r'data-testid="stats-singles">1<', html)


def test_stats_page_without_rejections_index_or_pages(make_app, admin_settings, es):
    html = _html(make_app(admin_settings).test_client().get("/admin/stats", headers=BEARER))
    assert "No page has been rejected" in html and "Nothing ingested yet." in html
    assert re.search(r'data-testid="stats-pages">0<', html)


# ---------------------------------------------------------------- jobs


@pytest.fixture
def jobs_redis_url(redis_url):
    """A Redis database of its own: queued task messages land there and no worker of another test takes them."""
    base = redis_url.rsplit("/", 1)[0]
    url = f"{base}/13"
    client = redis.Redis.from_url(url)
    yield url
    client.delete("celery")
    client.close()


def _queued_tasks(url: str) -> list[dict]:
    client = redis.Redis.from_url(url)
    try:
        messages = [json.loads(m) for m in client.lrange("celery", 0, -1)]
    finally:
        client.close()
    out = []
    for m in messages:
        args, kwargs, _ = json.loads(base64.b64decode(m["body"]))
        out.append({"task": m["headers"]["task"], "args": args, "kwargs": kwargs})
    return out


def test_jobs_pages_progress_failures_and_retry(make_app, admin_settings, jobs_redis_url, es):
    store = JobStore(redis.Redis.from_url(jobs_redis_url))
    job = store.create("ingest", params={"sources": ["crawl/"]}, total=4)
    store.start(job.id)
    outcomes = [
        {"page_id": "p1", "status": "new"},
        {"page_id": "p2", "status": "duplicate"},
        {"page_id": "p3", "status": "rejected", "reason": "index_failed", "detail": "es <down>"},
        {"page_id": "p4", "status": "rejected", "reason": "too_short"},
    ]
    store.record(job.id, "batch-1", outcomes, payloads={"p3": {"html": "<p>x</p>", "id": "p3"}})
    client = make_app(admin_settings.replace(redis_url=jobs_redis_url)).test_client()

    listing = _html(client.get("/admin/jobs", headers=BEARER))
    assert f'data-job-id="{job.id}" data-status="running"' in listing
    assert '<progress max="4" value="4"' in listing
    page = client.get(f"/admin/jobs/{job.id}", headers=BEARER)
    html = _html(page)
    assert page.status_code == 200
    assert 'data-testid="job-status">running<' in html and "4 of 4 items (100%)" in html
    assert html.count('data-testid="failure-row"') == 2 and "es &lt;down&gt;" in html
    assert '<td data-label="Reason">too_short</td>' in html and 'data-testid="retry-form"' not in html  # still running
    assert client.get("/admin/jobs/no-such-job", headers=BEARER).status_code == 404

    store.finish(job.id, "done")
    html = _html(client.get(f"/admin/jobs/{job.id}", headers=BEARER))
    assert 'data-testid="retry-form"' in html
    res = client.post(f"/admin/jobs/{job.id}/retry", headers=BEARER)
    assert res.status_code == 303
    assert "Retrying the failed items" in _html(client.get(res.headers["Location"], headers=BEARER))
    assert {"task": RETRY_FAILURES, "args": [], "kwargs": {"job_id": job.id}} in _queued_tasks(jobs_redis_url)
    store.redis.close()


def test_reindex_form_creates_a_job_and_queues_the_task_once(make_app, admin_settings, jobs_redis_url, es):
    client = make_app(admin_settings.replace(redis_url=jobs_redis_url)).test_client()
    store = JobStore(redis.Redis.from_url(jobs_redis_url))
    for stale in [j for j in [store.active("reindex")] if j is not None]:
        store.finish(stale.id, "cancelled")  # a reindex left over from an earlier run of this test
    res = client.post("/admin/jobs/reindex", data={"source": "elsewhere"}, headers=BEARER)
    assert "choose what to reindex from" in _html(client.get(res.headers["Location"], headers=BEARER))
    store.redis.set("newsfold:reindex-start", "someone", ex=10)  # another editor is starting one this moment
    res = client.post("/admin/jobs/reindex", data={"source": "text"}, headers=BEARER)
    assert "being started right now" in _html(client.get(res.headers["Location"], headers=BEARER))
    assert store.active("reindex") is None
    store.redis.delete("newsfold:reindex-start")
    res = client.post("/admin/jobs/reindex", data={"source": "text"}, headers=BEARER)
    assert res.status_code == 303
    job = store.active("reindex")
    assert job is not None and job.params == {"source": "text", "user": "token:robot", "index": admin_settings.index}
    assert res.headers["Location"].endswith(f"/admin/jobs/{job.id}")
    assert {"task": REINDEX, "args": [], "kwargs": {"job_id": job.id}} in _queued_tasks(jobs_redis_url)
    again = client.post("/admin/jobs/reindex", data={"source": "archive"}, headers=BEARER)
    assert f"A reindex is already queued: job {job.id}" in _html(client.get(again.headers["Location"], headers=BEARER))
    assert len([t for t in _queued_tasks(jobs_redis_url) if t["task"] == REINDEX]) == 1
    listing = _html(client.get("/admin/jobs", headers=BEARER))
    assert 'data-testid="reindex-running"' in listing and 'data-testid="reindex-submit" disabled' in listing
    store.finish(job.id, "cancelled")
    store.redis.close()


def test_admin_answers_503_when_elasticsearch_is_down(make_app, admin_settings):
    client = make_app(admin_settings.replace(elasticsearch_url="http://127.0.0.1:9")).test_client()
    for path in ("/admin/clusters", "/admin/clusters/x", "/admin/stats", "/admin/corrections"):
        res = client.get(path, headers=BEARER)
        assert res.status_code == 503 and "cannot reach Elasticsearch" in _html(res), path
    res = client.post("/api/clusters/x/split", json={"page_id": "p"}, headers=BEARER)
    assert res.status_code == 503 and "cannot reach Elasticsearch" in res.get_json()["error"]


def test_jobs_page_answers_503_when_redis_is_down(make_app, admin_settings):
    client = make_app(admin_settings.replace(redis_url="redis://127.0.0.1:9/0")).test_client()
    res = client.get("/admin/jobs", headers=BEARER)
    assert res.status_code == 503 and "Redis" in _html(res)
