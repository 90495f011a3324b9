"""Folding inside a host's own index: its template, ids, fields and query (docs/embedding.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest

from newsfold.plugin import (
    FOLD_FIELDS,
    Page,
    TextMeta,
    component_template,
    ensure_fold_fields,
    fold_query,
    fold_search,
    fold_versions,
    folded_hits,
    ingest,
    sign_page,
    sign_text,
    story_count,
)
from newsfold.plugin.client import build_client
from newsfold.plugin.search.version_relations import add_relations
from tests.pages import page, story
from tests.paths import REPO_ROOT

ROOT = REPO_ROOT


@pytest.fixture
def host(es, settings):
    """A host index created from the host's own template composed with newsfold's component template."""
    name = f"host-{uuid.uuid4().hex[:10]}"
    es.cluster.put_component_template(name=f"{name}-newsfold", **component_template(settings))
    es.indices.put_index_template(
        name=name,
        index_patterns=[f"{name}*"],
        composed_of=[f"{name}-newsfold"],
        template={
            "mappings": {
                "dynamic": "strict",
                "properties": {
                    "headline": {"type": "text"},
                    "text": {"type": "text"},
                    "section": {"type": "keyword"},
                    "author": {"type": "keyword"},
                    "paywalled": {"type": "boolean"},
                    "first_published": {"type": "date"},
                },
            }
        },
    )
    es.indices.create(index=name)
    yield name
    es.options(ignore_status=404).indices.delete(index=f"{name},{name}-corrections,{name}-founding")
    es.indices.delete_index_template(name=name)
    es.cluster.delete_component_template(name=f"{name}-newsfold")


def _put(es, index, doc_id, paragraphs, *, section="news", author="desk", paywalled=False, headline="Headline",
         published=None):
    document = {"headline": headline, "text": "\n\n".join(paragraphs), "section": section, "author": author,
                "paywalled": paywalled}
    if published:
        document["first_published"] = published
    es.index(index=index, id=doc_id, document=document, refresh="wait_for")


def test_component_template_holds_the_fold_fields_and_signature_meta(settings):
    body = component_template(settings)
    assert body["template"]["mappings"]["properties"]["newsfold"]["properties"] == FOLD_FIELDS
    meta = body["template"]["mappings"]["_meta"]["newsfold"]
    assert (meta["num_perm"], meta["bands"], meta["rows"], meta["seed"]) == (
        settings.num_perm, settings.bands, settings.rows, settings.seed)


def test_ingest_into_a_host_index_writes_only_fold_fields(es, settings, host):
    text = story(1)
    _put(es, host, "h-1", text, section="business", author="Wire", paywalled=True)
    _put(es, host, "h-2", text, section="local", author="Desk")
    signed = [
        sign_text("\n\n".join(text),
                  TextMeta(title="Harbour", url="https://a.example/1", page_id="h-1"), settings=settings),
        sign_page(Page(html=page("Harbour", text, site="b.example"), url="https://b.example/2", id="h-2"), settings),
    ]
    outcomes = {o.page_id: o for o in ingest(signed, client=es, settings=settings, index=host)}
    assert {o.status for o in outcomes.values()} == {"new", "duplicate"}
    one, two = (es.get(index=host, id=i)["_source"] for i in ("h-1", "h-2"))
    assert one["newsfold"]["cluster_id"] == two["newsfold"]["cluster_id"]
    assert (one["section"], one["author"], one["paywalled"]) == ("business", "Wire", True)
    assert (two["section"], two["author"], two["paywalled"]) == ("local", "Desk", False)
    assert one["headline"] == "Headline" and one["text"] == "\n\n".join(text)
    assert set(one) - {"headline", "text", "section", "author", "paywalled"} == {"newsfold"}
    assert set(one["newsfold"]) <= set(FOLD_FIELDS), set(one["newsfold"]) - set(FOLD_FIELDS)
    assert "title" not in one and "body" not in one  # newsfold's own article fields stay out of a host index
    # the host updates its own field: the fold fields stay, and a re-ingest keeps the host's change
    es.update(index=host, id="h-1", doc={"section": "economy"}, refresh="wait_for")
    again = ingest(signed[:1], client=es, settings=settings, index=host)
    assert again[0].status == "unchanged"
    assert es.get(index=host, id="h-1")["_source"]["section"] == "economy"


def test_ingest_refuses_a_host_index_without_newsfold_meta(es, settings):
    name = f"bare-{uuid.uuid4().hex[:10]}"
    es.indices.create(index=name, mappings={"properties": {"headline": {"type": "text"}}})
    try:
        signed = sign_text(" ".join(story(2)), TextMeta(page_id="x"), settings=settings)
        with pytest.raises(RuntimeError, match="no newsfold fields"):
            ingest([signed], client=es, settings=settings, index=name)
        assert ensure_fold_fields(es, name, settings) == [name]
        mapping = es.indices.get_mapping(index=name)[name]["mappings"]
        assert set(FOLD_FIELDS) == set(mapping["properties"]["newsfold"]["properties"])
        assert "headline" in mapping["properties"] and mapping["_meta"]["newsfold"]["seed"] == settings.seed
        assert ingest([signed], client=es, settings=settings, index=name)[0].status == "new"
        with pytest.raises(RuntimeError, match="seed: index has 1, settings say 9"):
            ensure_fold_fields(es, name, settings.replace(seed=9))
    finally:
        es.indices.delete(index=name)


def test_fold_search_keeps_unfolded_documents_as_their_own_stories(es, settings, host):
    a, b, c, d = story(3), story(4), story(5), story(6)
    _put(es, host, "s-1", a, headline="storm one")
    _put(es, host, "s-2", a, headline="storm two")
    _put(es, host, "s-3", b, headline="storm three")
    _put(es, host, "u-1", c, headline="storm four")  # never given to newsfold
    _put(es, host, "u-2", d, headline="storm five")  # never given to newsfold
    signed = [sign_text("\n\n".join(t),
                        TextMeta(page_id=i), settings=settings) for i, t in (("s-1", a), ("s-2", a), ("s-3", b))]
    ingest(signed, client=es, settings=settings, index=host)
    body = {"query": {"match": {"headline": "storm"}}, "size": 10, "sort": [{"section": "asc"}, "_score"],
            "aggs": {"by_section": {"terms": {"field": "section"}}}}
    # the plain folded body shows Elasticsearch's shared group for documents without a cluster id
    plain = es.search(index=host, body=fold_query(body))
    assert len(plain["hits"]["hits"]) == 3
    res = fold_search(es, body, index=host)
    ids = sorted(s["hit"]["_id"] for s in folded_hits(res))
    assert len(ids) == 4 and {"u-1", "u-2", "s-3"} <= set(ids)
    assert story_count(res) == 4 and res["hits"]["total"]["value"] == 5
    assert res["aggregations"]["by_section"]["buckets"] == [{"key": "news", "doc_count": 5}]
    by_id = {s["hit"]["_id"]: s for s in folded_hits(res)}
    pair = next(s for i, s in by_id.items() if i in ("s-1", "s-2"))
    assert pair["other_versions"] == 1 and len(pair["versions"]) == 1
    assert by_id["u-1"]["other_versions"] == 0 and by_id["u-1"]["versions"] == []
    # pages of size 1 walk the same four stories
    walked = [folded_hits(fold_search(es, {**body, "from": i, "size": 1}, index=host))[0]["hit"]["_id"]
              for i in range(4)]
    assert sorted(walked) == ids


def test_versions_on_demand_are_those_fold_search_would_have_given(es, settings, host):
    """The fast way (docs/embedding.md): a results page without versions, then one story's versions when opened."""
    from newsfold.plugin import InputError

    texts = {"a": story(21), "b": story(22)}
    for n in range(3):
        _put(es, host, f"a-{n}", texts["a"], headline="tram line", section=f"s{n}")
    _put(es, host, "b-0", texts["b"], headline="tram depot")
    _put(es, host, "u-0", story(23), headline="tram fares")  # never given to newsfold
    signed = [sign_text("\n\n".join(texts[i[0]]),
                        TextMeta(page_id=i), settings=settings) for i in ("a-0", "a-1", "a-2", "b-0")]
    ingest(signed, client=es, settings=settings, index=host)
    body = {"query": {"match": {"headline": "tram"}}, "size": 10, "sort": [{"section": "asc"}, "_score"]}
    full = {s["hit"]["_id"]: s for s in folded_hits(fold_search(es, body, index=host, versions=3))}
    page_only = fold_search(es, body, index=host, versions=0)
    bare = {s["hit"]["_id"]: s for s in folded_hits(page_only)}
    assert bare.keys() == full.keys() and all(s["versions"] == [] for s in bare.values())
    # the page still says how many other versions match (issue 36: it said 0 for every story)
    assert {i: s["other_versions_matching"] for i, s in bare.items()} == {
        i: s["other_versions_matching"] for i, s in full.items()}
    assert sorted(s["other_versions_matching"] for s in bare.values()) == [0, 0, 2]
    hits = {h["_id"]: h for h in page_only["hits"]["hits"]}
    story_a = next(i for i in hits if i.startswith("a-"))
    opened = fold_versions(es, body, [hits[story_a]], index=host, versions=3)
    assert opened == [hits[story_a]]
    after = {s["hit"]["_id"]: s for s in folded_hits(page_only)}
    got = [v["_id"] for v in after[story_a]["versions"]]
    assert got == [v["_id"] for v in full[story_a]["versions"]] and len(got) == 2
    assert after["b-0"]["versions"] == [] and after["u-0"]["versions"] == []  # only the story opened
    fold_versions(es, body, page_only["hits"]["hits"], index=host, versions=1)  # a whole page at once
    assert len(folded_hits(page_only)[0]["versions"]) <= 1
    for bad, word in (({"versions": 0}, "versions"), ({"hits": {"a": 1}}, "hits")):
        kwargs = {"hits": [hits[story_a]], "versions": 3, **bad}
        with pytest.raises(InputError, match=word):
            fold_versions(es, body, kwargs.pop("hits"), index=host, **kwargs)


def test_a_page_whose_stories_have_one_matching_version_each_costs_one_search(es, settings, host):
    """fold_search(versions=0) counts the versions of a page's stories with a second search, unless the first one
    proves each story has a single matching version (as many documents as stories); a post_filter disproves it."""
    texts = {"a": story(31), "b": story(32)}
    for n in range(2):
        _put(es, host, f"a-{n}", texts["a"], headline="quay" if n else "quay wall", section=f"s{n}")
    _put(es, host, "b-0", texts["b"], headline="quay lights")
    signed = [sign_text("\n\n".join(texts[i[0]]),
                        TextMeta(page_id=i), settings=settings) for i in ("a-0", "a-1", "b-0")]
    ingest(signed, client=es, settings=settings, index=host)
    es.indices.refresh(index=host)
    searches = []
    sent = es.transport.perform_request

    def counting(method, path, **kwargs):
        searches.append(path.split("?")[0])
        return sent(method, path, **kwargs)

    es.transport.perform_request = counting
    try:
        for query, post, expected, requests in (
            ({"match": {"headline": "wall lights"}}, None, {"a-0": 0, "b-0": 0}, 1),  # one version each
            ({"match": {"headline": "quay"}}, None, {"a": 1, "b-0": 0}, 2),  # story a: both versions match
            ({"match": {"headline": "wall lights"}}, {"term": {"section": "s0"}}, {"a-0": 0}, 2),
        ):
            searches.clear()
            body = {"query": query, "size": 10, **({"post_filter": post} if post else {})}
            got = {s["hit"]["_id"]: s["other_versions_matching"] for s in folded_hits(
                fold_search(es, body, index=host, versions=0))}  # fmt: skip
            got = {("a" if i.startswith("a-") and "a" in expected else i): n for i, n in got.items()}
            assert (got, len(searches)) == (expected, requests), query
    finally:
        es.transport.perform_request = sent


def test_versions_in_a_host_index_say_what_they_hold_and_add(es, settings, host):
    text = story(8, sentences=16)
    local = ("The Harbour Gazette asked the operator whether the night ferry would keep its Sunday crossings "
             "and had no answer.")
    versions = {"v-ref": text, "v-short": text[:5], "v-adds": [*text[:4], local, *text[4:]]}
    for hour, (doc_id, paragraphs) in enumerate(versions.items()):
        _put(es, host, doc_id, paragraphs, headline="ferry", published=f"2026-03-0{hour + 1}T08:00:00Z")
    signed = [sign_text("\n\n".join(p), TextMeta(page_id=i), settings=settings) for i, p in versions.items()]
    outcomes = ingest(signed, client=es, settings=settings, index=host)
    assert sorted(o.status for o in outcomes) == ["duplicate", "duplicate", "new"]
    res = fold_search(es, {"query": {"match": {"headline": "ferry"}}, "size": 10}, index=host)
    add_relations(es, res, index=host, time_field="first_published")  # the host's own date field
    relations = {}
    for hit in res["hits"]["hits"]:
        relations[hit["_id"]] = hit["newsfold_relation"]
        for version in hit["inner_hits"]["newsfold_versions"]["hits"]["hits"]:
            relations[version["_id"]] = version["newsfold_relation"]
    assert relations["v-ref"]["kind"] == "reference"  # the earliest by the host's date
    assert relations["v-short"]["kind"] == "shorter" and relations["v-short"]["held"] < 0.9
    assert relations["v-adds"]["label"] == "adds 1 paragraph"


def test_fold_query_keeps_the_host_parts_and_refuses_collapse():
    body = {"query": {"match_all": {}}, "from": 20, "size": 5, "sort": [{"date": "desc"}],
            "highlight": {"fields": {"text": {}}}, "aggs": {"mine": {"terms": {"field": "section"}}}}
    out = fold_query(body, versions=2)
    assert body.get("collapse") is None  # the input is not changed
    assert (out["from"], out["size"], out["sort"], out["highlight"]) == (20, 5, body["sort"], body["highlight"])
    assert out["collapse"]["field"] == "newsfold.cluster_id" and out["collapse"]["inner_hits"]["size"] == 3
    assert set(out["aggs"]) == {"mine", "newsfold_stories", "newsfold_unfolded"}
    for bad in ({"collapse": {"field": "x"}}, {"search_after": [1]}, {"rescore": {}}):
        with pytest.raises(ValueError, match="cannot use"):
            fold_query(bad)


def test_host_example_runs_and_folds(es_url):
    index = f"hostnews-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "ELASTICSEARCH_URL": es_url, "HOST_INDEX": index}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "host_search" / "app.py")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    *stories, summary = [json.loads(line) for line in done.stdout.splitlines()]
    summary_ids = {o["page_id"]: o for o in summary["outcomes"]}
    assert set(summary_ids) == {"wire-1001", "daily-77", "coast-5", "wire-1002", "daily-78"}
    assert summary["stories"] == 3 and summary["documents"] == 6 == sum(summary["sections"].values())
    assert len(stories) == 3
    ids = {s["id"] for s in stories}
    assert "daily-79" in ids  # indexed by the host, never folded, still found
    harbour = next(s for s in stories if s["id"] in {"wire-1001", "daily-77", "coast-5"})
    assert harbour["other_versions"] == 2 == harbour["other_versions_all"]
    assert summary["section_stories"] == {"business": 1, "culture": 1, "local": 2}  # coast-5 is "local"
    statuses = sorted(o["status"] for o in summary["outcomes"])
    assert statuses == ["duplicate", "duplicate", "duplicate", "new", "new"]  # one new per story
    life = summary["life"]
    assert "coast-5" in life["unfolded_after_full_index"]  # the full index request dropped its fold fields
    assert life["rewritten"]["status"] == "new" and life["rewritten"]["cluster_id"].startswith("coast-5~")
    (deleted,) = life["deleted"]
    assert deleted["status"] == "deleted" and deleted["page_id"] == "wire-1001"
    harbour_left = [s for s in life["stories_after"] if "daily-77" in s]
    assert harbour_left == [["daily-77"]]  # the remaining copy is still found, under the story's name
    assert summary["errors"] == ["InputError", "InputTypeError", "InputError", "Rejection:no_article"]
    assert all({"section", "author", "paywalled", "headline"} <= set(s) for s in stories)
    client = build_client(__import__("newsfold.plugin", fromlist=["Settings"]).Settings(elasticsearch_url=es_url))
    try:
        doc = client.get(index=index, id="daily-77")["_source"]
        # the host's partial update changed its field and kept newsfold's
        assert (doc["section"], doc["author"], doc["paywalled"]) == ("business", "A. Reporter", False)
        assert doc["newsfold"]["cluster_id"] == "coast-5"  # the story's name, though coast-5 moved on
        assert not client.exists(index=index, id="wire-1001")
    finally:
        client.options(ignore_status=404).indices.delete(index=f"{index},{index}-corrections,{index}-founding")
        client.close()


RACER = """
import sys, time
from newsfold.plugin import Settings, build_client, ingest, TextMeta, sign_text
url, index, who, start, text = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
settings = Settings(elasticsearch_url=url)
client = build_client(settings)
while time.time() < start:
    time.sleep(0.005)
for n in range(6):  # one page per call: every copy races the other process's copies
    page = sign_text(text, page_id=f"{who}-{n}", url=f"https://{who}{n}.example/story", settings=settings)
    ingest([page], client=client, settings=settings, index=index)
client.close()
"""


def test_racing_copies_from_two_processes_fold_into_one_story(es, es_url, settings, host):
    import time

    text = "\n\n".join(story(21))
    for who in ("a", "b"):
        for n in range(6):
            _put(es, host, f"{who}-{n}", story(21), section=who)
    start = f"{time.time() + 2.0:.3f}"
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, es_url, host, who, start, text], stderr=subprocess.PIPE,
                         text=True)
        for who in ("a", "b")
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    docs = es.mget(index=host, ids=[f"{w}-{n}" for w in "ab" for n in range(6)])["docs"]
    clusters = {d["_id"]: d["_source"]["newsfold"]["cluster_id"] for d in docs}
    assert len(set(clusters.values())) == 1, clusters
    assert {d["_source"]["section"] for d in docs} == {"a", "b"}  # the host's field is untouched


def test_corrections_work_on_a_host_index(es, settings, host):
    from newsfold.plugin import split_page

    text = story(22)
    for n in range(3):
        _put(es, host, f"c-{n}", text)
    signed = [sign_text("\n\n".join(text), TextMeta(page_id=f"c-{n}"), settings=settings) for n in range(3)]
    ingest(signed, client=es, settings=settings, index=host)
    on_host = settings.replace(index=host)
    split_page("c-2", user="editor", client=es, settings=on_host)

    def cluster(page_id):
        return es.get(index=host, id=page_id)["_source"]["newsfold"]["cluster_id"]

    assert cluster("c-0") == cluster("c-1") != cluster("c-2")
    # a later copy of the page stays apart: the correction is honoured by ingest on the host index
    edited = "\n\n".join([*text, "The council will meet again next week."])
    again = sign_text(edited, TextMeta(page_id="c-2", url="https://changed.example/x"), settings=settings)
    assert ingest([again], client=es, settings=settings, index=host)[0].status != "unchanged"
    assert cluster("c-2") != cluster("c-0")


def test_ensure_index_adds_fields_of_a_newer_mapping(es, settings):
    from newsfold.plugin.fold.index import ensure_index as ensure
    from newsfold.plugin.fold.index import index_body

    name = ensure(es, settings)
    # an index made by an older mapping: the newest field is missing
    def fold_props():
        return es.indices.get_mapping(index=name)[name]["mappings"]["properties"]["newsfold"]["properties"]

    assert "representative" in fold_props()
    es.indices.delete(index=name)
    body = index_body(settings)
    del body["mappings"]["properties"]["newsfold"]["properties"]["representative"]
    es.indices.create(index=name, settings=body["settings"], mappings=body["mappings"], aliases={settings.index: {}})
    assert "representative" not in fold_props()
    assert ensure(es, settings) == name
    assert "representative" in fold_props()


@pytest.fixture
def monthly(es, settings):
    """A host's monthly indices behind its own alias (its template composes newsfold's fields): two months so far."""
    name = f"hostm-{uuid.uuid4().hex[:10]}"
    es.cluster.put_component_template(name=f"{name}-newsfold", **component_template(settings))
    es.indices.put_index_template(
        name=name, index_patterns=[f"{name}-*"], composed_of=[f"{name}-newsfold"],
        template={"mappings": {"properties": {"headline": {"type": "text"}, "text": {"type": "text"}}}},
    )  # fmt: skip
    es.indices.create(index=f"{name}-2026.10", aliases={name: {"is_write_index": False}})
    es.indices.create(index=f"{name}-2026.11", aliases={name: {"is_write_index": True}})
    yield name
    es.options(ignore_status=404).indices.delete(index=f"{name}-2026.10,{name}-2026.11,{name}-corrections,{name}-founding")
    es.indices.delete_index_template(name=name)
    es.cluster.delete_component_template(name=f"{name}-newsfold")


def test_a_host_with_monthly_indices_folds_across_them_and_edits_pages_where_they_are(es, settings, monthly):
    """The host writes each article into its month; ingest folds through the host's alias (docs/embedding.md)."""
    from newsfold.plugin import delete_pages

    text = story(7)
    _put(es, f"{monthly}-2026.10", "oct-1", text, headline="Harbour")
    _put(es, f"{monthly}-2026.11", "nov-1", text, headline="Harbour, again")

    def signed(pid, paras):
        return sign_text("\n\n".join(paras), TextMeta(title="Harbour", page_id=pid), settings=settings)

    first = {o.page_id: o for o in ingest([signed("oct-1", text)], client=es, settings=settings, index=monthly)}
    second = {o.page_id: o for o in ingest([signed("nov-1", text)], client=es, settings=settings, index=monthly)}
    assert (first["oct-1"].status, second["nov-1"].status) == ("new", "duplicate")
    assert second["nov-1"].cluster_id == "oct-1"  # one story across the months
    edited = text[:-1]
    (again,) = ingest([signed("oct-1", edited)], client=es, settings=settings, index=monthly)
    assert again.status == "updated"
    es.indices.refresh(index=monthly)
    hits = es.search(index=monthly, query={"ids": {"values": ["oct-1"]}})["hits"]["hits"]
    assert [(h["_index"], h["_source"]["headline"]) for h in hits] == [(f"{monthly}-2026.10", "Harbour")]
    res = fold_search(es, {"query": {"match": {"text": "harbour"}}}, index=monthly)
    assert story_count(res) == 1
    assert [o.status for o in delete_pages(["oct-1"], client=es, settings=settings, index=monthly)] == ["deleted"]
