"""The JSON API of editor corrections, under /api.

``POST /api/clusters/<id>/split`` ``{"page_id"}``,
``POST /api/clusters/<id>/merge`` ``{"other_cluster_id"}``,
``POST /api/pairs/not-duplicates`` ``{"page_a", "page_b"}``,
``POST /api/clusters/<id>/representative`` ``{"page_id"}`` (each with an
optional ``"note"``) answer ``{"correction": {...}}``; ``GET
/api/corrections?cluster_id=&page_id=&page=`` pages through the log. Every
route needs a login or an API token (``web.auth``; the log names editors, so
it is not public like the search routes), and a session-cookie request needs
the ``X-CSRFToken`` header.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from newsfold.web.auth import current_user
from newsfold.web.corrections import CorrectionFailed, apply_correction, corrections_page
from newsfold.web.validation import BadBody, json_body

bp = Blueprint("admin_api", __name__)


@bp.before_request
def _require_user():
    # writes are guarded centrally; the log is read-protected here too
    if current_user() is None:
        message = "authentication required: log in, or send an API token as 'Authorization: Bearer <token>'"
        return jsonify(error=message), 401, {"WWW-Authenticate": 'Bearer realm="newsfold"'}
    return None


def _body() -> dict:
    try:
        payload = json_body()
    except BadBody as exc:
        raise CorrectionFailed(f"{exc}; the body must be a JSON object") from None
    if not isinstance(payload, dict):
        raise CorrectionFailed("the body must be a JSON object (Content-Type: application/json)")
    return payload


#: the fields each correction takes in a JSON body; anything else is refused so a misspelt field is not ignored
FIELDS = {
    "split": ("page_id", "note"),
    "merge": ("other_cluster_id", "note"),
    "not_duplicates": ("page_a", "page_b", "note"),
    "representative": ("page_id", "note"),
}


def _correct(kind: str, cluster_id: str | None):
    try:
        fields = _body()
        unknown = sorted(set(fields) - set(FIELDS[kind]))
        if unknown:
            shown = ", ".join(name[:40] for name in unknown[:5])
            raise CorrectionFailed(f"unknown field(s) {shown}; this correction takes {', '.join(FIELDS[kind])}")
        applied = apply_correction(kind, cluster_id=cluster_id, fields=fields, user=current_user())
    except CorrectionFailed as exc:
        return jsonify(error=str(exc)), exc.status
    return jsonify(correction=applied.correction.as_dict(), message=applied.message, cluster_id=applied.cluster_id)


@bp.post("/clusters/<cluster_id>/split")
def split(cluster_id: str):
    """Split ``page_id`` out of the cluster into a story of its own."""
    return _correct("split", cluster_id)


@bp.post("/clusters/<cluster_id>/merge")
def merge(cluster_id: str):
    """Merge ``other_cluster_id`` with this cluster."""
    return _correct("merge", cluster_id)


@bp.post("/pairs/not-duplicates")
def not_duplicates():
    """Mark ``page_a`` and ``page_b`` as not copies of each other."""
    return _correct("not_duplicates", None)


@bp.post("/clusters/<cluster_id>/representative")
def representative(cluster_id: str):
    """Make ``page_id`` the representative of the cluster."""
    return _correct("representative", cluster_id)


@bp.get("/corrections")
def corrections():
    """The corrections log, newest first, optionally for one cluster or page."""
    try:
        log = corrections_page(request.args, page_size=int(current_app.config.get("ADMIN_CORRECTIONS", 50)))
    except ValueError as exc:
        return jsonify(error=str(exc)), 400
    return jsonify(log.as_json())
