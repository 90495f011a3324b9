"""The demo's pictures: the sample corpus's SVG files, served by the demo itself.

The sample sites are made up (``www.coastlinetimes.example``): the ``/media/<name>`` their pages name as
pictures has no server. With ``WebSettings.demo_media`` set (only ``newsfold demo`` sets it) the app serves
that folder's ``.svg`` files at ``/demo-media/<name>`` and a thumbnail of a sample site points there, so the
pictures load from this server (``img-src 'self'``). Otherwise there is no such route and nothing is rewritten.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from flask import Blueprint, Flask, abort, current_app, send_from_directory, url_for

bp = Blueprint("demo_media", __name__)
_NAME = re.compile(r"^[\w-]{1,80}\.svg$")
#: the made-up sites' hosts (RFC 2606's reserved ``.example`` names, which no one else can own)
_SAMPLE_HOST = re.compile(r"^(?:www\.)?[a-z0-9-]+\.example$")


@bp.get("/demo-media/<name>")
def picture(name: str):
    """A picture of the sample corpus (an SVG file of the demo's folder)."""
    if not _NAME.match(name):
        abort(404)
    folder = Path(current_app.config["DEMO_MEDIA"])
    response = send_from_directory(folder, name, mimetype="image/svg+xml", max_age=3600)
    response.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'"
    return response


def local_picture(url: str | None) -> str | None:
    """A sample site's ``/media/<name>`` picture as this server's ``/demo-media/<name>`` in the demo; else ``url``."""
    if not url or not current_app.config.get("DEMO_MEDIA"):
        return url
    parts = urlsplit(url)
    name = parts.path.removeprefix("/media/")
    if _SAMPLE_HOST.match(parts.hostname or "") and name != parts.path and _NAME.match(name):
        return url_for("demo_media.picture", name=name)
    return url


def init_app(app: Flask, folder: str | None) -> None:
    """Serve ``folder``'s pictures and show them in place of the sample sites' (nothing when ``folder`` is None)."""
    app.add_template_filter(local_picture, "local_picture")
    if folder:
        app.config["DEMO_MEDIA"] = str(folder)
        app.register_blueprint(bp)
