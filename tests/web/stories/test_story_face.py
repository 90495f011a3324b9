"""One story, one face: every surface shows the same page's headline for a story (issue 38, docs/stories.md).

On the sample corpus (``newsfold.samples``: wire stories carried by several sites, each copy with its own
headline, some cut short), each story's headline is the same on top stories, the search (JSON and HTML),
its page, the feed, the admin's cluster list and its cluster page; the page shown is the editor's choice,
else the fullest, else the earliest.
"""

from __future__ import annotations

import dataclasses
import html
import re

import feedparser
import pytest

from newsfold.cli import main
from newsfold.plugin.search.story_face import face_key
from newsfold.samples.generator import generate
from tests.web.admin.helpers import ADMIN_WEB, BEARER


@pytest.fixture
def demo(es, settings, redis_url, tmp_path, monkeypatch, web_app):
    generate(tmp_path / "demo", seed=5, stories=10)
    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("NEWSFOLD_INDEX", settings.index)
    out = tmp_path / "outcomes.jsonl"
    assert main(["ingest", str(tmp_path / "demo" / "pages.jsonl"), "--out", str(out), "--quiet"]) == 0
    es.indices.refresh(index=settings.index)
    app = web_app(settings.replace(redis_url=redis_url), dataclasses.replace(ADMIN_WEB, page_size=50))
    return app.test_client()


def _by_story(results: list[dict]) -> dict[str, str]:
    return {r["cluster_id"]: r["headline"] for r in results if r.get("cluster_id")}


def test_every_surface_shows_one_headline_per_story(demo, es, settings):
    top = _by_story(demo.get("/api/stories?window=all").get_json()["results"])
    assert len(top) >= 5, "the sample corpus should make several stories"
    surfaces = {
        "search": _by_story(demo.get("/api/search?sort=date").get_json()["results"]),
        "search page": {cid: html.unescape(h) for cid, h in re.findall(
            r'data-cluster-id="([^"]+)".*?data-testid="story-title"[^>]*>\s*<a [^>]*>([^<]*)</a>',
            demo.get("/?sort=date").get_data(as_text=True), re.S)},
        "story page": {cid: demo.get(f"/api/stories/{cid}").get_json()["headline"] for cid in top},
        "feed": {e.link.rsplit("/stories/", 1)[1]: e.title
                 for e in feedparser.parse(demo.get("/feed?window=all").get_data()).entries},
        "admin list": {cid: html.unescape(h) for cid, h in re.findall(
            r'<td class="title-cell"><a href="/admin/clusters/([^"]+)">([^<]*)</a>',
            demo.get("/admin/clusters", headers=BEARER).get_data(as_text=True))},
        "admin home": {cid: html.unescape(h) for cid, h in re.findall(
            r'<td><a href="/admin/clusters/([^"]+)">([^<]*)</a>',
            demo.get("/admin/", headers=BEARER).get_data(as_text=True).split('data-testid="largest-clusters"')[-1])},
    }  # fmt: skip
    for cid in top:
        page = demo.get(f"/admin/clusters/{cid}", headers=BEARER).get_data(as_text=True)
        shown = re.search(r'data-testid="cluster-face">Shown as <a [^>]*>([^<]*)</a>', page)
        surfaces.setdefault("cluster page", {})[cid] = html.unescape(shown.group(1)) if shown else None
    for name, headlines in surfaces.items():
        assert set(headlines) & set(top), f"{name} lists none of the top stories"
        differing = {cid: (top[cid], h) for cid, h in headlines.items() if cid in top and h != top[cid]}
        assert not differing, f"{name} shows another headline than top stories: {differing}"


def test_the_face_is_the_fullest_version_and_never_a_copy_cut_short(demo, es, settings):
    for story in demo.get("/api/stories?window=all").get_json()["results"]:
        hits = es.search(index=settings.index, query={"term": {"newsfold.cluster_id": story["cluster_id"]}},
                         size=100)["hits"]["hits"]  # fmt: skip
        fullest = min(hits, key=lambda h: face_key(h["_source"]))
        assert story["id"] == fullest["_id"]
        words = max(h["_source"]["newsfold"].get("token_count") or 0 for h in hits)
        assert fullest["_source"]["newsfold"].get("token_count") == words
