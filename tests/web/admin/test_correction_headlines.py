"""Issue 38, item 4: corrections speak in headlines. Every message, the log and the merge page name stories and
pages by headline with the id beside it; "not duplicates" says where each page went; every kind takes a note.

Each test failed before: the messages, the log and the merge heading gave ids alone, and only the merge and
not-duplicates forms had a note."""

from __future__ import annotations

import re

from newsfold.plugin.edit.kinds import KINDS
from tests.web.admin.helpers import BEARER, cluster_of, html_of, post_form

A1 = "“Zephyrton council approves budget | example.test”"  # a1's headline, and the story A's (a1 is its reference)
A2 = "“Zephyrton budget passes | example.test”"
A3 = "“Zephyrton budget approved”"


def _flashed(client, res) -> str:
    assert res.status_code == 303
    found = re.search(r'data-testid="flash-success"[^>]*>(.*?)</', html_of(client.get(res.headers["Location"])), re.S)
    assert found, "no success message"
    return found.group(1)


def test_each_kinds_message_names_pages_and_stories_by_headline_with_the_id(client, corpus, es, settings):
    a, b = corpus["a"], corpus["b"]
    url = f"/admin/clusters/{a}"
    said = _flashed(client, post_form(client, url, f"{url}/representative", {"page_id": "a2"}))
    assert said == f"Page {A2} (a2) is now the representative of story {A1} ({a})."
    said = _flashed(client, post_form(client, url, f"{url}/split", {"page_id": "a3"}))
    new = cluster_of(es, settings, "a3")
    assert said == f"Page {A3} (a3) was split out of story {A2} ({a}) into story {A3} ({new})."
    said = _flashed(client, post_form(client, url, f"{url}/merge", {"other_cluster_id": b, "confirm": "1"}))
    assert said.startswith(f"Stories {A2} ({a}) and “Quillbrook &lt;script&gt;")
    assert said.endswith(f"({b}) are merged into {A2} ({min(a, b)}).")
    assert "<script>" not in said  # a headline with markup is text


def test_not_duplicates_says_where_each_page_went(client, corpus, es, settings):
    a = corpus["a"]
    url = f"/admin/clusters/{a}"
    said = _flashed(client, post_form(client, url, f"{url}/not-duplicates", {"page_a": "a1", "page_b": "a3"}))
    a1, a3 = cluster_of(es, settings, "a1"), cluster_of(es, settings, "a3")
    assert a1 != a3
    assert said == (f"Pages {A1} (a1) and {A3} (a3) are marked as not duplicates: the first is in story {A1} ({a1}), "
                    f"the second in story {A3} ({a3}).")  # fmt: skip
    log = html_of(client.get("/admin/corrections"))
    moved = re.findall(r'data-testid="now-in">now in story <a href="/admin/clusters/([^"]+)">“([^”]+)”', log)
    assert moved == [(a3, "Zephyrton budget approved")]  # a1 stayed in the story it was in


def test_every_kind_takes_a_note_and_the_log_shows_it(client, corpus, es, settings):
    a, b = corpus["a"], corpus["b"]
    url = f"/admin/clusters/{a}"
    cluster_page = html_of(client.get(url))
    for testid in ("split-form", "representative-form", "not-duplicates-form"):
        form = re.search(f'<form[^>]*data-testid="{testid}">(.*?)</form>', cluster_page, re.S).group(1)
        assert 'name="note"' in form, testid
    asks = {
        "representative": {"page_id": "a2"},
        "split": {"page_id": "a3"},
        "not_duplicates": {"page_a": "a1", "page_b": "a2"},
        "merge": {"other_cluster_id": b, "confirm": "1"},
    }
    assert set(asks) == {kind.name for kind in KINDS}
    for kind in KINDS:
        here = cluster_of(es, settings, asks[kind.name].get("page_id", "a1"))
        post_form(client, url, f"/admin/clusters/{here}/{kind.route}", {**asks[kind.name], "note": f"why {kind.name}"})
    log = html_of(client.get("/admin/corrections"))
    rows = dict(re.findall(r'data-kind="([^"]+)">(.*?)</tr>', log, re.S))
    assert set(rows) == set(asks)
    for name, row in rows.items():
        assert f'<td data-label="Note">why {name}</td>' in row, name
    undo_form = re.search(r'<form[^>]*data-testid="undo-form">(.*?)</form>', log, re.S).group(1)
    assert 'name="note"' in undo_form


def test_the_log_names_pages_and_stories_by_headline_in_html_and_json(client, make_app, admin_settings, corpus):
    a = corpus["a"]
    post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/split", {"page_id": "a3"})
    log = html_of(client.get("/admin/corrections"))
    row = re.search(r'data-kind="split">(.*?)</tr>', log, re.S).group(1)
    assert f'{A1} <a href="/admin/clusters/{a}"' not in row  # the story is named inside its link
    assert f'<a href="/admin/clusters/{a}">{A1} <code>{a}</code></a>' in row
    assert f'{A3} <a href="/admin/corrections?page_id=a3"><code>a3</code></a>' in row
    entry = make_app(admin_settings).test_client().get("/api/corrections", headers=BEARER).get_json()["corrections"][0]
    assert entry["headlines"]["pages"] == {"a3": A3.strip("“”")}
    assert entry["headlines"]["stories"][a] == A1.strip("“”")
    assert entry["now"] == {"a3": entry["split_into"]} and entry["split_into"] != a


def test_the_merge_page_and_the_undo_name_stories_by_headline(client, corpus, es, settings):
    a, b = corpus["a"], corpus["b"]
    page = html_of(client.get("/admin/merge", query_string={"cluster_id": a, "other_cluster_id": b}))
    heading = re.search(r'data-testid="merge-heading">(.*?)</h1>', page, re.S).group(1)
    assert heading == f"Merge story {A1} <code>{a}</code> with another"
    summary = re.search(r'data-testid="merge-summary">(.*?)</p>', page, re.S).group(1)
    assert f">{A1} <code>{a}</code></a>" in summary and "Quillbrook &lt;script&gt;" in summary
    post_form(client, f"/admin/clusters/{a}", f"/admin/clusters/{a}/merge", {"other_cluster_id": b, "confirm": "1"})
    log = html_of(client.get("/admin/corrections"))
    merge_id = re.search(r'data-correction-id="([^"]+)" data-testid="correction-row" data-kind="merge"', log).group(1)
    said = _flashed(client, post_form(client, "/admin/corrections", f"/admin/corrections/{merge_id}/undo", {}))
    assert said.startswith(f"Correction {merge_id} (merge) is undone: page {A1} (a1) is in story {A1} ({a}); ")
    assert "(b1) is in story “Quillbrook &lt;script&gt;" in said and f"({cluster_of(es, settings, 'b1')})." in said


def test_a_refused_correction_names_its_pages_and_stories_by_headline_too(client, corpus, es, settings):
    a, b = corpus["a"], corpus["b"]
    url = f"/admin/clusters/{b}"
    res = post_form(client, url, f"{url}/split", {"page_id": "a3"})  # a3 is in story a, not b
    assert res.status_code == 303
    page = html_of(client.get(res.headers["Location"]))
    found = re.search(r'data-testid="flash-error"[^>]*>(.*?)</', page, re.S)
    assert found, "no error message"
    said = found.group(1)
    story_a = re.search(rf"(“[^”]+”) \({re.escape(a)}\)\)?$", said)  # "... (it is in “Headline” (a))"
    assert said.startswith(f"page {A3} (a3) is not in cluster “") and f"({b})" in said, said
    assert story_a and story_a.group(1) == A1, said  # story a by its face's headline
