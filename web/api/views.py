"""The JSON API under /api: search, clusters, page submission, task states and jobs."""

from __future__ import annotations

import json
import re

from flask import Blueprint, abort, current_app, jsonify, request
from flask.blueprints import BlueprintSetupState
from werkzeug.routing import BaseConverter

from newsfold import task_names
from newsfold.plugin.fold.lookups import MAX_WINDOW
from newsfold.plugin.search.story_queries import MAX_STORIES, WINDOWS
from newsfold.web.actions.cluster_list import ClusterListParams, load_cluster_list
from newsfold.web.actions.job_requests import JobRequestError, retry_job, start_reindex
from newsfold.web.actions.search_params import SearchParams
from newsfold.web.actions.search_results import load_cluster, run_search, search_body, suggest_spellings
from newsfold.web.actions.stats import syndication as syndication_figures
from newsfold.web.actions.story_lists import VERSIONS_PAGE
from newsfold.web.api.openapi_doc import openapi_document
from newsfold.web.auth import current_user
from newsfold.web.errors import QUEUE_ERRORS, describe_queue_error, unavailable
from newsfold.web.queue import chunked, task_status
from newsfold.web.resources import get_celery, get_es, get_job_store, get_settings, get_web_settings
from newsfold.web.validation import MAX_OFFSET, BadBody, InvalidPages, json_body, parse_pages, whole_number

bp = Blueprint("api", __name__)

_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")
_JOB_ID_RE = r"[a-z]+-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}"
_JOB_ID = re.compile(f"^{_JOB_ID_RE}$")


class JobIdConverter(BaseConverter):
    """A job id in a route (``<job_id:job_id>``): ``GET /api/jobs/reindex`` is then no job's address but a
    method ``/api/jobs/reindex`` does not take (a 405 naming POST, for anyone), as the OpenAPI document says."""

    regex = _JOB_ID_RE


@bp.record_once
def _add_converter(state: BlueprintSetupState) -> None:
    state.app.url_map.converters.setdefault("job_id", JobIdConverter)


MAX_JOBS_PAGE = 200


def _bad_request(message: str, **extra):
    return jsonify(error=message, **extra), 400


@bp.get("/search")
def search():
    """``GET /api/search?q=&site=&lang=&from=&to=&sort=&page=``: one page of stories with their versions."""
    settings = get_settings()
    params = SearchParams.from_args(request.args)
    body = search_body(params, page_size=get_web_settings().page_size)
    result = run_search(
        get_es(),
        settings,
        params,
        body,
        page_size=get_web_settings().page_size,
        per_cluster=int(current_app.config["VERSIONS_PER_STORY"]),
    )
    suggest_spellings(get_es(), settings, result)
    return jsonify(result.as_json())


#: stories per page of ``GET /api/clusters`` (the admin list's ``ADMIN_CLUSTERS``)
CLUSTERS_PAGE = 50


@bp.get("/clusters")
def clusters():
    """``GET /api/clusters?sort=weakest&site=&lang=&page=``: the admin's cluster list as JSON (the editor's queue
    with ``sort=weakest``); the same filters and sorts as ``/admin/clusters``. Needs ``edit``."""
    params = ClusterListParams.from_args(request.args)  # an InputError is a 400 (web/errors.py)
    page_size = int(current_app.config.get("ADMIN_CLUSTERS", CLUSTERS_PAGE))
    result = load_cluster_list(get_es(), get_settings(), params, page_size=page_size)
    return jsonify(
        page=params.page,
        page_size=page_size,
        total=result.total,
        truncated=result.truncated,
        sort=params.sort,
        order=params.order,
        clusters=result.rows,
    )


@bp.get("/clusters/<story:cluster_id>")
def cluster(cluster_id: str):
    """``GET /api/clusters/<id>``: the pages of a story, oldest first."""
    found = load_cluster(get_es(), get_settings(), cluster_id)
    if found is None:
        abort(404, description=f"no cluster {cluster_id!r}")
    return jsonify(found)


@bp.post("/pages")
def submit_pages():
    """``POST /api/pages`` with ``{"pages": [...]}``: queue the pages in batches; 202 with the task ids."""
    try:
        payload = json_body()
    except BadBody as exc:
        return _bad_request(f'{exc}; send {{"pages": [...]}}')
    try:
        pages = parse_pages(payload, max_pages=int(current_app.config["MAX_API_PAGES"]))
    except InvalidPages as exc:
        return _bad_request(str(exc), problems=exc.problems)
    limit = get_settings().max_page_bytes
    too_large = [
        f"pages[{i}].html has {size:,} bytes" for i, p in enumerate(pages) if (size := len(p["html"].encode())) > limit
    ]
    if too_large:
        message = f"{len(too_large)} page(s) over the limit of {limit:,} bytes (NEWSFOLD_MAX_PAGE_BYTES); the first: "
        return jsonify(error=message + too_large[0], problems=too_large[:20]), 413
    celery = get_celery()
    batch_size = get_settings().batch_size
    task_ids: list[str] = []
    try:
        for batch in chunked(pages, batch_size):
            task_ids.append(celery.send_task(task_names.INGEST_BATCH, args=[batch]).id)
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


@bp.get("/syndication")
def syndication():
    """``GET /api/syndication?window=``: per site, the share of its pages copying a story first published
    elsewhere, the share credited to each wire, and its own stories against those it carried."""
    window = (request.args.get("window") or "all").strip()
    if window not in WINDOWS:
        return _bad_request(f"window must be one of {', '.join(WINDOWS)}, got {window[:40]!r}")
    return jsonify(syndication_figures(get_es(), get_settings(), window=window))


@bp.get("/openapi.json")
def openapi():
    """``GET /api/openapi.json``: the OpenAPI 3.1 description of every ``/api`` route, with this server's last pages
    (``web/openapi.json`` states those of the default page sizes; ``web.api.openapi_doc`` adds the corrections')."""
    document = openapi_document()
    for path, last in page_limits().items():
        for param in document["paths"][path]["get"]["parameters"]:
            if param.get("name") == "page":
                param["schema"]["maximum"] = last
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return current_app.response_class(text, mimetype="application/json")


def page_limits() -> dict[str, int]:
    """The last page each paged list of the API answers, by path, under this server's page sizes."""
    size, log = get_web_settings().page_size, int(current_app.config.get("ADMIN_CORRECTIONS", 50))
    return {
        "/api/search": MAX_WINDOW // size,  # from/size paging reaches the first 10,000 results
        "/api/stories": MAX_STORIES // size,
        "/api/stories/{cluster_id}": MAX_WINDOW // VERSIONS_PAGE,
        "/api/corrections": -(-MAX_WINDOW // log),  # a page that starts within the log's first 10,000 entries
    }


def _window(prefix: str = "") -> tuple[int, int]:
    """``offset`` and ``limit`` query parameters (optionally prefixed), validated."""
    offset = whole_number(request.args.get(f"{prefix}offset"), f"{prefix}offset", default=0, low=0, high=MAX_OFFSET)
    limit = whole_number(request.args.get(f"{prefix}limit"), f"{prefix}limit", default=50, low=1, high=MAX_JOBS_PAGE)
    return offset, limit


def _job_or_404(job_id: str):
    job = get_job_store().get(job_id) if _JOB_ID.match(job_id) else None
    if job is None:
        abort(404, description=f"no job {job_id!r}")
    return job


@bp.get("/jobs")
def jobs():
    """``GET /api/jobs?offset=&limit=``: ingest and reindex jobs, newest first."""
    offset, limit = _window()
    total, found = get_job_store().list(offset=offset, limit=limit)
    return jsonify(total=total, offset=offset, limit=limit, jobs=[j.as_dict() for j in found])


@bp.get("/jobs/<job_id:job_id>")
def job(job_id: str):
    """``GET /api/jobs/<id>?failures_offset=&failures_limit=``: a job's progress and one page of its failures."""
    offset, limit = _window("failures_")
    found = _job_or_404(job_id)
    total, items = get_job_store().failures(found.id, offset=offset, limit=limit)
    return jsonify({**found.as_dict(), "failures": {"total": total, "offset": offset, "limit": limit, "items": items}})


@bp.post("/jobs/reindex")
def reindex():
    """``POST /api/jobs/reindex`` with ``{"source": "text"|"archive"}``: queue a reindex; 409 while one is active."""
    try:
        body = json_body(required=False) or {}
    except BadBody as exc:
        return _bad_request(str(exc))
    if not isinstance(body, dict):
        return _bad_request('the body must be a JSON object like {"source": "text"}')
    source = body.get("source", "text")
    if source not in task_names.REINDEX_SOURCES:
        return _bad_request(f"source must be one of {', '.join(task_names.REINDEX_SOURCES)}, got {str(source)[:40]!r}")
    try:
        started = start_reindex(source, user=current_user() or "api")
    except JobRequestError as exc:
        return jsonify(error=str(exc)), 409
    return jsonify(started.as_dict()), 202


@bp.post("/jobs/<job_id:job_id>/retry")
def retry(job_id: str):
    """``POST /api/jobs/<id>/retry``: queue the retryable failures of a finished job again; 409 if none."""
    _job_or_404(job_id)
    try:
        retrying = retry_job(job_id)
    except LookupError as exc:
        abort(404, description=str(exc))
    except JobRequestError as exc:
        return jsonify(error=str(exc)), 409
    return jsonify({**get_job_store().require(job_id).as_dict(), "retrying": retrying}), 202
