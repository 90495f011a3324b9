"""Wire credits and pictures read at extraction, story origins kept on every page, and the provenance filters."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest

from newsfold.plugin import ingest
from newsfold.plugin.extract.article import Article, extract_article
from newsfold.plugin.extract.credits import agency, credited, text_credit
from newsfold.plugin.fold.document import fold_of
from newsfold.plugin.fold.provenance import refresh_origins
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.web.config import WebSettings
from tests.pages import story

BODY = story(700, sentences=12)


def html_page(paras, *, head="", byline="", title="A headline for the test page") -> str:
    body = "\n".join(f"<p>{p}</p>" for p in paras)
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>{head}</head>"
            f"<body><nav><a href='/'>Home</a></nav><main><article><h1>{title}</h1>{byline}{body}</article></main>"
            f"<footer><p>Copyright the site. All rights reserved.</p></footer></body></html>")  # fmt: skip


def extracted(paras, **kwargs) -> Article:
    article = extract_article(html_page(paras, **kwargs), url="https://news.example/2025/story")
    assert isinstance(article, Article), article
    return article


def jsonld(obj) -> str:
    return f'<script type="application/ld+json">{json.dumps(obj)}</script>'


@pytest.mark.parametrize(
    ("paras", "kwargs", "wire", "where"),
    [
        ([f"LONDON (Reuters) - {BODY[0]}", *BODY[1:]], {}, "Reuters", "dateline"),
        ([f"WASHINGTON, March 3 (AP) — {BODY[0]}", *BODY[1:]], {}, "AP", "dateline"),
        ([f"HARBOURTON, March 3 (Northwind Wire) — {BODY[0]}", *BODY[1:]], {}, "Northwind Wire", "dateline"),
        (BODY, {"byline": "<p class='byline'>By Jane Doe, Associated Press</p>"}, "AP", "byline"),
        (BODY, {"byline": "<p class='byline'>By Cormac Wainwright, PA Media</p>"}, "PA", "byline"),
        (BODY, {"head": jsonld({"@type": "NewsArticle", "author": {"@type": "Organization",
                                                                    "name": "Agence France-Presse"}})},
         "AFP", "json-ld author"),
        (BODY, {"head": jsonld({"@graph": [{"@type": "NewsArticle", "sourceOrganization": {"name": "dpa"}}]})},
         "dpa", "json-ld sourceOrganization"),
        (BODY, {"head": "<meta name='author' content='PA Media'>"}, "PA", "meta"),
        ([*BODY, "This is an abridged version of a Northwind Wire report."], {}, "Northwind Wire", "credit line"),
        ([*BODY, "— Reuters"], {}, "Reuters", "credit line"),
        ([*BODY, "Copyright 2025 The Associated Press. All rights reserved."], {}, "AP", "credit line"),
        ([*BODY[:-1], f"{BODY[-1]} PTI"], {}, "PTI", "credit line"),
        (BODY, {"byline": "<p class='byline'>Tom Davies Associated Press Published 11:34 PM</p>"}, "AP", "byline"),
    ],
)  # fmt: skip
def test_wire_credits_in_english(paras, kwargs, wire, where):
    article = extracted(paras, **kwargs)
    assert (article.wire, article.wire_by) == (wire, where)


def test_wire_credits_in_chinese():
    zh = ["白沙江水位持续上涨，长坪乡组织群众连夜转移，目前已有三百余人安置到临时安置点。" * 2,
          "当地气象部门预计，未来三天仍有强降雨，防汛部门已启动应急响应，各乡镇加强巡查。" * 2]  # fmt: skip
    dateline = extracted([f"新华社北京3月5日电（记者张三）{zh[0]}", zh[1]])
    assert (dateline.wire, dateline.wire_by) == ("Xinhua", "dateline")
    made_up = extracted([f"北风通讯社临江3月5日电（记者李四）{zh[0]}", zh[1]])
    assert made_up.wire == "北风通讯社"
    source = extracted([*zh, "（来源：中新社）"])
    assert (source.wire, source.wire_by) == ("China News Service", "credit line")
    byline = extracted(zh, byline="<p class='author'>路透社记者 王五</p>")
    assert byline.wire == "Reuters"


@pytest.mark.parametrize(
    ("paras", "kwargs"),
    [
        # an agency named inside the text is not a credit
        ([f"Reuters reported that {BODY[0]}", *BODY[1:]], {}),
        ([*BODY[:-1], f"{BODY[-1]} said the AP and Reuters."], {}),
        ([*BODY, "According to Xinhua, the plan was approved."], {}),
        ([*BODY, "A view of the harbour (AP Photo/Jane Doe)"], {}),
        ([*BODY, "Photo: Reuters"], {}),
        ([*BODY[:-1], f"{BODY[-1]} according to the Associated Press."], {}),
        (BODY, {"byline": "<p class='byline'>Thomson Reuters Tax & Accounting</p>"}),
        # a dateline-like opening naming no agency
        ([f"Mr Smith (left) - {BODY[0]}", *BODY[1:]], {}),
        ([f"LONDON (left) - {BODY[0]}", *BODY[1:]], {}),
        ([f"GREENVILLE (Staff) — {BODY[0]}", *BODY[1:]], {}),
        ([f"HONOLULU, Hawaii (NewsExample) - {BODY[0]}", *BODY[1:]], {}),  # the site's own name (news.example)
        # a picture's credit
        (BODY, {"byline": "<figure><img src='/a.jpg'><span class='author'>Reuters</span></figure>"}),
        (BODY, {"byline": "<p class='image-credit byline'>Bloomberg | Getty Images</p>"}),
        (BODY, {"byline": "<p class='byline'>Photo: Damian Dovarganes, AP</p>"}),
        (BODY, {"byline": "<span class='caption-source'><span class='caption'>The logo.</span>"
                          "<span class='source'><span>Reuters</span></span></span>"}),
        # the site's own name as publisher, a person as author
        (BODY, {"head": jsonld({"@type": "NewsArticle", "author": {"name": "Jane Doe"},
                                "publisher": {"name": "Riverside Post"}})}),
        (BODY, {"byline": "<p class='byline'>By Jane Doe and John Roe</p>"}),
        (BODY, {"head": "<script type='application/ld+json'>{not json</script>"}),
    ],
)  # fmt: skip
def test_no_wire_without_a_whole_credit(paras, kwargs):
    assert extracted(paras, **kwargs).wire is None


def test_credits_are_whole_names():
    assert agency("The Associated Press") == "AP" and agency("associated press") == "AP"
    assert agency("Associated Press reporters") is None
    assert credited("By Jane Doe, Reuters") == "Reuters"
    assert credited("Jane Doe | Valley Wire") == "Valley Wire"
    assert credited("Reuters reported that the mill will close") is None
    assert credited("x" * 500) is None
    assert text_credit("") is None


@pytest.mark.parametrize(
    ("head", "byline", "expected"),
    [
        ("<meta property='og:image' content='/media/a.jpg'>", "", "https://news.example/media/a.jpg"),
        ("<meta property='og:image' content='//cdn.example/a.jpg'>", "", "https://cdn.example/a.jpg"),
        (jsonld({"@type": "NewsArticle", "image": {"@type": "ImageObject", "url": "https://img.example/b.png"}}), "",
         "https://img.example/b.png"),
        (jsonld({"@type": "NewsArticle", "image": ["https://img.example/c.png", "https://img.example/d.png"]}), "",
         "https://img.example/c.png"),
        ("", "<figure><img src='pics/e.jpg' alt=''><figcaption>x</figcaption></figure>",
         "https://news.example/2025/pics/e.jpg"),
        ("<meta property='og:image' content='javascript:alert(1)'>", "", None),
        ("<meta property='og:image' content='data:image/png;base64,AAAA'>", "", None),
        ("<meta property='og:image' content='https://a.example/x\" onerror=\"y.jpg'>", "", None),
        ("", "<figure><img src='/t.gif' width='1' height='1'></figure>", None),
        ("", "", None),
    ],
)  # fmt: skip
def test_the_picture_is_an_absolute_http_url(head, byline, expected):
    assert extracted(BODY, head=head, byline=byline).image == expected


def test_a_relative_picture_without_a_page_url_is_dropped():
    page = html_page(BODY, head="<meta property='og:image' content='/media/a.jpg'>")
    assert extract_article(page).image is None


# ---------------------------------------------------------------- origins on a real index
def _signed(settings, pid, site, published, paras, *, head="", image=None):
    head += f"<meta property='og:image' content='{image}'>" if image else ""
    page = html_page(paras, head=head, title=f"{pid} headline - {site}")
    signed = sign_page(Page(html=page, id=pid, url=f"https://{site}/{pid}", site=site, published=published),
                       settings)  # fmt: skip
    assert not hasattr(signed, "reason"), signed
    return signed


def provenance_pages(settings) -> list:
    """Seven stories: a.test originates four (one runs on b.test too), b.test two, one is a wire story a.test ran
    first (AFP credited in its dateline) and b.test carried later without a credit."""
    pages = []
    for n in range(4):
        paras = story(720 + n, sentences=14)
        pages.append(_signed(settings, f"a-own{n}", "a.test", f"2025-04-0{n + 1}T08:00:00Z", paras,
                             image=f"https://img.example/{n}.jpg"))  # fmt: skip
        if n == 0:
            pages.append(_signed(settings, "b-copy0", "b.test", "2025-04-01T12:00:00Z", paras))
    for n in range(2):
        pages.append(_signed(settings, f"b-own{n}", "b.test", f"2025-04-0{n + 1}T07:00:00Z", story(730 + n)))
    wire = story(740, sentences=14)
    pages.append(_signed(settings, "a-wire", "a.test", "2025-04-05T05:00:00Z", [f"ROME (AFP) - {wire[0]}", *wire[1:]]))
    pages.append(_signed(settings, "b-wire", "b.test", "2025-04-05T06:00:00Z", wire))
    return pages


def _origins(es, settings) -> dict[str, tuple]:
    es.indices.refresh(index=settings.index)
    hits = es.search(index=settings.index, size=100, query={"match_all": {}})["hits"]["hits"]
    out = {}
    for h in hits:
        f = fold_of(h["_source"])
        out[h["_id"]] = (f.get("origin_site"), f.get("origin_wire"), f.get("origin_id"))
    return out


def test_the_origin_is_kept_on_every_page_and_moves_with_an_earlier_copy(es, settings):
    own, wire = story(710, sentences=14), story(711, sentences=14)
    ingest([_signed(settings, "own-b", "b.test", "2025-03-02T10:00:00Z", own),
            _signed(settings, "own-c", "c.test", "2025-03-02T12:00:00Z", own),
            _signed(settings, "wire-a", "a.test", "2025-03-01T08:00:00Z", wire),
            _signed(settings, "wire-b", "b.test", "2025-03-01T09:00:00Z", [f"LONDON (Reuters) - {wire[0]}", *wire[1:]]),
            _signed(settings, "wire-c", "c.test", "2025-03-01T10:00:00Z", [f"PARIS (Reuters) - {wire[0]}", *wire[1:]])],
           client=es, settings=settings)  # fmt: skip
    found = _origins(es, settings)
    assert found["own-b"] == found["own-c"] == ("b.test", None, "own-b")
    # the wire most versions credit; its earliest crediting version is the origin version
    assert found["wire-a"] == found["wire-b"] == found["wire-c"] == (None, "Reuters", "wire-b")
    # an earlier copy arrives later: every page of the story now names it
    ingest([_signed(settings, "own-a", "a.test", "2025-03-02T08:00:00Z", own)], client=es, settings=settings)
    found = _origins(es, settings)
    assert {found[p] for p in ("own-a", "own-b", "own-c")} == {("a.test", None, "own-a")}
    # nothing to do when every page holds its story's origin
    assert refresh_origins([fold_of(es.get(index=settings.index, id="own-a")["_source"])["cluster_id"]],
                           client=es, settings=settings) == 0  # fmt: skip


def test_a_page_is_written_once_with_its_story_origin(es, settings):
    """The batch's write carries each page's origin: a new story's (decided from the batch's pages, a wire story
    included) and the stored one of a story a page joins. No page is updated a second time, for its origin or
    for its story's commit (the commit writes the story's mark in the founding index, issue 36)."""
    pages = provenance_pages(settings)
    wire = story(712, sentences=14)
    pages += [_signed(settings, f"wire-{s[0]}", s, f"2025-03-01T0{n + 8}:00:00Z",
                      [f"LONDON (Reuters) - {wire[0]}", *wire[1:]] if n else wire)
              for n, s in enumerate(("a.test", "b.test", "c.test"))]  # fmt: skip
    first = ingest(pages, client=es, settings=settings)
    late = ingest([_signed(settings, "c-copy0", "c.test", "2025-04-02T12:00:00Z", story(720, sentences=14))],
                  client=es, settings=settings)  # fmt: skip
    assert late[0].status == "duplicate"
    found = _origins(es, settings)
    assert found["wire-a"] == found["wire-b"] == found["wire-c"] == (None, "Reuters", "wire-b")
    assert found["a-wire"] == found["b-wire"] == (None, "AFP", "a-wire")
    assert found["c-copy0"] == found["b-copy0"] == ("a.test", None, "a-own0")
    versions = {o.page_id: es.get(index=settings.index, id=o.page_id)["_version"] for o in first + late}
    assert versions == {o.page_id: 1 for o in first + late}  # before: 2 for a founder
    clusters = sorted({o.cluster_id for o in first + late})
    assert refresh_origins(clusters, client=es, settings=settings) == 0  # what the index decides, already held


@pytest.fixture
def corpus(es, settings):
    """Seven stories: a.test originates four (one runs on b.test too), b.test two, one is a wire story a.test ran."""
    pages = provenance_pages(settings)
    outcomes = ingest(pages, client=es, settings=settings)
    es.indices.refresh(index=settings.index)
    return {o.page_id: o.cluster_id for o in outcomes}


@pytest.fixture
def client(web_app, settings, corpus):
    return web_app(settings, web=WebSettings(page_size=2)).test_client()


def _all_pages(client, url):
    seen, page = [], 1
    while True:
        res = client.get(f"{url}&page={page}")
        assert res.status_code == 200, res.get_json()
        body = res.get_json()
        seen += [r["cluster_id"] for r in body["results"]]
        if page >= body["total_pages"]:
            return seen, body
        page += 1


@pytest.mark.parametrize("path", ["/api/search?sort=date", "/api/stories?window=all"])
def test_originals_keep_a_sites_own_stories_across_pages(client, corpus, path):
    mine = {corpus[f"a-own{n}"] for n in range(4)}
    got, body = _all_pages(client, f"{path}&site=a.test&originals=1")
    assert sorted(got) == sorted(mine) and len(got) == len(set(got))  # every story once, over two pages
    assert body["stories"] == 4 and body["originals"] is True
    got, _ = _all_pages(client, f"{path}&site=b.test&originals=1")
    assert sorted(got) == sorted({corpus["b-own0"], corpus["b-own1"]})  # not b-copy0's story, not the wire story


@pytest.mark.parametrize("path", ["/api/search?sort=date", "/api/stories?window=all"])
def test_nowire_drops_wire_stories(client, corpus, path):
    everything, _ = _all_pages(client, path)
    assert corpus["a-wire"] in everything
    got, body = _all_pages(client, f"{path}&nowire=1")
    assert sorted(got) == sorted(set(everything) - {corpus["a-wire"]}) and body["nowire"] is True


@pytest.mark.parametrize("path", ["/api/search?sort=date", "/api/stories?window=all"])
def test_originals_without_a_site_keep_the_stories_some_site_originated(client, corpus, path):
    """Issue 39, item 5: a 400 for a value its schema allows (schemathesis); the stories no wire originated."""
    everything, _ = _all_pages(client, path)
    got, body = _all_pages(client, f"{path}&originals=1")
    assert sorted(got) == sorted(set(everything) - {corpus["a-wire"]}) and body["originals"] is True


@pytest.mark.parametrize(
    "query", ["originals=yes&site=a.test", "originals=2", "nowire=2", "nowire=%00"]
)  # fmt: skip
@pytest.mark.parametrize("path", ["/api/search?sort=date&", "/api/stories?", "/feed?"])
def test_bad_provenance_flags_are_400(client, path, query):
    res = client.get(path + query)
    assert res.status_code == 400 and ("originals" in res.get_json()["error"] or "nowire" in res.get_json()["error"])


def test_results_carry_headline_snippet_image_wire_and_origin(client, corpus):
    results = [
        r
        for page in (1, 2)
        for r in client.get(f"/api/stories?window=all&site=a.test&originals=1&page={page}").get_json()["results"]
    ]
    first = next(r for r in results if r["cluster_id"] == corpus["a-own0"])
    assert first["title"] == "a-own0 headline - a.test" and first["headline"] == "a-own0 headline"
    assert first["image"] == "https://img.example/0.jpg" and first["wire"] is None
    assert first["origin"] == {"wire": None, "site": "a.test", "id": "a-own0"}
    assert 40 < len(first["snippet"]) <= 300 and first["snippet"].endswith(".")
    search = client.get("/api/search?q=" + quote(story(740)[1].split()[0]) + "&nowire=0").get_json()
    assert all(r["snippet"] and "<mark>" not in r["snippet"] for r in search["results"])
    wire = client.get(f"/api/stories/{quote(corpus['a-wire'])}").get_json()
    assert wire["origin"]["wire"] == "AFP" and wire["origin"]["id"] == "a-wire"
    assert wire["origin"]["evidence"] == "credited by 1 of 2 sites"
    assert {v["id"]: v["wire"] for v in wire["versions"]} == {"a-wire": "AFP", "b-wire": None}
    own = client.get(f"/api/stories/{quote(corpus['a-own0'])}").get_json()
    assert own["origin"]["site"] == "a.test" and own["origin"]["evidence"] == "earliest by 4 h"
    assert own["headline"] == "a-own0 headline"


def test_story_page_shows_the_wire_origin_and_thumbnails_obey_the_setting(client, corpus, web_app, settings):
    page = client.get(f"/stories/{quote(corpus['a-wire'])}").get_data(as_text=True)
    assert 'data-testid="wire-badge"' in page and ">AFP<" in page and "credited by 1 of 2 sites" in page
    top = client.get("/?window=all&site=a.test&originals=1")
    html = top.get_data(as_text=True)
    assert re.search(r'src="https://img\.example/\d\.jpg"', html) and 'loading="lazy"' in html
    assert 'referrerpolicy="no-referrer"' in html
    assert "img-src 'self' data: https:;" in top.headers["Content-Security-Policy"]
    off = web_app(settings, web=WebSettings(page_size=2, images=False)).test_client().get("/?window=all")
    assert 'data-testid="thumbnail"' not in off.get_data(as_text=True)
    assert "img-src 'self' data:;" in off.headers["Content-Security-Policy"]


def test_feed_entries_have_headline_and_snippet(client, corpus):
    import feedparser

    feed = feedparser.parse(client.get("/feed?window=all&site=a.test&originals=1").get_data())
    assert len(feed.entries) == 2  # the first page
    assert all(" headline" in e.title and " - a.test" not in e.title for e in feed.entries)
    assert all(e.summary.endswith("from a.test)") and len(e.summary) > 60 for e in feed.entries)


def test_syndication_figures_per_site(web_app, settings, corpus):
    client = web_app(settings, web=WebSettings(public_syndication=True)).test_client()  # open to all: a setting
    body = client.get("/api/syndication?window=all").get_json()
    rows = {r["site"]: r for r in body["sites"]}
    a, b = rows["a.test"], rows["b.test"]
    # a.test: four stories of its own, and the AFP story it ran (a copy, crediting the wire)
    assert (a["pages"], a["copies"], a["own_stories"], a["carried_stories"]) == (5, 1, 4, 1)
    assert a["copy_share"] == pytest.approx(0.2) and a["wires"] == [{"wire": "AFP", "pages": 1, "share": 0.2}]
    # b.test: two of its own; a copy of a.test's story and the wire story, which it ran later and uncredited
    assert (b["pages"], b["copies"], b["own_stories"], b["carried_stories"]) == (4, 2, 2, 2)
    assert b["wires"] == []
    assert client.get("/api/syndication?window=1y").status_code == 400
    assert client.get("/api/syndication?window=24h").get_json()["window"] == "24h"


def test_corrections_decide_the_origin_again(es, settings, corpus):
    from newsfold.plugin.edit.corrections import merge_clusters, split_page

    split_page("a-own0", user="editor", client=es, settings=settings)  # the origin leaves its story
    found = _origins(es, settings)
    assert found["b-copy0"] == ("b.test", None, "b-copy0") and found["a-own0"] == ("a.test", None, "a-own0")
    merge_clusters(corpus["b-own0"], corpus["a-wire"], user="editor", client=es, settings=settings)
    found = _origins(es, settings)
    # one site's credit never overrides an earlier original that credits no one
    assert found["b-own0"] == found["a-wire"] == ("b.test", None, "b-own0")


def test_a_versions_page_and_api_show_its_headline(client, corpus):
    body = client.get(f"/api/stories/{quote(corpus['a-own0'])}/versions/b-copy0").get_json()
    assert (body["title"], body["headline"]) == ("b-copy0 headline - b.test", "b-copy0 headline")
    page = client.get(f"/stories/{quote(corpus['a-own0'])}/versions/b-copy0").get_data(as_text=True)
    assert 'data-testid="version-title">b-copy0 headline<' in page
    members = client.get(f"/api/clusters/{quote(corpus['a-own0'])}").get_json()["members"]
    assert {m["headline"] for m in members} == {"a-own0 headline", "b-copy0 headline"}
