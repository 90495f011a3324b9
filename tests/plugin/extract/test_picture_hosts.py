"""Pictures are loaded by the reader's browser: only public http(s) hosts are kept (issue 32, item 11)."""

from __future__ import annotations

import pytest

from newsfold.plugin.extract.article import extract_article
from newsfold.plugin.urls import public_host
from newsfold.web.display import image_of
from tests.pages import page, story

REFUSED = [
    "https://127.0.0.1:9200/_cat/indices",
    "http://localhost/a.jpg",
    "https://LOCALHOST./a.jpg",
    "https://api.localhost/a.jpg",
    "https://printer.local/a.jpg",
    "http://metadata.google.internal/computeMetadata/v1/",
    "https://db.corp.internal/a.jpg",
    "http://169.254.169.254/latest/meta-data/",
    "https://10.0.0.5/a.jpg",
    "https://192.168.1.1/a.jpg",
    "https://172.16.0.1/a.jpg",
    "https://100.64.0.1/a.jpg",
    "https://0.0.0.0/a.jpg",
    "https://[::1]/a.jpg",
    "https://[::ffff:127.0.0.1]/a.jpg",
    "https://[fd00::1]/a.jpg",
    "https://[fe80::1]/a.jpg",
    "https://2130706433/a.jpg",  # 127.0.0.1 as one number
    "https://0x7f.1/a.jpg",
    "https://0177.0.0.1/a.jpg",
    "https://127.1/a.jpg",
    "https://１２７.０.０.１/a.jpg",  # fullwidth digits: browsers read 127.0.0.1
    "https://intranet/a.jpg",  # no dot: a name of the local network
    "https://224.0.0.1/a.jpg",
]
KEPT = [
    "https://cdn.example.com/a.jpg",
    "http://img.news.test/b.png",
    "https://93.184.215.14/c.jpg",
    "https://[2606:4700::1111]/d.jpg",
    "https://bücher.example/e.jpg",
    "https://localhost.example.com/f.jpg",  # "localhost" only as a name's end counts
]


def _picture(url: str) -> str | None:
    html = page("A story with a picture", story(3260), extra="").replace(
        "<head>", f"<head><meta property='og:image' content='{url}'>"
    )
    article = extract_article(html.encode(), url="https://news.example.com/2025/story.html")
    assert not hasattr(article, "reason"), article
    return article.image


@pytest.mark.parametrize("url", REFUSED)
def test_a_picture_on_a_loopback_private_or_metadata_host_is_dropped_at_extraction(url):
    assert _picture(url) is None


@pytest.mark.parametrize("url", KEPT)
def test_a_picture_on_a_public_host_is_kept(url):
    assert (_picture(url) or "").startswith(url.split("/")[0])


@pytest.mark.parametrize("host", ["127.0.0.1", "0x7f000001", "localhost", "a.internal", "", None, "a..b", "a%2eb.com"])
def test_hosts_that_are_not_public(host):
    assert not public_host(host)


def test_a_stored_picture_from_before_is_not_shown_either():
    assert image_of({"image": "https://127.0.0.1:9200/x"}) is None
    assert image_of({"image": "https://cdn.example.com/x.jpg"}) == "https://cdn.example.com/x.jpg"
