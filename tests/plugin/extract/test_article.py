"""Unit tests of the extraction steps (whole pages in, articles out: tests/plugin/extract/test_article_cases.py)."""

from __future__ import annotations

import gzip

import pytest
from lxml import html as lxml_html
from trafilatura.utils import load_html

from newsfold.plugin.extract.article import Rejection, extract_article
from newsfold.plugin.extract.blocks import (
    drop_headline,
    drop_layout_rows,
    needs_second_opinion,
    prose_bytes,
    recover_dropped_blocks,
    text_runs,
)
from newsfold.plugin.extract.cleanup import clean_tree, drop_furniture, unwrap_page_wrappers
from newsfold.plugin.extract.decode import decode_html, parse_html
from newsfold.plugin.extract.meta import published_date
from tests.pages import story


def _paras(texts: list[str]) -> str:
    return "".join(f"<p>{t}</p>" for t in texts)


def _page(body: str, *, title: str = "Harbour works") -> str:
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title} | example.test</title></head>
<body><nav><a href="/">Home</a> <a href="/world">World</a> <a href="/sport">Sport</a></nav>
<main><article><h1>{title}</h1>{body}</article></main>
<footer><p>Copyright example.test. All rights reserved.</p></footer></body></html>"""


# ------------------------------------------------------------------ decoding and parsing
def test_oversized_page_is_rejected():
    big = b"<html><body>" + b"<p>word word word</p>" * 60_000 + b"</body></html>"
    result = extract_article(big, max_bytes=1024 * 1024)
    assert isinstance(result, Rejection) and result.reason == "too_large"
    result = extract_article(gzip.compress(big), max_bytes=1024 * 1024)
    assert isinstance(result, Rejection) and result.reason == "too_large"


def test_misdeclared_and_legacy_encodings_decode():
    text = "Café crème brûlée — naïve façade"
    utf8_declared_latin1 = f'<html><head><meta charset="iso-8859-1"></head><body><p>{text}</p></body></html>'
    assert text in decode_html(utf8_declared_latin1.encode("utf-8"), max_bytes=10**6)
    zh = "北京今天发布了新的城市规划方案。"
    gb = f'<html><head><meta charset="gb2312"></head><body><p>{zh}</p></body></html>'.encode("gb18030")
    assert zh in decode_html(gb, max_bytes=10**6)
    latin = f"<html><body><p>{text}</p></body></html>".encode("cp1252")
    assert "Café" in decode_html(latin, max_bytes=10**6)


def test_content_after_the_root_joins_the_body_in_order():
    tree = parse_html("<html><body><p>first</p></body></html><div><p>second</p></div><p>third</p></html>")
    assert [p.text for p in tree.find("body").iter("p")] == ["first", "second", "third"]
    assert all(len(stray) == 0 for stray in tree.itersiblings())  # emptied; lxml cannot drop a root sibling


def test_forbidden_characters_are_dropped_wherever_they_are():
    filler = "<p>" + "word " * 2000 + "</p>"
    tree = parse_html(f"<html><body><p>a\x0bb\ufffec</p>{filler}<p>d\x1fe\uffff</p></body></html>")
    texts = [p.text for p in tree.iter("p")]
    assert texts[0] == "abc" and texts[-1] == "de"


# ------------------------------------------------------------------ the tree before trafilatura
def test_furniture_goes_with_its_subtree_and_the_text_after_it_stays():
    tree = lxml_html.document_fromstring(
        '<html><head><title>T</title><meta name="x" content="y">'
        '<script type="application/ld+json">{"@type": "NewsArticle"}</script></head><body>'
        '<nav><a href="/">Home</a></nav><p>One<script>x()</script> two <button>Share<svg><path/></svg></button>'
        "three<style>p{}</style></p><aside>More</aside><footer>Copyright</footer></body></html>"
    )
    assert drop_furniture(tree) == 8  # meta, nav, script, button (with its svg), style, aside, footer
    assert " ".join(tree.find("body").itertext()) == "One two three"
    assert tree.find("head/title") is not None and tree.find(".//script[@type='application/ld+json']") is not None


def test_unwrap_keeps_small_furniture():
    paras = story(5)
    tree = lxml_html.document_fromstring(
        f'<html><body><header class="site">Site name and menu</header><aside class="note">Small note</aside>'
        f'<button class="menu-toggle"><div class="page">{_paras(paras)}</div></button></body></html>'
    )
    assert unwrap_page_wrappers(tree) == 1
    assert tree.find(".//header") is not None and tree.find(".//aside") is not None
    assert tree.find(".//button") is None
    assert tree.xpath("//div[not(@class)]/div[@class='page']")


def test_related_heading_with_a_full_width_colon_is_removed():
    paras = story(6)
    links = "".join(f'<li><a href="/n{i}">另一条关于港口的新闻标题第{i}条</a></li>' for i in range(4))
    tree = lxml_html.document_fromstring(
        f"<html><body><article>{_paras(paras)}<div><h3>相关报道：</h3><ul>{links}</ul></div></article></body></html>"
    )
    assert clean_tree(tree) == 1
    text = " ".join(tree.itertext())
    assert "另一条关于港口的新闻" not in text and paras[-1] in text


def test_headline_line_is_dropped_only_when_it_repeats_the_title():
    tree = lxml_html.document_fromstring("<html><body><h1>Storm closes the harbour</h1><p>x</p></body></html>")
    assert drop_headline("Storm closes the harbour\nThe harbour closed.", tree, "") == "The harbour closed."
    assert drop_headline("STORM CLOSES HARBOUR!\nBody.", tree, "Storm closes harbour") == "Body."
    assert drop_headline("Storm closes the harbour", tree, "") == "Storm closes the harbour"
    assert drop_headline("The harbour closed.\nMore.", tree, "Storm") == "The harbour closed.\nMore."


# ------------------------------------------------------------------ the text blocks after trafilatura
def test_recovery_adds_article_blocks_and_skips_furniture():
    paras = story(6)
    teasers = "".join(f'<li><a href="/s{i}">{p}</a></li>' for i, p in enumerate(story(7)[:3]))
    page = f"""<html><body><div id="page"><div class="story">
<p>{paras[0]}</p><p>{paras[1]}</p><p>{paras[2]}</p>
<div class="inline-box"><h3>What the survey found</h3><ul><li>{paras[3]}</li></ul></div>
<p>{paras[4]}</p>
<div class="author-box"><p>Ann Example writes about harbours and has done so for twenty years.</p></div>
<div class="share-tools"><p>Share this story with your friends and family today</p></div>
<ul class="more">{teasers}</ul>
<ul><li><a href="/t">Fares</a> <span>The ferry company said fares on the island routes would rise...</span></li></ul>
<pre>for pier in piers: inspect(pier)  # nightly inspection job</pre>
<figure><img src="pier.jpg"><p>The north pier at low tide, photographed from the lighthouse</p></figure>
<form action="/s"><p>Get the morning briefing in your inbox every day</p><input name="e"></form>
<div class="comment-list"><p>Great article, I walked along the pier last summer with my dog.</p></div>
</div></div><div class="sidebar"><p>{story(8)[0]}</p></div></body></html>"""
    tree = lxml_html.document_fromstring(page)
    kept = "\n".join([paras[0], paras[1], paras[2], paras[4]])

    text = recover_dropped_blocks(tree, kept)

    assert text.startswith(kept)
    assert "What the survey found" in text and paras[3] in text  # subheading and list item inside the container
    for furniture in ("twenty years", "Share this story", "nightly inspection", "low tide", "briefing", "my dog"):
        assert furniture not in text
    assert story(7)[0][:40] not in text  # link-dense teaser list
    assert "ferry company" not in text  # a teaser's cut-off lede
    assert story(8)[0][:40] not in text  # outside the container
    assert text.count(paras[3]) == 1


def test_recovery_leaves_text_alone_when_nothing_was_dropped():
    paras = story(4)
    tree = lxml_html.document_fromstring(f"<html><body><article>{_paras(paras)}</article></body></html>")
    text = "\n".join(paras)
    assert recover_dropped_blocks(tree, text) == text
    assert recover_dropped_blocks(tree, "") == ""


# ------------------------------------------------------------------ fast mode first, full cascade on doubt
def test_second_opinion_only_when_the_fast_result_covers_little_of_the_prose_or_is_mostly_not_prose():
    paras = story(21)
    menu = "".join(
        f'<li><a href="/s{i}">Section number {i} of the site menu, with a long label</a></li>' for i in range(200)
    )
    tree = load_html(_page(f"<ul>{menu}</ul>{_paras(paras)}"))
    runs = text_runs(tree)
    prose = prose_bytes(runs)
    article = "\n".join(paras)
    assert not needs_second_opinion(article, prose)  # the whole article: no doubt
    assert needs_second_opinion(paras[0][:60], prose)  # a lede only
    assert needs_second_opinion(article * 4, prose)  # far more than the page's prose: not the article
    # the menu's link text (over four times the article) is not prose, or the article would look like under a quarter
    assert sum(r[2] for r in runs) > 4 * len(article)


def test_a_page_without_body_gets_text_runs():
    paras = story(22)
    tree = lxml_html.document_fromstring(f'<text id="x">{_paras(paras)}</text>')
    if tree.find(".//body") is None:
        assert text_runs(tree)
    else:  # lxml added a body: the runs come from it
        assert [" ".join(r[1]) for r in text_runs(tree)] == paras


def test_published_date_prefers_meta_tags_in_their_order_then_time_then_json_ld():
    head = '<meta name="date" content="2020-01-03"><meta property="article:published_time" content="2020-01-02T10:00">'
    html = f"<html><head>{head}</head><body><time datetime='2020-01-05'>x</time><p>Text.</p></body></html>"
    assert published_date(load_html(html), html) == "2020-01-02T10:00:00Z"  # the time of day is kept (UTC)
    html = '<html><head></head><body><time datetime="2020-01-05">x</time><p>Text.</p></body></html>'
    assert published_date(load_html(html), html) == "2020-01-05"
    html = '<html><head><script>{"datePublished": "2019-12-31"}</script></head><body><p>Text.</p></body></html>'
    assert published_date(load_html(html), html) == "2019-12-31"


@pytest.mark.parametrize(
    ("value", "expected"),
    [("2025-03-01T23:00:00+05:30", "2025-03-01T17:30:00Z"), ("2025-03-01 23:05", "2025-03-01T23:05:00Z"),
     ("2025-03-01T23:00:00.123-0200", "2025-03-02T01:00:00Z"), ("2025-03-01", "2025-03-01")],
)  # fmt: skip
def test_published_date_keeps_the_time_of_day_in_utc(value, expected):
    html = f'<html><head><meta property="article:published_time" content="{value}"></head><body></body></html>'
    assert published_date(load_html(html), html) == expected


_CJK_ARTICLE = "本报讯 港口扩建工程今天上午正式开工，计划新建四个深水泊位。工程总投资约四十亿元。"


def test_rows_around_a_cjk_article_in_a_layout_table_are_dropped_unless_they_hold_a_sentence():
    said = "| 记者表示，监测结果将定期公布。 |"
    rows = ["| 首页 | 新闻 | 财经 |", f"| {_CJK_ARTICLE} |", "| 相关链接 | 热点专题 |", said]
    text = "\n".join(rows)
    assert drop_layout_rows(text) == f"| {_CJK_ARTICLE} |\n{said}"


def test_layout_rows_stay_when_the_article_is_not_a_cjk_table_row():
    outside = f"| 首页 | 新闻 |\n{_CJK_ARTICLE}"  # the article is a paragraph: tables around it are left alone
    assert drop_layout_rows(outside) == outside
    english = "| Home | News |\n| The port expansion began today. It will add four berths. |\n| Related |"
    assert drop_layout_rows(english) == english
