"""Golden tests for the extraction mechanisms around trafilatura (small hand-written pages).

Each page is built so that trafilatura alone gets it wrong in the way real pages
do; the tests check that premise too, so a trafilatura upgrade that changes it
shows up here instead of silently making a test vacuous.
"""

from __future__ import annotations

import trafilatura
from lxml import html as lxml_html
from trafilatura.utils import load_html

from newsfold.plugin.extract import (
    Article,
    clean_tree,
    decode_html,
    drop_headline,
    extract_article,
    recover_dropped_blocks,
    unwrap_page_wrappers,
)
from tests.pages import story


def _page(body: str, *, title: str = "Harbour works") -> str:
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title} | example.test</title></head>
<body><nav><a href="/">Home</a> <a href="/world">World</a> <a href="/sport">Sport</a></nav>
<main><article><h1>{title}</h1>{body}</article></main>
<footer><p>Copyright example.test. All rights reserved.</p></footer></body></html>"""


def _trafilatura_alone(html: str) -> str:
    doc = trafilatura.bare_extraction(load_html(html), include_comments=False, with_metadata=False)
    return (doc.text or "") if doc is not None else ""


def _paras(texts: list[str]) -> str:
    return "".join(f"<p>{t}</p>" for t in texts)


# ------------------------------------------------------------------ second pass on the container
def test_table_and_paragraphs_in_an_embed_wrapper_are_recovered():
    paras = story(8)
    rows = "".join(f"<tr><td>Pier {i}</td><td>{10 * i} tonnes</td></tr>" for i in range(1, 5))
    body = (
        f'<div class="article-body">{_paras(paras[:4])}'
        f'<div class="embed-widget"><table><tr><th>Pier</th><th>Load limit</th></tr>{rows}</table>'
        f"{_paras(paras[4:])}</div></div>"
    )
    html = _page(body)
    alone = _trafilatura_alone(html)
    assert "Pier 3" not in alone and paras[6][:40] not in alone  # the premise: trafilatura drops the wrapper

    art = extract_article(html)
    assert isinstance(art, Article)
    assert "Pier 3" in art.text and "30 tonnes" in art.text and "Load limit" in art.text
    assert all(p[:40] in art.text for p in paras)
    assert "All rights reserved" not in art.text and "Sport" not in art.text


def test_page_builder_sections_like_a_kept_sibling_are_recovered():
    paras = story(6)
    kept = "".join(f'<div class="section-block"><div class="section-text">{p}</div></div>' for p in paras[:4])
    dropped = "".join(
        f'<div class="section-block meta-box"><div class="section-text">{p}</div></div>' for p in paras[4:]
    )
    html = _page(kept + dropped)
    alone = _trafilatura_alone(html)
    assert not any(p[:40] in alone for p in paras[4:])  # premise: "meta" in the class drops them

    art = extract_article(html)
    assert all(p[:40] in art.text for p in paras)


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


# ------------------------------------------------------------------ broken wrappers and markup
def test_article_inside_an_unclosed_popup_aside_is_found():
    paras = story(6)
    html = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Popup | example.test</title></head>
<body><aside class="popup-overlay popup-newsletter"><div class="popup-inner"><p>Join our newsletter</p></div>
<div class="wrapper"><nav><a href="/">Home</a> <a href="/world">World</a></nav>
<main><article><h1>Popup</h1>{_paras(paras)}</article></main>
<footer><p>Copyright example.test. All rights reserved.</p></footer></div></body></html>"""
    assert _trafilatura_alone(html) == ""  # premise: the never-closed <aside> takes the page with it

    art = extract_article(html)
    assert isinstance(art, Article)
    assert all(p[:40] in art.text for p in paras)


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


def test_wrapper_markup_with_an_encoding_attribute_and_broken_bytes():
    zh = "北京市今天发布了新的城市交通规划方案，计划在五年内新建三条地铁线路。"
    paras = "".join(f"<p>{zh}第{i}段。</p>" for i in range(40))
    page = f'<text id="http://example.test/a" encoding="gb2312"><form name="f"><div>{paras}</div></form></text>'
    raw = page.encode("gb18030")
    cut = raw.index("第20段".encode("gb18030"))
    raw = raw[:cut] + b"\xc7" + raw[cut:]  # one stray lead byte, as in crawled pages
    assert load_html(page) is None  # premise: trafilatura's loader refuses a one-element wrapper

    text = decode_html(raw, max_bytes=10**6)
    assert isinstance(text, str) and text.count(zh) == 40 and text.count("\ufffd") <= 1

    art = extract_article(raw)
    assert isinstance(art, Article), art
    assert art.text.count(zh) >= 39 and art.lang == "zh"


# ------------------------------------------------------------------ cleanup and headline
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


def test_extracted_text_starts_with_the_body_not_the_headline():
    paras = story(6)
    art = extract_article(_page(_paras(paras), title="Harbour reopens after the storm"))
    assert art.title.startswith("Harbour reopens after the storm")
    assert art.text.startswith(paras[0][:40])
    assert "Harbour reopens after the storm" not in art.text


# ------------------------------------------------------------------ fast mode first, full cascade on doubt
def test_second_opinion_only_when_the_fast_result_covers_little_of_the_prose_or_is_mostly_not_prose():
    from newsfold.plugin.extract import _needs_second_opinion, _text_runs

    paras = story(21)
    menu = "".join(
        f'<li><a href="/s{i}">Section number {i} of the site menu, with a long label</a></li>' for i in range(200)
    )
    tree = load_html(_page(f"<ul>{menu}</ul>{_paras(paras)}"))
    runs = _text_runs(tree)
    article = "\n".join(paras)
    assert not _needs_second_opinion(article, runs)  # the whole article: no doubt
    assert _needs_second_opinion(paras[0][:60], runs)  # a lede only
    assert _needs_second_opinion(article * 4, runs)  # far more than the page's prose: not the article
    # the menu's link text (over four times the article) is not prose, or the article would look like under a quarter
    assert sum(r[2] for r in runs) > 4 * len(article)


def test_a_page_without_body_gets_text_runs():
    from newsfold.plugin.extract import _text_runs

    paras = story(22)
    tree = lxml_html.document_fromstring(f'<text id="x">{_paras(paras)}</text>')
    if tree.find(".//body") is None:
        assert _text_runs(tree)
    else:  # lxml added a body: the runs come from it
        assert [" ".join(r[1]) for r in _text_runs(tree)] == paras


def test_published_date_prefers_meta_tags_in_their_order_then_time_then_json_ld():
    from newsfold.plugin.extract import published_date

    head = '<meta name="date" content="2020-01-03"><meta property="article:published_time" content="2020-01-02T10:00">'
    html = f"<html><head>{head}</head><body><time datetime='2020-01-05'>x</time><p>Text.</p></body></html>"
    assert published_date(load_html(html), html) == "2020-01-02"
    html = '<html><head></head><body><time datetime="2020-01-05">x</time><p>Text.</p></body></html>'
    assert published_date(load_html(html), html) == "2020-01-05"
    html = '<html><head><script>{"datePublished": "2019-12-31"}</script></head><body><p>Text.</p></body></html>'
    assert published_date(load_html(html), html) == "2019-12-31"
