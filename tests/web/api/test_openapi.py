"""The OpenAPI document at /api/openapi.json: valid OpenAPI 3.1, and every /api route is in it."""

from __future__ import annotations

import re

import pytest
from openapi_spec_validator import validate

from newsfold.plugin.settings import Settings
from newsfold.web import create_app

METHODS = {"get", "put", "post", "delete", "patch"}


def write_security(scope: str) -> list[dict]:
    """The credentials of a write: a token carrying ``scope``, or the session cookie with the CSRF header."""
    return [{"bearerAuth": [scope]}, {"sessionCookie": [], "csrfHeader": []}]


@pytest.fixture(scope="module")
def app():
    # no server is contacted: the document and the route table need none
    return create_app({"TESTING": True}, settings=Settings(elasticsearch_url="http://127.0.0.1:9"))


@pytest.fixture(scope="module")
def document(app):
    res = app.test_client().get("/api/openapi.json")
    assert res.status_code == 200 and res.mimetype == "application/json"
    return res.get_json()


def _flask_path(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?[^<>]+>", "{}", rule)


def _openapi_path(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def test_the_document_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_api_route_is_documented(app, document):
    documented = {
        (_openapi_path(path), method.upper())
        for path, operations in document["paths"].items()
        for method in operations
        if method in METHODS
    }
    routes = {
        (_flask_path(rule.rule), method)
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/api/")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert len(routes) >= 5
    missing = sorted(routes - documented)
    assert not missing, f"routes missing from web/openapi.json: {missing}"


def test_path_parameters_match_the_paths(document):
    for path, operations in document["paths"].items():
        names = set(re.findall(r"\{([^}]+)\}", path))
        for method, operation in operations.items():
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert declared == names, (method, path)


def test_writes_declare_their_credentials_and_reads_of_search_are_public(document):
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if method != "get":
                assert operation["security"] == write_security(operation["x-required-scope"]), (method, path)
                assert "401" in operation["responses"] and "403" in operation["responses"], (method, path)
    assert document["paths"]["/api/search"]["get"]["security"] == []
    schemes = document["components"]["securitySchemes"]
    assert schemes["bearerAuth"] == {**schemes["bearerAuth"], "type": "http", "scheme": "bearer"}


def test_every_read_that_answers_401_declares_it(app, document):
    """Issue 32, item 13: a read the server keeps private says so (its credentials and its 401), and a public one
    does not claim credentials."""
    client = app.test_client()
    for path, operations in document["paths"].items():
        if "get" not in operations:
            continue
        operation = operations["get"]
        url = re.sub(r"\{[^}]+\}", "x", path)
        if "{job_id}" in path:
            url = path.replace("{job_id}", "ingest-20240101-000000-abcdef")
        private = client.get(url).status_code == 401
        assert ("401" in operation["responses"]) == private, (path, private)
        assert bool(operation.get("security")) == private, (path, private)


def test_ids_pages_and_offsets_have_their_limits_in_the_schema(document):
    for path, operations in document["paths"].items():
        for operation in operations.values():
            for param in operation.get("parameters", []):
                schema, name = param["schema"], param["name"]
                if name in ("cluster_id", "page_id") and param["in"] == "path":
                    assert schema.get("minLength") == 1 and schema.get("maxLength") and schema.get("pattern"), path
                    assert not re.match(schema["pattern"], "a\nb") and not re.match(schema["pattern"], " a"), path
                    assert re.match(schema["pattern"], "news/2024/a b.html"), path
                if name in ("page", "offset", "failures_offset", "limit", "failures_limit"):
                    assert schema.get("maximum") and schema.get("minimum") is not None, (path, name)


def test_each_operation_declares_the_scope_the_server_requires(app, document):
    """The scope in an operation's security (and its ``x-required-scope``) is the one ``web.auth`` checks."""
    from newsfold.web.auth import required_scope

    checked = 0
    for path, operations in document["paths"].items():
        url = re.sub(r"\{[^}]+\}", "x", path.replace("{job_id}", "ingest-20240101-000000-abcdef"))
        for method, operation in operations.items():
            if method not in METHODS:
                continue
            with app.test_request_context(url, method=method.upper()):
                needed = required_scope()
            declared = [scopes for req in operation.get("security", []) for name, scopes in req.items()
                        if name == "bearerAuth"]  # fmt: skip
            assert declared == ([[needed]] if needed else []), (method, path, needed)
            assert operation.get("x-required-scope") == needed, (method, path)
            checked += 1 if needed else 0
    assert checked >= 10
