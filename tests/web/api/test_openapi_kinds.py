"""Issue 37: the corrections' parts of the OpenAPI document are built from ``plugin.edit.kinds.KINDS``
(``web.api.openapi_doc``); each says what its kind declares, and ``web/openapi.json`` holds none of them."""

from __future__ import annotations

import json
import re

import pytest
from openapi_spec_validator import validate

from newsfold.plugin import ids
from newsfold.plugin.edit.correction_log import UNDO
from newsfold.plugin.edit.kinds import KINDS
from newsfold.web.api.openapi_doc import OPENAPI_FILE, openapi_document

STATIC = json.loads(OPENAPI_FILE.read_text(encoding="utf-8"))


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_each_kind_s_operation_and_request_are_what_it_declares(kind):
    document = openapi_document()
    path = f"/api/clusters/{{cluster_id}}/{kind.route}" if kind.scope == "story" else f"/api/pairs/{kind.route}"
    operation = document["paths"][path]["post"]
    assert operation["summary"] == kind.operation and operation.get("description", "") == kind.details
    assert operation["responses"]["409"]["description"] == kind.conflict
    assert operation["x-required-scope"] == "edit" and operation["security"][0] == {"bearerAuth": ["edit"]}
    parameters = {p["name"]: p for p in operation.get("parameters", [])}
    assert set(parameters) == ({"cluster_id"} if kind.scope == "story" else set())
    if kind.scope == "story":
        assert parameters["cluster_id"]["description"].startswith(kind.story + " Ids follow one grammar")
    content = operation["requestBody"]["content"]["application/json"]
    schema = document["components"]["schemas"][content["schema"]["$ref"].rsplit("/", 1)[1]]
    assert list(schema["properties"]) == [f.name for f in kind.fields] + ["note"]
    assert schema["required"] == [f.name for f in kind.fields if f.what != "flag"]
    assert schema["additionalProperties"] is False
    for field in kind.fields:
        declared = schema["properties"][field.name]
        assert declared["type"] == ("boolean" if field.what == "flag" else "string"), field.name
        if field.what == "flag":
            assert declared["description"] == field.description
        else:  # the server strips an id: the schema takes what it takes
            assert re.match(declared["pattern"], " news/2024/a b.html\n") and not re.match(declared["pattern"], "a\tb")
    assert set(content["example"]) == set(schema["required"])


def test_the_file_holds_no_part_of_a_kind_and_the_document_is_valid():
    built = openapi_document()
    validate(built)
    kinds_paths = set(built["paths"]) - set(STATIC["paths"])
    assert len(kinds_paths) == len(KINDS)
    assert not any(k.route in path.rsplit("/", 1)[-1] for k in KINDS for path in STATIC["paths"])
    assert not [name for name in STATIC["components"]["schemas"] if name.endswith("Request") and name[:-7].lower()
                in {k.name.replace("_", "") for k in KINDS}]  # fmt: skip
    assert "enum" not in STATIC["components"]["schemas"]["Correction"]["properties"]["kind"]
    assert built["components"]["schemas"]["Correction"]["properties"]["kind"]["enum"] == [
        *(kind.name for kind in KINDS),
        UNDO,
    ]


def _id_patterns(node: object) -> list[str]:
    """Every pattern of the document that holds the id grammar (it refuses ``/versions/``)."""
    if isinstance(node, dict):
        found = [node["pattern"]] if "versions" in str(node.get("pattern", "")) else []
        return found + [p for value in node.values() for p in _id_patterns(value)]
    if isinstance(node, list):
        return [p for value in node for p in _id_patterns(value)]
    return []


def test_a_new_route_word_reaches_every_id_pattern_and_its_description(monkeypatch):
    """A kind's new route word goes in ``plugin.ids`` only: the document's patterns, the file's too, refuse it."""
    patterns = _id_patterns(openapi_document())
    assert len(patterns) > len(KINDS) and all(re.match(p, "a/retitled") for p in patterns)
    last = ids.LAST_ROUTE_WORDS[-1]
    monkeypatch.setattr(ids, "LAST_ROUTE_WORDS", (*ids.LAST_ROUTE_WORDS, "retitled"))
    document = openapi_document()
    patterns = _id_patterns(document)
    assert len(patterns) > len(KINDS)
    refused = [p for p in patterns if not re.match(p, "a/retitled")]
    assert refused == patterns
    assert all(re.match(p, "a/retitled/b") for p in patterns)
    assert f"`/{last}` or `/retitled`" in json.dumps(document)
