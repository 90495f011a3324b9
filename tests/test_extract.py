"""Article extraction and bad input (pure, no servers)."""

from __future__ import annotations

import gzip

import pytest

from newsfold.plugin.extract import Article, Rejection, decode_html, extract_article
from tests.pages import page, story


def test_extract_article_from_templated_page():
    paras = story(5)
    art = extract_article(page("Bridge reopens", paras).encode(), url="https://example.test/a")
    assert isinstance(art, Article)
    assert art.title.startswith("Bridge reopens")
    assert paras[0][:60] in art.text
    assert "All rights reserved" not in art.text
    assert art.lang == "en"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty"),
        (b"   \n ", "empty"),
        (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj", "not_html"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not_html"),
        (b"\x1f\x8b\x08\x00broken", "undecodable"),
        (b"just some text without any markup at all", "not_html"),
        (b"<html><head><script>var a = 1;</script></head><body><script>go()</script></body></html>", "no_article"),
        (b"<html><body><p>Too short.</p></body></html>", "too_short"),
    ],
)
def test_bad_input_is_rejected_with_reason(data, reason):
    result = extract_article(data)
    assert isinstance(result, Rejection)
    assert result.reason == reason, result.message()


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


def test_title_and_date_come_from_the_head():
    html = (
        '<html><head><meta property="og:title" content="Storm closes harbour">'
        '<script type="application/ld+json">{"datePublished": "2025-02-03T08:00:00Z"}</script>'
        "</head><body><article>" + "".join(f"<p>{p}</p>" for p in story(7)) + "</article></body></html>"
    )
    art = extract_article(html.encode())
    assert (art.title, art.published) == ("Storm closes harbour", "2025-02-03")


def test_cleanup_removes_related_box_inside_the_article():
    paras = story(8)
    box = (
        '<div class="related-stories"><h3>Related stories</h3><ul>'
        + "".join(f'<li><a href="/s{i}">Other headline {i}</a><p>{p}</p></li>' for i, p in enumerate(story(9)[:3]))
        + "</ul></div>"
    )
    html = page("Main story", paras, extra=box).encode()
    cleaned = extract_article(html)
    raw = extract_article(html, cleanup=False)
    assert story(9)[0][:50] not in cleaned.text
    assert paras[-1][:50] in cleaned.text
    assert len(raw.text) >= len(cleaned.text)


def test_cleanup_heading_rule_removes_unclassed_link_boxes_only():
    links = "".join(f'<li><a href="/x{i}">Another story about the harbour {i}</a></li>' for i in range(4))
    box = f"<div><h3>Read more</h3><ul>{links}</ul></div>"
    html = page("Main story", story(10), extra=box).encode()
    assert "Another story about the harbour" not in extract_article(html).text
