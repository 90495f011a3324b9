"""The JSON API of editor corrections, under /api.

One route per kind of ``plugin.edit.kinds`` (``CorrectionKind.route``, its fields): ``POST
/api/clusters/<id>/split`` ``{"page_id"}``,
``POST /api/clusters/<id>/merge`` ``{"other_cluster_id", "confirm"}`` (``confirm: true`` is needed when
no pair of pages of the two stories reaches the copy threshold, else 409),
``POST /api/pairs/not-duplicates`` ``{"page_a", "page_b"}``,
``POST /api/clusters/<id>/representative`` ``{"page_id"}`` (each with an
optional ``"note"``) answer ``{"correction": {...}}``; ``POST /api/corrections/<id>/undo`` undoes one; ``GET
/api/corrections?cluster_id=&page_id=&page=`` pages through the log. Every
route needs a login or an API token (``web.auth``; the log names editors, so
it is not public like the search routes), and a session-cookie request needs
the ``X-CSRFToken`` header.
"""

from __future__ import annotations

from functools import partial

from flask import Blueprint, current_app, jsonify, request

from newsfold.plugin.edit.kinds import KINDS, CorrectionKind
from newsfold.web.actions.correction_requests import CorrectionFailed, apply_correction, apply_undo, corrections_page
from newsfold.web.auth import current_scopes, current_user, deny_api
from newsfold.web.validation import BadBody, json_body

bp = Blueprint("admin_api", __name__)


@bp.before_request
def _require_user():
    # writes are guarded centrally; the log is read-protected here too
    return deny_api() if current_user() is None else None


def _body() -> dict:
    try:
        payload = json_body()
    except BadBody as exc:
        raise CorrectionFailed(f"{exc}; the body must be a JSON object") from None
    if not isinstance(payload, dict):
        raise CorrectionFailed("the body must be a JSON object (Content-Type: application/json)")
    return payload


def _rule(kind: CorrectionKind) -> str:
    """A kind's route: on a story, or on a pair of pages (``CorrectionKind.scope``)."""
    return f"/clusters/<path:cluster_id>/{kind.route}" if kind.scope == "story" else f"/pairs/{kind.route}"


def _correct(kind: CorrectionKind, cluster_id: str | None = None):
    """Apply one correction of ``kind``; fields it does not take are refused, so a misspelt one is not ignored."""
    allowed = (*(f.name for f in kind.fields), "note")
    try:
        fields = _body()
        unknown = sorted(set(fields) - set(allowed))
        if unknown:
            shown = ", ".join(name[:40] for name in unknown[:5])
            raise CorrectionFailed(f"unknown field(s) {shown}; this correction takes {', '.join(allowed)}")
        applied = apply_correction(kind.name, cluster_id=cluster_id, fields=fields, user=current_user())
    except CorrectionFailed as exc:
        return jsonify(error=str(exc)), exc.status
    return jsonify(correction=applied.correction.as_dict(), message=applied.message, cluster_id=applied.cluster_id,
                   **({"story": applied.story} if kind.reports_story else {}))  # fmt: skip


for _kind in KINDS:
    bp.add_url_rule(_rule(_kind), _kind.name, partial(_correct, _kind), methods=["POST"])


@bp.post("/corrections/<path:correction_id>/undo")
def undo(correction_id: str):
    """Undo a logged correction; the body may carry a ``note``."""
    try:
        fields = _body() if request.get_data() else {}
        unknown = sorted(set(fields) - {"note"})
        if unknown:
            raise CorrectionFailed(f"unknown field(s) {', '.join(n[:40] for n in unknown[:5])}; an undo takes note")
        applied = apply_undo(correction_id, fields=fields, user=current_user(), admin="admin" in current_scopes())
    except CorrectionFailed as exc:
        return jsonify(error=str(exc)), exc.status
    return jsonify(correction=applied.correction.as_dict(), message=applied.message)


@bp.get("/corrections")
def corrections():
    """The corrections log, newest first, optionally for one cluster or page."""
    log = corrections_page(request.args, page_size=int(current_app.config.get("ADMIN_CORRECTIONS", 50)))
    return jsonify(log.as_json())
