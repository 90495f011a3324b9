"""Story names are checked before use (issue 32, item 9): page ids that look like story names squat nothing."""

from __future__ import annotations

from newsfold.plugin import ingest
from newsfold.plugin.fold.founding import renamed
from tests.pages import signed_page, story


def test_a_rewritten_page_never_joins_a_story_whose_names_were_squatted(es, settings):
    """The old story keeps ``victim``; an attacker founded stories named as every fallback the rewritten text
    would try first. The rewritten page founds a story of its own, under a name nobody carries."""
    text = story(3230, 16)
    ingest([signed_page(settings, "victim", "Victim story", text, site="a.test")], client=es, settings=settings)
    ingest([signed_page(settings, "copy", "Victim story copy", text, site="b.test")], client=es, settings=settings)
    rewritten = signed_page(settings, "victim", "Something else", story(3231, 16), site="a.test")
    squats = [renamed("victim", rewritten.content_hash, n) for n in range(12)]
    for n, squat in enumerate(squats):
        attacker = signed_page(settings, squat, f"Attacker {n}", story(3240 + n, 16), site="evil.test")
        (out,) = ingest([attacker], client=es, settings=settings)
        assert out.cluster_id == squat
    (out,) = ingest([rewritten], client=es, settings=settings)
    assert out.status == "new"
    assert out.cluster_id not in squats and out.cluster_id != "victim" and out.cluster_id.startswith("victim~")
    es.indices.refresh(index=settings.index)
    carriers = es.search(index=settings.index, query={"term": {"newsfold.cluster_id": out.cluster_id}})
    assert [h["_id"] for h in carriers["hits"]["hits"]] == ["victim"]


def test_two_new_stories_of_one_batch_never_take_one_name(es, settings):
    """A page whose id is the name another founder of the same batch would fall back to: two stories stay two."""
    text = story(3250, 16)
    ingest([signed_page(settings, "p", "Old story", text, site="a.test")], client=es, settings=settings)
    ingest([signed_page(settings, "q", "Old story copy", text, site="b.test")], client=es, settings=settings)
    rewritten = signed_page(settings, "p", "New text", story(3251, 16), site="a.test")
    squat = signed_page(settings, renamed("p", rewritten.content_hash), "Other", story(3252, 16), site="c.test")
    outs = {o.page_id: o for o in ingest([rewritten, squat], client=es, settings=settings)}
    assert outs["p"].status == outs[squat.page_id].status == "new"
    assert outs["p"].cluster_id != outs[squat.page_id].cluster_id
