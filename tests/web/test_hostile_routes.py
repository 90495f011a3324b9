"""The newer routes under the second security audit (issue 24): feeds, JSON bodies, story timelines."""

from __future__ import annotations

import re

import feedparser
import pytest

from newsfold.plugin import ingest
from newsfold.plugin.sign.signing import TextMeta, sign_text
from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.pages import story


@pytest.fixture
def app(settings, es):
    from newsfold.web.auth import new_api_token

    token, entry = new_api_token("tests")
    made = create_app({"TESTING": True}, settings=settings, web=WebSettings(api_token_hashes=entry))
    made.config["TEST_AUTH"] = {"Authorization": f"Bearer {token}"}
    yield made
    get_resources(made).close()


@pytest.mark.parametrize("args", ["_external=1", "endpoint=x", "_method=POST", "_scheme=javascript&q=harbour",
                                  "_anchor=x&window=7d", "values=1&sort=date"])  # fmt: skip
def test_feed_arguments_it_does_not_know_are_dropped(app, args):
    res = app.test_client().get(f"/feed?{args}")
    assert res.status_code == 200, res.get_data(as_text=True)[:300]
    alternate = re.search(r'<link[^>]*rel="alternate"[^>]*href="([^"]+)"', res.get_data(as_text=True))
    link = alternate.group(1) if alternate else ""
    assert link.startswith("/") and not link.startswith("//") and "#" not in link  # no scheme, host or anchor
    assert not re.search(r"[?&](_external|endpoint|_method|_scheme|_anchor|values)=", link)


LONE = '"a\\ud800b"'  # JSON text: an escape of a lone high surrogate (written where a body has "@")


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/pages", '{"pages": [{"html": "<p>ok</p>"}, {"html": @}]}', "pages[1].html"),
        ("/api/pages", '{"pages": [{"html": "<p>ok</p>", "url": @}]}', "pages[0].url"),
        ("/api/clusters/c1/split", '{"page_id": @}', "page_id"),
        ("/api/clusters/c1/merge", '{"other_cluster_id": "c2", "note": @}', "note"),
        ("/api/pairs/not-duplicates", '{"page_a": "a", "page_b": @}', "page_b"),
        ("/api/clusters/c1/representative", '{"page_id": "p", "note": @}', "note"),
        ("/api/jobs/reindex", '{"source": @}', "source"),
        ("/api/pages", "{@: 1}", "the name of field a\\ud800b"),
    ],
)
def test_a_lone_surrogate_in_a_json_body_is_a_400_naming_the_field(app, path, body, field):
    res = app.test_client().post(path, data=body.replace("@", LONE).encode(), content_type="application/json",
                                 headers=app.config["TEST_AUTH"])  # fmt: skip
    assert res.status_code == 400, res.get_data(as_text=True)[:300]
    error = res.get_json()["error"]
    assert field in error and "lone surrogate" in error


def test_a_story_with_dates_far_apart_has_a_bounded_timeline_and_a_note(app, es, settings):
    text = "\n".join(story(330, 16))
    dates = {"early": "0001-01-01", "real": "2024-03-05T10:00:00Z", "real2": "2024-03-06T10:00:00Z",
             "future": "9999-06-01"}  # fmt: skip
    signed = [sign_text(text,
                        TextMeta(title="Far apart", url=f"https://{pid}.test/x", page_id=pid, site=f"{pid}.test",
                                 published=when),
                        settings=settings) for pid, when in dates.items()]  # fmt: skip
    outcomes = ingest(signed, client=es, settings=settings)
    (cluster_id,) = {o.cluster_id for o in outcomes}
    es.indices.refresh(index=settings.index)
    client = app.test_client()
    data = client.get(f"/api/stories/{cluster_id}").get_json()
    assert len(data["timeline"]) <= 40 and sum(b["count"] for b in data["timeline"]) == 2
    assert (data["implausible_dates"], data["undated"]) == (2, 2)
    assert data["first_time"].startswith("2024-03-05") and data["latest_time"].startswith("2024-03-06")
    assert data["first"]["id"] == "real"  # the first publisher has a believable date
    page = client.get(f"/stories/{cluster_id}")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    assert 'data-testid="implausible-dates"' in html and "before 1990 or in the future" in html
    assert len(html) < 200_000  # the audit's page was 1 MB of empty bars


def test_timeline_bins_are_bounded_however_far_apart_the_times():
    import datetime as dt

    from newsfold.plugin.search.page_dates import plausible_times
    from newsfold.plugin.search.story_versions import timeline_bins

    far = [int(dt.datetime(y, 1, 1, tzinfo=dt.UTC).timestamp() * 1000) for y in (1, 1991, 9999)]
    name, bins = timeline_bins(far)
    assert len(bins) <= 40 and sum(b["count"] for b in bins) == 3 and name.endswith("d")
    now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert plausible_times(far, now=now) == [far[1]]
    tomorrow = int((now + dt.timedelta(hours=23)).timestamp() * 1000)
    assert plausible_times([tomorrow], now=now) == [tomorrow]


def test_a_page_dated_in_the_far_future_does_not_empty_the_top_story_windows(app, es, settings):
    from tests.story_corpus import ingest_story_corpus

    ingest_story_corpus(es, settings)
    future = sign_text("\n".join(story(331, 16)),
                       TextMeta(title="From the future", url="https://f.test/x", page_id="future", site="f.test",
                                published="9999-01-01"),
                       settings=settings)  # fmt: skip
    ingest([future], client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    body = app.test_client().get("/api/stories?window=24h").get_json()
    assert body["newest"] == "2015-03-10T12:00:00Z"  # the window counts back from the newest believable date
    assert [s["id"] for s in body["results"]][:3] == ["museum-a", "ferry-d", "single"]  # each story by its face


def _feed_links(res) -> list[str]:
    feed = feedparser.parse(res.get_data())
    assert not feed.bozo, feed.get("bozo_exception")
    return [link.href for link in feed.feed.links] + [e.link for e in feed.entries] + [feed.feed.id]


@pytest.mark.parametrize("host", ["evil.test", "evil.test:8443", "localhost@evil.test"])
def test_feed_links_never_follow_the_host_header(app, es, settings, host):
    """Issue 32, item 10: a cache or feed reader handed ``Host: evil.test`` must not get links to evil.test."""
    text = "\n".join(story(331, 16))
    ingest([sign_text(text,
                      TextMeta(title="Feed story", url="https://a.test/x", page_id="fs", site="a.test",
                               published="2024-03-05T10:00:00Z"),
                      settings=settings)], client=es, settings=settings)  # fmt: skip
    es.indices.refresh(index=settings.index)
    res = app.test_client().get("/feed?window=all", headers={"Host": host})
    links = _feed_links(res)
    assert "/stories/fs" in " ".join(links) and not any("evil" in link for link in links)
    assert all(link.startswith(("/", "urn:newsfold:")) for link in links), links  # relative: resolved by the reader
    based = create_app({"TESTING": True}, settings=settings, web=WebSettings(base_url="https://news.example.org/"))
    try:
        links = _feed_links(based.test_client().get("/feed?window=all", headers={"Host": host}))
    finally:
        get_resources(based).close()
    assert "https://news.example.org/stories/fs" in links
    assert all(link.startswith(("https://news.example.org/", "urn:newsfold:")) for link in links), links


@pytest.mark.parametrize("value", ["news.example.org", "javascript:alert(1)", "https://u:p@x.test", "https://x.test/?a=1",
                                   "https://x.test/#f", "ftp://x.test", "https:///path"])  # fmt: skip
def test_a_base_url_that_is_not_a_site_address_stops_the_start(value):
    with pytest.raises(ValueError, match="NEWSFOLD_BASE_URL"):
        WebSettings.from_env({"NEWSFOLD_BASE_URL": value})


@pytest.mark.parametrize(
    ("query", "named"),
    [("/api/stories?window=", "window is empty"), ("/api/stories?sort=", "sort is empty"),
     ("/api/stories?page=", "page is empty"), ("/api/search?to=", "to is empty"),
     ("/api/search?page=%20", "page is empty"),
     ("/api/stories?window=7d&window=all", "window is given 2 times"), ("/api/jobs?limit=", "limit is empty"),
     ("/api/search?sort=date&sort=relevance", "sort is given 2 times"),
     # found by schemathesis (tests/web/api/test_schema_fuzz.py): the flags' schema says "0" or "1"
     ("/api/search?originals=", "originals is empty"), ("/api/search?nowire=&q=a", "nowire is empty"),
     ("/api/search?nowire=1&nowire=0", "nowire is given 2 times")],
)  # fmt: skip
def test_an_api_parameter_given_empty_or_twice_is_a_400_naming_it(app, query, named):
    """Issue 32, item 13: not a 200 that quietly used the default."""
    res = app.test_client().get(query, headers=app.config["TEST_AUTH"])
    assert res.status_code == 400, (res.status_code, res.get_data(as_text=True)[:200])
    assert res.get_json()["error"].startswith(named)
    assert app.test_client().get("/?window=&sort=&q=").status_code == 200  # a form's empty fields: the defaults
