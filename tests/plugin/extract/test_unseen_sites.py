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
from newsfold.plugin.extract.tables import _layout_kind, unlayout_tables
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


# ------------------------------------------------------------------ 2. layout tables and data tables
_RESULTS = (("Smith", 12345, 45.2), ("Jones", 9876, 36.1), ("Brown", 5120, 18.7))


def _results_table(header: bool = True) -> str:
    rows = "".join(f"<tr><td>{n}</td><td>{v:,}</td><td>{s}%</td></tr>" for n, v, s in _RESULTS)
    head = "<tr><th>Candidate</th><th>Votes</th><th>Share</th></tr>" if header else ""
    return f'<table border="1">{head}{rows}</table>'


def _table_era_page(paras: list[str], *, breaks: bool, data: str = "") -> str:
    """A 2008-style news page: nested layout tables, a weather bar, a menu row, side columns, a footer row."""
    if breaks:
        half = len(paras) // 2
        body = (
            "<br><br>".join(f'<font face="Arial" size="2">{p}</font>' for p in paras[:half])
            + data
            + "<br><br>".join(f'<font face="Arial" size="2">{p}</font>' for p in paras[half:])
        )
    else:
        body = "".join(f"<p>{p}</p>" for p in paras[:2]) + data + "".join(f"<p>{p}</p>" for p in paras[2:])
    menu = "".join(
        f'<td><a href="/{w.lower()}">{w}</a></td><td>|</td>' for w in ("Home", "News", "Sport", "Weather", "Obituaries")
    )
    left = "<br>".join(f'<a href="/{w}">{w.title()} news</a>' for w in ("local", "national", "world", "health"))
    most_read = "<b>Most read</b><br>" + "<br>".join(
        f'<a href="/story/{i}">{" ".join(story(90 + i)[0].split()[:9])}</a>' for i in range(5)
    )
    return f"""<html><head><title>Harbour works begin | The Daily Example</title></head><body>
<table width="100%" cellpadding="0" cellspacing="0" border="0">
<tr><td colspan="3"><table width="100%"><tr><td><a href="/"><img src="/logo.gif" alt="Logo"></a></td>
<td>Halifax, NS</td><td>Overcast</td><td>-5°C</td><td>Tuesday, March 4, 2008</td></tr></table></td></tr>
<tr><td colspan="3"><table><tr>{menu}</tr></table></td></tr>
<tr><td width="150" valign="top">{left}</td>
<td valign="top"><font size="5"><b>Harbour works begin</b></font><br><br>{body}</td>
<td width="200" valign="top">{most_read}</td></tr>
<tr><td colspan="3">Copyright 2008 The Daily Example | <a href="/p">Privacy</a> | <a href="/c">Contact</a></td></tr>
</table></body></html>"""


@pytest.mark.parametrize("breaks", [False, True], ids=["paragraphs", "line-breaks"])
def test_a_table_layout_page_yields_the_article_without_its_frame_and_keeps_its_data_table(breaks):
    paras = story(41)
    html = _table_era_page(paras, breaks=breaks, data=_results_table())
    keeps = trafilatura.extract(html, include_comments=False) or ""
    assert "Halifax" in keeps and "Obituaries" in keeps  # the premise: trafilatura alone keeps the frame
    result = extract_article(html)
    assert isinstance(result, Article)
    lines = [line.rstrip() for line in result.text.split("\n")]
    # each paragraph a line, after the headline (no <h1>, and <title> adds the site's name)
    assert [line for line in lines if not line.startswith("|")] == ["Harbour works begin", *paras]
    assert "| Smith | 12,345 | 45.2% |" in lines  # the data table keeps its rows
    for chrome in ("Halifax", "Overcast", "Obituaries", "Most read", "Health news"):
        assert chrome not in result.text


def _table(html: str):
    return lxml_html.fragment_fromstring(html)


_LONG = " ".join(story(42))


@pytest.mark.parametrize(
    ("name", "html", "kind"),
    [
        ("nested tables", "<table><tr><td><table><tr><td>a</td><td>b</td></tr></table></td></tr></table>", "frame"),
        (
            "cell of paragraphs",
            "<table><tr><td><p>One.</p><p>Two.</p></td><td>x</td></tr><tr><td colspan='2'>y</td></tr></table>",
            "frame",
        ),
        (
            "cell holding a list",
            "<table><tr><td><ul><li>a</li></ul></td><td>x</td></tr><tr><td>y</td></tr></table>",
            "frame",
        ),
        ("cell holding an article", f"<table><tr><td>{_LONG}</td><td>side</td></tr></table>", "frame"),
        ("one-row menu", "<table><tr><td><a href='/'>Home</a></td><td><a href='/n'>News</a></td></tr></table>", "bar"),
        ("one-column list", "<table><tr><td>Home</td></tr><tr><td>News</td></tr></table>", "bar"),
        (
            "grid of links",
            "<table>"
            + "".join(
                f"<tr><td><a href='/{i}'>Section {i}</a></td><td><a href='/x{i}'>Topic {i}</a></td></tr>"
                for i in range(4)
            )
            + "</table>",
            "bar",
        ),
        ("results with a header row", _results_table(header=True), None),
        ("results without a header row", _results_table(header=False), None),
        (
            "price list with a header row",
            "<table><tr><th>Item</th><th>Price</th></tr><tr><td>Bread</td><td>$2.10</td></tr>"
            "<tr><td>Milk</td><td>$1.05</td></tr></table>",
            None,
        ),
        (
            "league table with linked teams",
            "<table><thead><tr><th>Team</th><th>Pts</th></tr></thead>"
            + "".join(f"<tr><td><a href='/t{i}'>Team number {i}</a></td><td>{30 - i}</td></tr>" for i in range(5))
            + "</table>",
            None,
        ),
        (
            "schedule of words",
            "<table><tr><td>Monday</td><td>Council meeting</td></tr>"
            "<tr><td>Tuesday</td><td>Budget vote</td></tr></table>",
            None,
        ),
    ],
)
def test_layout_tables_are_told_from_data_tables(name, html, kind):
    table = _table(html)
    assert _layout_kind(table) == kind, name


def test_a_data_table_inside_a_layout_cell_stays_a_table():
    page = lxml_html.document_fromstring(
        f"<html><body><table><tr><td><p>{_LONG}</p>{_results_table()}</td><td>Side</td></tr></table></body></html>"
    )
    assert unlayout_tables(page) == 1
    assert len(page.findall(".//table")) == 1 and len(page.findall(".//table//tr")) == 4


# ------------------------------------------------------------------ 3. menus, skip links, bars, most read at the edges
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
