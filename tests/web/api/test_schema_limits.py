"""The last pages the served OpenAPI document states are those the server answers (issue 39, item 5)."""

from __future__ import annotations

import pytest

from newsfold.web import create_app
from newsfold.web.api.openapi_doc import openapi_document
from newsfold.web.config import WebSettings

PAGED = ("/api/search", "/api/stories", "/api/stories/{cluster_id}", "/api/corrections")


def _last_pages(document: dict) -> dict[str, int]:
    operations = {path: document["paths"][path]["get"]["parameters"] for path in PAGED}
    pages = {path: [p for p in parameters if p.get("name") == "page"] for path, parameters in operations.items()}
    return {path: page["schema"]["maximum"] for path, (page,) in pages.items()}


@pytest.mark.parametrize("page_size", [10, 25])
def test_the_served_schema_states_the_last_page_each_list_answers(es, settings, page_size):
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(page_size=page_size))
    client = app.test_client()
    last = _last_pages(client.get("/api/openapi.json").get_json())
    if page_size == 10:  # the file states the default page size's
        assert last == _last_pages(openapi_document())
    assert last["/api/search"] == 10_000 // page_size
    for path in ("/api/search", "/api/stories"):
        assert client.get(path, query_string={"page": last[path]}).status_code == 200, path
        assert client.get(path, query_string={"page": last[path] + 1}).status_code == 400, path
