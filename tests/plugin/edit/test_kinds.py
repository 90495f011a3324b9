"""Issue 37, item 2: each kind of correction is declared once (``plugin.edit.kinds``); every use of a kind is
built from that table or checked against it here, so a kind missing from any of them fails one test."""

from __future__ import annotations

import dataclasses
import re

import pytest

import newsfold.plugin as front_door
from newsfold.plugin.edit.correction_log import UNDO
from newsfold.plugin.edit.kinds import KINDS, CorrectionKind, RequestField, kind_named
from newsfold.plugin.errors import InputError
from newsfold.plugin.ids import LAST_ROUTE_WORDS
from newsfold.plugin.settings import Settings
from newsfold.web import create_app
from newsfold.web.actions.correction_requests import CorrectionLog
from newsfold.web.admin.views import OWN_FORMS
from newsfold.web.api.openapi_doc import openapi_document
from tests.paths import REPO_ROOT
from tests.plugin.edit import test_cut_off

DOCUMENT = openapi_document()  # web/openapi.json with the kinds' parts built from KINDS
TEMPLATES = "\n".join(p.read_text(encoding="utf-8") for p in (REPO_ROOT / "web" / "templates").rglob("*.html"))
CORRECTIONS_DOC = (REPO_ROOT / "docs" / "corrections.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def rules():
    app = create_app({"TESTING": True}, settings=Settings(elasticsearch_url="http://127.0.0.1:9"))
    return {rule.endpoint: rule for rule in app.url_map.iter_rules()}


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def missing_uses(kind: CorrectionKind, rules: dict) -> list[str]:
    """Every place a kind must appear that does not have it."""
    missing = []
    admin, api = rules.get(f"admin.{kind.name}"), rules.get(f"admin_api.{kind.name}")
    if admin is None or not admin.rule.endswith(f"/{kind.route}") or "POST" not in admin.methods:
        missing.append("its admin route")
    api_path = f"/api/clusters/{{cluster_id}}/{kind.route}" if kind.scope == "story" else f"/api/pairs/{kind.route}"
    if api is None or re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", api.rule) != api_path:
        missing.append("its API route")
    operation = DOCUMENT["paths"].get(api_path, {}).get("post")
    if operation is None or operation.get("operationId") != _camel(kind.function.__name__):
        missing.append(f"its operation in the OpenAPI document (POST {api_path}, {_camel(kind.function.__name__)})")
    schema = DOCUMENT["components"]["schemas"].get("".join(p.title() for p in kind.name.split("_")) + "Request", {})
    fields = {f.name for f in kind.fields}
    if set(schema.get("properties", {})) != fields | {"note"} or set(schema.get("required", [])) != {
        f.name for f in kind.fields if f.what != "flag"
    }:
        missing.append("its request schema in the OpenAPI document (the kind's fields and note)")
    if kind.name not in DOCUMENT["components"]["schemas"]["Correction"]["properties"]["kind"]["enum"]:
        missing.append("the kind enum of Correction in the OpenAPI document")
    if CorrectionLog.label(kind.name) != kind.label:
        missing.append("the log's label")
    if getattr(front_door, kind.function.__name__, None) is not kind.function or (
        kind.function.__name__ not in front_door.__all__
    ):
        missing.append("its export in plugin/__init__.py")
    if kind.route not in LAST_ROUTE_WORDS:
        missing.append("its route word in LAST_ROUTE_WORDS of plugin/ids.py")
    if kind.name in OWN_FORMS and f"url_for('admin.{kind.name}'" not in TEMPLATES:  # else the form built from KINDS
        missing.append("its own form in the admin's templates (OWN_FORMS of web/admin/views.py names it)")
    if f"`{kind.function.__name__}" not in CORRECTIONS_DOC:
        missing.append("its row in docs/corrections.md")
    if kind.name not in test_cut_off.KINDS:
        missing.append("its scenario in tests/plugin/edit/test_cut_off.py")
    return missing


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_every_use_of_a_kind_has_it(kind, rules):
    assert missing_uses(kind, rules) == []


def test_the_check_names_every_use_a_new_kind_lacks(rules):
    new = dataclasses.replace(KINDS[0], name="retitle", route="retitle", label="Retitled",
                              fields=(RequestField("title", "flag", "A new headline."),))  # fmt: skip
    assert len(missing_uses(new, rules)) == 8  # not its form: the cluster page builds one from its entry
    assert "its export in plugin/__init__.py" not in missing_uses(new, rules)  # split_page's, reused here


def test_the_kinds_with_forms_of_their_own_are_kinds():
    assert {kind.name for kind in KINDS} >= OWN_FORMS


def test_the_enum_is_the_kinds_and_the_undo():
    enum = DOCUMENT["components"]["schemas"]["Correction"]["properties"]["kind"]["enum"]
    assert enum == [kind.name for kind in KINDS] + [UNDO]


def test_an_unknown_kind_is_refused_by_name():
    with pytest.raises(InputError, match="unknown correction 'retitle'.*split"):
        kind_named("retitle")
    with pytest.raises(InputError, match="unknown correction 'undo'"):
        kind_named(UNDO)
