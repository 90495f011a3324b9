"""The address of a story an editor merged away leads (307, not cached) to the story that absorbed it, until an
undo gives it its story back."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from newsfold.plugin.edit.corrections import merge_clusters
from newsfold.plugin.edit.merged import merged_into
from newsfold.plugin.edit.undo import undo_correction
from tests.story_corpus import ingest_story_corpus


@pytest.fixture
def clusters(es, settings):
    return ingest_story_corpus(es, settings)


@pytest.fixture
def client(settings, clusters, web_app):
    return web_app(settings).test_client()


def _id(cluster: str) -> str:
    return quote(cluster, safe="")


def test_a_merged_away_story_redirects_to_the_story_that_absorbed_it(client, clusters, es, settings):
    """Fails before the fix: /stories/<old id> was a 404 after a merge."""
    museum, lantern = clusters["museum-a"], clusters["lantern-a"]
    merge_clusters(museum, lantern, user="editor", client=es, settings=settings)
    survivor = es.get(index=settings.index, id="museum-a")["_source"]["newsfold"]["cluster_id"]
    gone = ({museum, lantern} - {survivor}).pop()
    res = client.get(f"/stories/{_id(gone)}?page=1")
    assert res.status_code == 307
    assert res.headers["Location"] == f"/stories/{_id(survivor)}?page=1"
    assert client.get(res.headers["Location"]).status_code == 200
    api = client.get(f"/api/stories/{_id(gone)}")
    assert api.status_code == 307 and api.headers["Location"] == f"/api/stories/{_id(survivor)}"

    # merged again: the oldest id follows the chain to where its pages are now
    old = clusters["old-a"]
    merge_clusters(survivor, old, user="editor", client=es, settings=settings)
    now = es.get(index=settings.index, id="museum-a")["_source"]["newsfold"]["cluster_id"]
    assert merged_into(gone, client=es, settings=settings) == now
    assert client.get(f"/stories/{_id(gone)}").headers["Location"] == f"/stories/{_id(now)}"


def test_an_unknown_story_stays_a_404(client, clusters, es, settings):
    assert client.get("/stories/no-such-story").status_code == 404
    assert merged_into("no-such-story", client=es, settings=settings) is None  # no corrections index yet
    merge_clusters(clusters["museum-a"], clusters["lantern-a"], user="editor", client=es, settings=settings)
    assert client.get("/stories/no-such-story").status_code == 404
    assert client.get("/api/stories/no-such-story").status_code == 404


def test_the_redirect_of_a_merge_is_temporary_and_an_undo_gives_the_address_its_story_back(client, clusters, es,
                                                                                        settings):  # fmt: skip
    """Fails before the fix: the old address answered a permanent 301 without Cache-Control, which a browser keeps
    after the merge is undone."""
    museum, lantern = clusters["museum-a"], clusters["lantern-a"]
    merge = merge_clusters(museum, lantern, user="editor", client=es, settings=settings)
    survivor = es.get(index=settings.index, id="museum-a")["_source"]["newsfold"]["cluster_id"]
    gone = ({museum, lantern} - {survivor}).pop()
    for path in (f"/stories/{_id(gone)}", f"/api/stories/{_id(gone)}"):
        res = client.get(path)
        assert res.status_code in (302, 307), path
        assert res.headers["Cache-Control"] == "no-store", path
    undo_correction(merge.id, user="editor", client=es, settings=settings)
    assert merged_into(gone, client=es, settings=settings) is None  # the undone merge leads nowhere now
    page = client.get(f"/stories/{_id(gone)}")
    assert page.status_code == 200
    api = client.get(f"/api/stories/{_id(gone)}")
    assert api.status_code == 200 and api.get_json()["cluster_id"] == gone
