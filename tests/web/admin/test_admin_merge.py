"""Issue 31: a merge is found by searching, previewed, confirmed when the stories are not similar."""

from __future__ import annotations

import itertools
import re

import pytest
from elasticsearch import ConnectionError as EsConnectionError

from newsfold.plugin.client import build_client
from newsfold.plugin.edit.correction_log import list_corrections
from newsfold.plugin.edit.corrections import merge_clusters, split_page
from newsfold.plugin.edit.undo import undo_correction
from tests.failing_transport import FailingTransport
from tests.web.admin.helpers import BEARER, cluster_of, html_of, post_form


def test_the_merge_page_finds_the_other_story_by_title_and_previews_without_changing_anything(client, corpus, es,
                                                                                              settings):  # fmt: skip
    """Fails before the fix: there was no merge page (404), only a typed cluster id merged at once."""
    a, b = corpus["a"], corpus["b"]
    html = html_of(client.get(f"/admin/clusters/{a}"))
    assert 'data-testid="merge-form"' in html and 'action="/admin/merge"' in html
    found = client.get("/admin/merge", query_string={"cluster_id": a, "q": "Quillbrook storm"})
    assert found.status_code == 200
    assert re.findall(r'data-testid="merge-candidate" data-cluster-id="([^"]+)"', html_of(found)) == [b]
    res = client.get("/admin/merge", query_string={"cluster_id": a, "other_cluster_id": b})
    html = html_of(res)
    assert res.status_code == 200
    loser = max(a, b)
    moving = set(re.findall(r'data-testid="moving-row" data-page-id="([^"]+)"', html))
    assert moving == ({"b1", "b2"} if loser == b else {"a1", "a2", "a3"})
    assert "Not similar" in html and 'data-testid="merge-confirm"' in html
    assert cluster_of(es, settings, "b1") == b and cluster_of(es, settings, "a1") == a  # nothing changed
    assert "No correction yet." in html_of(client.get("/admin/corrections"))
    missing = client.get("/admin/merge", query_string={"cluster_id": a, "other_cluster_id": "nope"})
    assert missing.status_code == 404 and "unknown cluster" in html_of(missing)


def test_merging_stories_that_are_not_similar_needs_a_confirmation(client, make_app, admin_settings, corpus, es,
                                                                   settings):  # fmt: skip
    """Fails before the fix: a wrong id merged two unrelated stories at once (the form and the API)."""
    a, b = corpus["a"], corpus["b"]
    res = post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/merge", {"other_cluster_id": b})
    html = html_of(client.get(res.headers["Location"]))
    assert "are not similar" in html and "confirm the merge" in html and 'data-testid="flash-error"' in html
    api = make_app(admin_settings).test_client()
    refused = api.post(f"/api/clusters/{a}/merge", json={"other_cluster_id": b}, headers=BEARER)
    assert refused.status_code == 409 and "below the copy threshold" in refused.get_json()["error"]
    assert cluster_of(es, settings, "b1") == b and cluster_of(es, settings, "a1") == a
    done = api.post(f"/api/clusters/{a}/merge", json={"other_cluster_id": b, "confirm": True}, headers=BEARER)
    assert done.status_code == 200
    assert cluster_of(es, settings, "b1") == cluster_of(es, settings, "a1") == min(a, b)


def test_similar_stories_merge_without_a_confirmation(client, corpus, es, settings):
    a = corpus["a"]
    post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/split", {"page_id": "a3"})
    apart = cluster_of(es, settings, "a3")
    rest = cluster_of(es, settings, "a1")
    assert apart != rest
    html = html_of(client.get("/admin/merge", query_string={"cluster_id": rest, "other_cluster_id": apart}))
    assert "Similar: the most similar pair" in html and 'data-testid="merge-confirm"' not in html
    res = post_form(client, f"/admin/clusters/{rest}", f"/admin/clusters/{rest}/merge", {"other_cluster_id": apart})
    assert "are merged into" in html_of(client.get(res.headers["Location"]))
    assert cluster_of(es, settings, "a3") == cluster_of(es, settings, "a1")


def test_a_merge_is_undone_from_the_log_and_the_api(client, make_app, admin_settings, corpus, es, settings):
    """Fails before the fix: the log had no undo (no form, the routes answered 404/405)."""
    a, b = corpus["a"], corpus["b"]
    post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/merge", {"other_cluster_id": b, "confirm": "1"})
    assert cluster_of(es, settings, "b1") == cluster_of(es, settings, "a1")
    log = html_of(client.get("/admin/corrections"))
    merge_id = re.search(r'data-correction-id="([^"]+)" data-testid="correction-row" data-kind="merge"', log).group(1)
    assert 'data-testid="undo-form"' in log
    res = post_form(client, "/admin/corrections", f"/admin/corrections/{merge_id}/undo", {})
    assert res.status_code == 303
    html = html_of(client.get(res.headers["Location"]))
    assert f"Correction {merge_id} (merge) is undone: " in html
    assert (cluster_of(es, settings, "a1"), cluster_of(es, settings, "b1")) == (a, b)  # as before the merge
    assert re.findall(r'data-kind="([^"]+)"', html) == ["undo", "merge"]
    assert html.count('data-testid="undo-form"') == 0 and 'data-testid="undone-by"' in html  # once only
    api = make_app(admin_settings).test_client()
    again = api.post(f"/api/corrections/{merge_id}/undo", headers=BEARER)
    assert again.status_code == 409 and "undone already" in again.get_json()["error"]
    assert api.post("/api/corrections/nope/undo", headers=BEARER).status_code == 404
    split = api.post(f"/api/clusters/{a}/split", json={"page_id": "a3"}, headers=BEARER).get_json()["correction"]
    assert cluster_of(es, settings, "a3") != a
    done = api.post(f"/api/corrections/{split['id']}/undo", json={"note": "it was a copy"}, headers=BEARER)
    assert done.status_code == 200 and done.get_json()["correction"]["undoes"] == split["id"]
    assert cluster_of(es, settings, "a3") == a


def test_an_undo_cut_off_is_shown_not_finished_and_its_undo_button_finishes_it(client, corpus, es, settings):
    """Fails before the fix: an undo cut off after it was logged hid the Undo button ("undone by") while the
    pages stayed merged, and undoing again answered "undone already"."""
    a, b = corpus["a"], corpus["b"]
    merge = merge_clusters(a, b, user="admin", client=es, settings=settings)
    faulty = build_client(settings)
    faults = FailingTransport(faulty)
    for fail_at in itertools.count(1):  # the first request after which the undo is logged and not yet applied
        faults.arm(fail_at)
        with pytest.raises(EsConnectionError):
            undo_correction(merge.id, user="admin", client=faulty, settings=settings)
        if list_corrections(client=es, settings=settings)[0] == 2:
            break
    faulty.close()
    assert cluster_of(es, settings, "a1") == cluster_of(es, settings, "b1")  # the pages have not moved back yet
    html = html_of(client.get("/admin/corrections"))
    assert 'data-testid="pending"' in html and 'data-testid="undone-by"' not in html
    assert html.count('data-testid="undo-form"') == 1  # the merge's: pressing it finishes the undo
    res = post_form(client, "/admin/corrections", f"/admin/corrections/{merge.id}/undo", {})
    assert f"Correction {merge.id} (merge) is undone: " in html_of(client.get(res.headers["Location"]))
    assert (cluster_of(es, settings, "a1"), cluster_of(es, settings, "b1")) == (a, b)
    html = html_of(client.get("/admin/corrections"))
    assert 'data-testid="pending"' not in html and 'data-testid="undone-by"' in html
    assert re.findall(r'data-kind="([^"]+)"', html) == ["undo", "merge"]  # the undo is logged once


def test_a_split_cut_off_after_its_page_moved_is_finished_by_the_same_request(make_app, admin_settings, corpus, es,
                                                                               settings):  # fmt: skip
    """Fails before the fix: the request made again was refused (409, the page is not in that cluster any more)
    while the split stayed half applied; now it finishes the logged split and logs nothing new."""
    a = corpus["a"]
    faulty = build_client(settings)
    faults = FailingTransport(faulty)
    for fail_at in itertools.count(1):  # cut the split off later each time, until its page has moved
        faults.arm(fail_at)
        with pytest.raises(EsConnectionError):
            split_page("a3", user="admin", client=faulty, settings=settings)
        if cluster_of(es, settings, "a3") != a:
            break
    faulty.close()
    (cut,) = list_corrections(client=es, settings=settings)[1]
    assert cut.pending and cluster_of(es, settings, "a1") == a
    api = make_app(admin_settings).test_client()
    res = api.post(f"/api/clusters/{a}/split", json={"page_id": "a3"}, headers=BEARER)
    assert res.status_code == 200, res.get_json()
    assert res.get_json()["correction"]["id"] == cut.id and "pending" not in res.get_json()["correction"]
    total, (done,) = list_corrections(client=es, settings=settings)
    assert total == 1 and not done.pending
    assert cluster_of(es, settings, "a3") != cluster_of(es, settings, "a1") == a
