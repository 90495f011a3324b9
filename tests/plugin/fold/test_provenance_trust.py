"""Provenance is a ranking signal: one site must not be able to forge a story's wire, origin or coverage
(issue 32). Every test ingests into the test index (the stand-in, or a real node with
NEWSFOLD_TEST_BACKEND=elasticsearch)."""

from __future__ import annotations

import datetime as dt
import json
import types
from urllib.parse import quote

import pytest

from newsfold.plugin import ingest
from newsfold.plugin.edit.corrections import set_representative, split_page
from newsfold.plugin.fold import batch
from newsfold.plugin.fold.document import fold_of
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.web.config import WebSettings
from tests.pages import story
from tests.plugin.fold.test_provenance import html_page

T0 = dt.datetime(2025, 3, 1, 8, 0, tzinfo=dt.UTC)


def _at(hours: float, start: dt.datetime = T0) -> str:
    return (start + dt.timedelta(hours=hours)).isoformat().replace("+00:00", "Z")


def signed(settings, pid, site, published, paras, *, head="", byline=""):
    page = html_page(paras, head=head, byline=byline, title=f"{pid} headline")
    out = sign_page(Page(html=page, id=pid, url=f"https://{site}/{pid}", site=site, published=published), settings)
    assert not hasattr(out, "reason"), out
    return out


def origins(es, settings) -> dict[str, tuple]:
    es.indices.refresh(index=settings.index)
    hits = es.search(index=settings.index, size=200, query={"match_all": {}})["hits"]["hits"]
    return {h["_id"]: (fold_of(h["_source"]).get("origin_site"), fold_of(h["_source"]).get("origin_wire"),
                       fold_of(h["_source"]).get("origin_id")) for h in hits}  # fmt: skip


def the_origin(found: dict[str, tuple], pages) -> tuple:
    held = {found[p] for p in pages}
    assert len(held) == 1, held  # every page of the story holds the same origin
    return held.pop()


BODY = story(900, sentences=14)
FORGERIES = {
    "dateline": ([f"LONDON (Reuters) - {BODY[0]}", *BODY[1:]], {}),
    "invisible meta author": (BODY, {"head": "<meta name='author' content='Reuters'>"}),
    "byline": (BODY, {"byline": "<p class='byline'>By Jane Doe, Associated Press</p>"}),
    "made-up agency": ([f"LONDON (XQZ) - {BODY[0]}", *BODY[1:]], {}),
    "json-ld publisher": (BODY, {"head": '<script type="application/ld+json">'
                                 + json.dumps({"@type": "NewsArticle", "publisher": {"name": "Copycat News Agency"}})
                                 + "</script>"}),
    "source line": ([*BODY, "Source: Xinhua"], {}),
}  # fmt: skip


@pytest.fixture
def forged(es, settings, request):
    """One story: the original on a.test, an uncredited copy on b.test 2 h later, a forged copy on c.test 5 h later."""
    paras, extra = FORGERIES[request.param]
    pages = [signed(settings, "orig", "a.test", _at(0), BODY), signed(settings, "copy", "b.test", _at(2), BODY),
             signed(settings, "forged", "c.test", _at(5), paras, **extra)]  # fmt: skip
    assert pages[2].article.wire is not None  # the credit is read: it says something about the forged page
    outcomes = ingest(pages, client=es, settings=settings)
    assert len({o.cluster_id for o in outcomes}) == 1
    return outcomes[0].cluster_id


@pytest.mark.parametrize("forged", list(FORGERIES), indirect=True)
def test_one_late_copy_with_a_forged_credit_does_not_take_over_the_story(es, settings, forged, web_app):
    assert the_origin(origins(es, settings), ["orig", "copy", "forged"]) == ("a.test", None, "orig")
    client = web_app(settings, web=WebSettings(public_syndication=True)).test_client()  # the figures, open
    originals = client.get("/api/stories?window=all&site=a.test&originals=1").get_json()
    assert [r["cluster_id"] for r in originals["results"]] == [forged]
    assert [r["cluster_id"] for r in client.get("/api/stories?window=all&nowire=1").get_json()["results"]] == [forged]
    rows = {r["site"]: r for r in client.get("/api/syndication?window=all").get_json()["sites"]}
    assert (rows["a.test"]["own_stories"], rows["a.test"]["copies"]) == (1, 0)
    story_page = client.get(f"/api/stories/{quote(forged)}").get_json()
    assert story_page["origin"]["evidence"] == "earliest by 2 h"
    assert {v["id"]: v["wire"] is not None for v in story_page["versions"]}["forged"]  # the page keeps its badge


def test_independent_sites_that_agree_make_a_wire_story_and_visible_credits_outweigh_metadata(es, settings):
    dateline = [f"LONDON (Reuters) - {BODY[0]}", *BODY[1:]]
    meta = "<meta name='author' content='AFP'>"
    ingest([signed(settings, "orig", "a.test", _at(0), BODY),
            signed(settings, "r1", "b.test", _at(5), dateline), signed(settings, "r2", "c.test", _at(6), dateline),
            # three sites' invisible metadata weigh less than two visible credits
            *(signed(settings, f"m{n}", f"m{n}.test", _at(1 + n / 10), BODY, head=meta) for n in range(3))],
           client=es, settings=settings)  # fmt: skip
    found = origins(es, settings)
    assert the_origin(found, ["orig", "r1", "r2", "m0", "m1", "m2"]) == (None, "Reuters", "r1")


def test_pages_of_one_site_do_not_outvote_independent_sites(es, settings):
    ap = "<p class='byline'>By Jane Doe, Associated Press</p>"
    reuters = [f"LONDON (Reuters) - {BODY[0]}", *BODY[1:]]
    ingest([signed(settings, "ap1", "a.test", _at(0), BODY, byline=ap),
            signed(settings, "ap2", "a.test", _at(0.1), BODY, byline=ap),
            signed(settings, "ap3", "a.test", _at(0.2), BODY, byline=ap),
            signed(settings, "r1", "b.test", _at(1), reuters), signed(settings, "r2", "c.test", _at(2), reuters)],
           client=es, settings=settings)  # fmt: skip
    found = origins(es, settings)
    # and the origin page is one that credits the story's wire, not an earlier page crediting another
    assert the_origin(found, ["ap1", "ap2", "ap3", "r1", "r2"]) == (None, "Reuters", "r1")


def test_the_origin_page_credits_the_wire_it_is_shown_for(es, settings):
    reuters = [f"LONDON (Reuters) - {BODY[0]}", *BODY[1:]]
    ingest([signed(settings, "ap", "a.test", _at(0), [f"LONDON (AP) - {BODY[0]}", *BODY[1:]]),
            signed(settings, "r1", "b.test", _at(1), reuters), signed(settings, "r2", "c.test", _at(2), reuters),
            signed(settings, "r3", "d.test", _at(3), reuters)],
           client=es, settings=settings)  # fmt: skip
    site, wire, origin_id = the_origin(origins(es, settings), ["ap", "r1", "r2", "r3"])
    credited = fold_of(es.get(index=settings.index, id=origin_id)["_source"])["wire"]
    assert (wire, origin_id, credited) == ("Reuters", "r1", "Reuters")


def test_an_editors_choice_is_not_undone_by_reposting_pages_under_new_ids(es, settings):
    reuters = [f"LONDON (Reuters) - {BODY[0]}", *BODY[1:]]
    ingest([signed(settings, "orig", "a.test", _at(0), BODY),
            signed(settings, "f1", "f.test", _at(5), reuters), signed(settings, "g1", "g.test", _at(5.5), reuters)],
           client=es, settings=settings)  # fmt: skip
    assert the_origin(origins(es, settings), ["orig", "f1", "g1"])[1] == "Reuters"  # two sites agree
    set_representative("orig", user="editor", client=es, settings=settings)  # the editor says: a.test's own story
    assert the_origin(origins(es, settings), ["orig", "f1", "g1"]) == ("a.test", None, "orig")
    reposts = [signed(settings, f"{s}2", f"{s}.test", _at(6), reuters) for s in ("f", "g", "h")]
    outcomes = ingest(reposts, client=es, settings=settings)
    story_id = fold_of(es.get(index=settings.index, id="orig")["_source"])["cluster_id"]
    assert {o.cluster_id for o in outcomes} == {story_id}
    assert the_origin(origins(es, settings), ["orig", "f1", "g1", "f2", "g2", "h2"]) == ("a.test", None, "orig")


def test_a_split_forged_copy_reposted_under_a_new_id_does_not_take_over(es, settings):
    reuters = [f"LONDON (Reuters) - {BODY[0]}", *BODY[1:]]
    ingest([signed(settings, "orig", "a.test", _at(0), BODY), signed(settings, "copy", "b.test", _at(1), BODY),
            signed(settings, "f1", "f.test", _at(5), reuters)], client=es, settings=settings)  # fmt: skip
    split_page("f1", user="editor", client=es, settings=settings)
    reposts = [signed(settings, f"f{n}", "f.test", _at(5 + n), reuters) for n in range(2, 5)]
    ingest(reposts, client=es, settings=settings)
    found = origins(es, settings)
    assert the_origin(found, ["orig", "copy"]) == ("a.test", None, "orig")


@pytest.fixture
def clock(monkeypatch):
    """The time ingest writes as a page's first sighting, set by the test."""
    now = [dt.datetime.now(dt.UTC)]
    fake = types.SimpleNamespace(UTC=dt.UTC, datetime=types.SimpleNamespace(now=lambda tz=None: now[0]))
    monkeypatch.setattr(batch, "dt", fake)
    return now


@pytest.mark.parametrize("earlier", [1, 24 * 30], ids=["an hour", "a month"])
def test_a_backdated_copy_seen_later_is_not_the_origin(es, settings, clock, web_app, earlier):
    start = clock[0] - dt.timedelta(hours=1)
    ingest([signed(settings, "orig", "a.test", _at(0, start), BODY)], client=es, settings=settings)
    clock[0] += dt.timedelta(hours=5)  # five hours later, a copy claiming to be older than the original
    ingest([signed(settings, "late", "b.test", _at(-earlier, start), BODY)], client=es, settings=settings)
    assert the_origin(origins(es, settings), ["orig", "late"]) == ("a.test", None, "orig")
    story_id = fold_of(es.get(index=settings.index, id="orig")["_source"])["cluster_id"]
    page = web_app(settings).test_client().get(f"/api/stories/{quote(story_id)}").get_json()
    assert page["first"]["id"] == page["reference"]["id"] == "orig"  # the story page agrees
    assert page["origin"]["evidence"] == ("earliest by 4 h" if earlier == 1 else "earliest seen")


def test_an_original_updated_later_keeps_its_first_sighting(es, settings, clock):
    start = clock[0] - dt.timedelta(minutes=10)
    ingest([signed(settings, "orig", "a.test", _at(0, start), BODY)], client=es, settings=settings)
    clock[0] += dt.timedelta(hours=1)
    ingest([signed(settings, "copy", "b.test", _at(1, start), BODY)], client=es, settings=settings)
    clock[0] += dt.timedelta(hours=9)  # the original is updated (one more paragraph) and ingested again
    outcome = ingest([signed(settings, "orig", "a.test", _at(0, start), [*BODY, "Updated with a statement."])],
                     client=es, settings=settings)  # fmt: skip
    assert outcome[0].status == "updated"
    assert the_origin(origins(es, settings), ["orig", "copy"]) == ("a.test", None, "orig")


@pytest.mark.parametrize("claimed", ["1970-01-01T00:00:00Z", "1989-12-31", "0001-01-01", "2999-01-01"])
def test_implausible_dates_are_undated_and_decide_nothing(es, settings, claimed):
    outcomes = ingest([signed(settings, "orig", "a.test", _at(0), BODY),
                       signed(settings, "odd", "b.test", claimed, BODY)], client=es, settings=settings)  # fmt: skip
    assert sorted(o.status for o in outcomes) == ["duplicate", "new"]
    assert the_origin(origins(es, settings), ["orig", "odd"]) == ("a.test", None, "orig")


def test_the_time_of_day_a_page_gives_is_kept(es, settings, web_app):
    evening = html_page(BODY, head="<meta property='article:published_time' content='2025-03-01T23:00:00+00:00'>")
    late = sign_page(Page(html=evening, id="late", url="https://b.test/late", site="b.test"), settings)
    ingest([signed(settings, "orig", "a.test", _at(2), BODY), late], client=es, settings=settings)
    assert the_origin(origins(es, settings), ["orig", "late"]) == ("a.test", None, "orig")
    stored = es.get(index=settings.index, id="late")["_source"]["published"]
    assert stored == "2025-03-01T23:00:00Z"
    story_id = fold_of(es.get(index=settings.index, id="orig")["_source"])["cluster_id"]
    page = web_app(settings).test_client().get(f"/api/stories/{quote(story_id)}").get_json()
    assert page["origin"]["evidence"] == "earliest by 13 h"


# ---------------------------------------------------------------- sites are publishers (registrable domains)
@pytest.mark.parametrize(
    ("site", "domain"),
    [("news.a.test", "a.test"), ("https://www.bbc.co.uk/news/1", "bbc.co.uk"), ("m.news.bbc.co.uk", "bbc.co.uk"),
     ("a.github.io", "a.github.io"), ("127.0.0.1", "127.0.0.1"), ("co.uk", "co.uk"), (None, None)],
)  # fmt: skip
def test_a_sites_registrable_domain_comes_from_the_shipped_public_suffix_list(site, domain):
    from newsfold.plugin.urls import registrable_domain

    assert registrable_domain(site) == domain


def test_subdomains_of_one_publisher_are_one_site(es, settings, web_app):
    wide, narrow = story(910, sentences=14), story(911, sentences=14)
    ingest([*(signed(settings, f"w{n}", f"s{n}.a.test", _at(n / 10), wide) for n in range(6)),
            signed(settings, "x", "x.test", _at(1), narrow), signed(settings, "y", "y.example", _at(2), narrow)],
           client=es, settings=settings)  # fmt: skip
    es.indices.refresh(index=settings.index)
    client = web_app(settings, web=WebSettings(public_syndication=True)).test_client()  # the figures, open
    top = client.get("/api/stories?window=all").get_json()["results"]
    assert [(r["cluster_id"], r["sites"], r["pages"]) for r in top][0][1:] == (2, 2)
    assert [(r["sites"], r["pages"]) for r in top] == [(2, 2), (1, 6)]
    wide_story = client.get(f"/api/stories/{quote(top[1]['cluster_id'])}").get_json()
    assert wide_story["sites"] == 1 and wide_story["origin"]["evidence"] == "the only site that ran it"
    rows = {r["site"]: r for r in client.get("/api/syndication?window=all").get_json()["sites"]}
    assert rows["a.test"]["pages"] == 6 and rows["a.test"]["own_stories"] == 1 and rows["a.test"]["copies"] == 0
    assert not any(site.endswith(".a.test") for site in rows)
