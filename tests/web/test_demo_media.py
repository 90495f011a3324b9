"""The demo serves the sample corpus's pictures itself (web.demo_media): they load, and nothing else is served."""

from __future__ import annotations

import pytest

from newsfold.plugin import ingest
from newsfold.plugin.sign.signed_page import Page
from newsfold.plugin.sign.signing import sign_page
from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.pages import page, story

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'


@pytest.fixture
def pictured(es, settings):
    """A sample site's page naming /media/story-001.svg, and a page of another site naming its own picture."""
    pages = [
        Page(html=page("Zorvale harbour", story(311)).replace("<head>", '<head><meta property="og:image" '
             'content="/media/story-001.svg">'), id="p1", site="coastlinetimes.example",
             url="https://www.coastlinetimes.example/news/zorvale"),
        Page(html=page("Quenby library", story(312)).replace("<head>", '<head><meta property="og:image" '
             'content="https://cdn.news.test/media/story-002.svg">'), id="p2", site="news.test",
             url="https://news.test/quenby"),
    ]  # fmt: skip
    ingest([sign_page(p, settings) for p in pages], client=es, settings=settings)
    es.indices.refresh(index=settings.index)


def _client(settings, media):
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(demo_media=media))
    return app, app.test_client()


def test_the_demo_serves_the_sample_pictures_and_points_thumbnails_at_them(settings, pictured, tmp_path):
    (tmp_path / "story-001.svg").write_bytes(SVG)
    (tmp_path / "notes.txt").write_text("not a picture")
    app, client = _client(settings, str(tmp_path))
    with client.get("/demo-media/story-001.svg") as res:
        assert res.status_code == 200 and res.data == SVG and res.mimetype == "image/svg+xml"
        assert "default-src 'none'" in res.headers["Content-Security-Policy"]  # an SVG runs no script
    for name in ("notes.txt", "..%2Fnotes.txt", "missing.svg"):
        assert client.get(f"/demo-media/{name}").status_code == 404
    html = client.get("/?q=zorvale").get_data(as_text=True)
    assert 'src="/demo-media/story-001.svg"' in html  # the made-up site's picture, from this server
    html = client.get("/?q=quenby").get_data(as_text=True)
    assert 'src="https://cdn.news.test/media/story-002.svg"' in html  # a real site's picture is left alone
    get_resources(app).close()


def test_without_the_demo_there_is_no_route_and_nothing_is_rewritten(settings, pictured):
    app, client = _client(settings, None)
    assert client.get("/demo-media/story-001.svg").status_code == 404
    assert 'src="https://www.coastlinetimes.example/media/story-001.svg"' in client.get("/?q=zorvale").get_data(
        as_text=True
    )
    get_resources(app).close()
