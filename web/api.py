"""The JSON API under /api: search, clusters, page submission and task states."""

from __future__ import annotations

import re

from flask import Blueprint, abort, current_app, jsonify, request

from web.errors import QUEUE_ERRORS, describe_queue_error, unavailable
from web.resources import get_celery, get_es, get_settings
from web.stories import SearchParams, load_cluster, run_search, search_body
from web.tasks import INGEST_TASK, chunked, task_status
from web.validation import InvalidPages, parse_pages

bp = Blueprint("api", __name__)

_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def _bad_request(message: str, **extra):
    return jsonify(error=message, **extra), 400


@bp.get("/search")
def search():
    """``GET /api/search?q=&page=&site=&lang=``: one page of stories with their versions."""
    settings = get_settings()
    try:
        params = SearchParams.from_args(request.args)
        body = search_body(params, settings)
    except ValueError as exc:
        return _bad_request(str(exc))
    result = run_search(get_es(), settings, params, body, per_cluster=int(current_app.config["VERSIONS_PER_STORY"]))
    return jsonify(result.as_json())


@bp.get("/clusters/<cluster_id>")
def cluster(cluster_id: str):
    """``GET /api/clusters/<id>``: the pages of a story, oldest first."""
    found = load_cluster(get_es(), get_settings(), cluster_id)
    if found is None:
        abort(404, description=f"no cluster {cluster_id!r}")
    return jsonify(found)


@bp.post("/pages")
def submit_pages():
    """``POST /api/pages`` with ``{"pages": [...]}``: queue the pages in batches; 202 with the task ids."""
    payload = request.get_json(silent=True)
    if payload is None:
        return _bad_request('the body must be JSON (Content-Type: application/json) like {"pages": [...]}')
    try:
        pages = parse_pages(payload, max_pages=int(current_app.config["MAX_API_PAGES"]))
    except InvalidPages as exc:
        return _bad_request(str(exc), problems=exc.problems)
    celery = get_celery()
    batch_size = get_settings().batch_size
    task_ids: list[str] = []
    try:
        for batch in chunked(pages, batch_size):
            task_ids.append(celery.send_task(INGEST_TASK, args=[batch]).id)
    except QUEUE_ERRORS as exc:
        if not task_ids:
            raise
        # Some batches are queued already: say which, so the client resends only the rest.
        queued = min(len(task_ids) * batch_size, len(pages))
        return unavailable(describe_queue_error(exc), exc, tasks=task_ids, pages_queued=queued)
    return jsonify(tasks=task_ids, pages=len(pages)), 202


@bp.get("/tasks/<task_id>")
def task(task_id: str):
    """``GET /api/tasks/<id>``: the state of a queued batch and, once done, its outcomes."""
    if not _TASK_ID.match(task_id):
        abort(404, description=f"no task {task_id!r}")
    return jsonify(task_status(get_celery(), task_id))
