"""Bad input is a 400 mapped once (``web/errors.py``): no view turns an ``InputError`` into a 400 by hand."""

from __future__ import annotations

import re

import pytest

from tests.paths import REPO_ROOT

#: a view's ``except ValueError``: the one mapping of web/errors.py does that work
CATCH_VALUE_ERROR = re.compile(r"except\s*\(?[^:\n]*\bValueError\b")


def test_no_view_catches_value_error():
    found = {
        str(p.relative_to(REPO_ROOT)): n
        for p in sorted((REPO_ROOT / "web").rglob("*views.py"))
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if CATCH_VALUE_ERROR.search(line)
    }
    assert not found, f"let web/errors.py answer InputError with 400 (catch InputError to refill a form): {found}"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/api/search?sort=oldest", "sort must be"),
        ("/api/search?q=harbour&page=0", "page must be"),
        ("/api/stories?window=9y", "window must be"),
    ],
)
def test_bad_input_to_the_api_is_a_json_400_naming_it(web_app, settings, path, message):
    res = web_app(settings).test_client().get(path)
    assert res.status_code == 400
    assert message in res.get_json()["error"]


def test_an_input_error_raised_anywhere_in_a_view_is_a_400_in_html_or_json(web_app, settings):
    from newsfold.plugin import InputError

    app = web_app(settings)

    def refuse():
        raise InputError("colour must be red, got 'blue'")

    app.add_url_rule("/refuse", "refuse", refuse)
    app.add_url_rule("/api/refuse", "api_refuse", refuse)
    page = app.test_client().get("/refuse")
    assert page.status_code == 400 and page.mimetype == "text/html"
    assert "colour must be red, got &#39;blue&#39;" in page.get_data(as_text=True)
    answer = app.test_client().get("/api/refuse")
    assert answer.status_code == 400 and answer.get_json() == {"error": "colour must be red, got 'blue'"}
