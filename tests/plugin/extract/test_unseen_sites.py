"""Extraction on pages of kinds the dev set barely has: damaged tops, table layouts, menus and bars at the edges.

Every page is written here (our own words from ``tests.pages.story``), built the
way such pages are built, not copied from any site.
"""

from __future__ import annotations

import pytest
import trafilatura
from lxml import html as lxml_html

from newsfold.plugin.extract.article import Article, Rejection, extract_article
from newsfold.plugin.extract.blocks import text_runs
from newsfold.plugin.extract.decode import _web_codec, decode_html, parse_html
from newsfold.plugin.extract.edges import trim_edges
from tests.pages import story


def _article_page(paras: list[str], *, head: str = "", top: str = "<html><head>") -> str:
    body = "".join(f"<p>{p} Café crème, naïve façade.</p>" for p in paras)
    return (
        f'{top}<title>Harbour works begin</title><link rel="stylesheet" href="/a.css">{head}</head>'
        f'<body><div id="main"><h1>Harbour works begin</h1>{body}</div></body></html>'
    )


# ------------------------------------------------------------------ 1. no empty article where there is one
@pytest.mark.parametrize(
    "label",
    [
        "news, sport, weather, business, politics",  # keywords where the encoding should be
        "undefined",  # Python-only codecs: one raised UnicodeError, one garbled the page
        "idna",
        "punycode",
        "utf-16",  # UTF-16 declared in ASCII markup: browsers read UTF-8 (or the bytes' own charset)
        "cp037",  # EBCDIC: no browser decodes an HTML page so
    ],
)
def test_a_damaged_xml_declaration_is_read_as_a_browser_reads_the_page(label):
    paras = story(31)
    html = _article_page(paras, top=f'<?xml version="1.0" encoding="{label}, x"?>\n<html><head>')
    result = extract_article(html.encode("cp1252"))
    assert isinstance(result, Article), result
    assert paras[0] in result.text and "Café crème, naïve façade." in result.text


def test_encoding_labels_are_read_as_browsers_read_them():
    # aliases of a narrower encoding widen as the WHATWG standard says; Python-only codecs are no encoding
    assert {label: _web_codec(label) for label in ("euc-cn", "GBK", "sjis", "latin1", "UTF-16LE", "koi8-r")} == {
        "euc-cn": "gb18030",
        "GBK": "gb18030",
        "sjis": "cp932",
        "latin1": "cp1252",
        "UTF-16LE": "utf-8",
        "koi8-r": "koi8-r",
    }
    assert [_web_codec(label) for label in ("undefined", "idna", "rot13", "cp037", "news")] == [None] * 5


def test_an_unterminated_declaration_swallowing_the_html_tag_still_yields_the_page():
    paras = story(32)
    html = _article_page(paras, top='<?xml version="1.0" encoding="news, sport, weather, <html><head>')
    result = extract_article(html.encode("cp1252"))
    assert isinstance(result, Article) and paras[-1] in result.text


def test_bytes_no_label_decodes_fall_back_to_windows_1252_not_undecodable():
    html = _article_page(story(33)).encode("cp1252") + bytes([0x81, 0x8D, 0x9D])  # bytes cp1252 leaves undefined
    text = decode_html(html, max_bytes=10**6)
    assert isinstance(text, str) and "Café crème" in text


@pytest.mark.parametrize(
    "top",
    [
        '<!DOCTYPE html>\n<html lang="en-\n<head>\n<meta charset="UTF-8" />\n',  # libxml2 read this as <html/>
        '<!doctype html>\n<html class="no-<!--\nVERSION: 30.1\n--><head>\n<meta charset="utf-8" />\n',
        '<html><head><meta name="description" content="The harbour\n<meta charset="utf-8" />\n',
    ],
)
def test_a_tag_cut_off_inside_an_attribute_near_the_top_is_closed(top):
    paras = story(34)
    result = extract_article(_article_page(paras, top=top).encode("utf-8"))
    assert isinstance(result, Article), result
    assert paras[0] in result.text and paras[-1] in result.text


def test_the_cut_tag_repair_only_runs_when_the_page_would_be_lost():
    html = _article_page(story(35), head='<meta name="x" content="a <b>bold</b> value">')
    tree = parse_html(html)
    assert tree.find(".//meta[@name='x']").get("content") == "a <b>bold</b> value"


def test_when_trafilatura_finds_nothing_the_largest_block_of_paragraphs_is_the_article():
    paras = story(36)
    html = (
        "<html><head><title>T</title></head><body><div class='menu'><a href='/'>Home</a></div>"
        f'<div id="comments">{"".join(f"<p>{p}</p>" for p in paras)}</div></body></html>'
    )
    assert len(trafilatura.extract(html, include_comments=False) or "") < 20  # the premise: trafilatura alone
    counts: dict[str, int] = {}
    result = extract_article(html, counts=counts)
    assert isinstance(result, Article) and result.text == "\n".join(paras)
    assert counts == {"paragraphs": 1}


def test_no_article_only_when_every_method_finds_nothing_and_the_path_is_counted():
    counts: dict[str, int] = {}
    result = extract_article(
        "<html><head><title>App</title></head><body><div id='root'></div></body></html>", counts=counts
    )
    assert isinstance(result, Rejection) and result.reason == "no_article"
    assert counts == {"none": 1}
    extract_article(_article_page(story(37)), counts=counts)
    assert counts == {"none": 1, "fast": 1}


# ------------------------------------------------------------------ 2. menus, skip links, bars, most read at the edges
def _edges(lines: list[str], *, links: list[str] = ()) -> str:
    """trim_edges over a text, with ``links`` being the page's link texts."""
    body = "".join(f'<p><a href="/{n}">{t}</a></p>' for n, t in enumerate(links)) + "<p>x</p>"
    tree = lxml_html.document_fromstring(f"<html><body>{body}</body></html>")
    return trim_edges("\n".join(lines), text_runs(tree))


_PARAS = story(43)[:3]


def test_a_skip_link_never_opens_an_article():
    assert _edges(["Skip to main content", *_PARAS]) == "\n".join(_PARAS)


def test_a_menu_at_the_start_of_an_article_is_dropped():
    menu = ["Home", "News", "Sport", "Business | Weather"]
    assert _edges([*menu, *_PARAS], links=["Home", "News", "Sport", "Business", "Weather"]) == "\n".join(_PARAS)


def test_weather_and_date_bars_at_either_end_are_dropped():
    assert _edges(["Halifax, NS | Overcast | -5°C", "Tuesday, March 4, 2008", *_PARAS]) == "\n".join(_PARAS)
    assert _edges([*_PARAS, "Updated 04.03.2008 14:05"]) == "\n".join(_PARAS)


def test_a_most_read_column_at_the_end_is_dropped():
    heads = [" ".join(story(50 + i)[0].split()[:8]) for i in range(4)]
    assert _edges([*_PARAS, "Most read", *heads]) == "\n".join(_PARAS)


def test_article_lines_at_the_edges_stay():
    lede = "On March 4 the council voted to rebuild the harbour wall."
    items = ["Flour", "Two eggs", "Salt"]  # a closing list that is not links
    text = [lede, *_PARAS, *items]
    assert _edges(text, links=["Home"]) == "\n".join(text)
    assert _edges(["Home"], links=["Home"]) == "Home"  # never emptied
