"""The admin area under /admin: clusters, their evidence and corrections, statistics and jobs.

Every page here is behind the login (``web.auth`` guards the blueprint);
forms post with a CSRF token and redirect with a flash message. The JSON
counterparts of the corrections are in ``web.api.correction_views``.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    url_for,
)

from newsfold.plugin.admin import admin_queries
from newsfold.plugin.edit.kinds import KINDS, CorrectionKind
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.rollover import index_facts
from newsfold.plugin.search.story_queries import WINDOW_NAMES
from newsfold.web.actions import merge_check, review_queue
from newsfold.web.actions import stats as admin_stats
from newsfold.web.actions.cluster_list import ClusterListParams, cluster_row, load_cluster_list
from newsfold.web.actions.correction_names import read_names
from newsfold.web.actions.correction_requests import CorrectionFailed, apply_correction, apply_undo, corrections_page
from newsfold.web.actions.job_requests import JobRequestError, job_failures_page, retry_job, start_reindex
from newsfold.web.admin.cluster_detail import load_cluster_detail, load_comparison
from newsfold.web.admin.rejected import load_rejected
from newsfold.web.admin.tokens import revoke_token, token_rows
from newsfold.web.auth import current_scopes, current_user
from newsfold.web.charts import heatmap
from newsfold.web.display import headline_filter
from newsfold.web.formatting import page_count, page_links
from newsfold.web.resources import get_es, get_job_store, get_settings
from newsfold.web.validation import page_number

bp = Blueprint("admin", __name__)

#: defaults of the admin's Flask config keys (``ADMIN_*``; settable with ``FLASK_ADMIN_*``)
DEFAULTS = {
    "ADMIN_CLUSTERS": 50,  # clusters per page of the list
    "ADMIN_MEMBERS": 200,  # members loaded on a cluster page
    "ADMIN_HEATMAP": 30,  # members in the heat map
    "ADMIN_PAIRS": 50,  # pairs listed least similar first
    "ADMIN_CORRECTIONS": 50,  # corrections per page of the log
    "ADMIN_JOBS": 25,  # jobs per page
    "ADMIN_REJECTED": 50,  # rejected pages per page
}


def _config(name: str) -> int:
    return int(current_app.config.get(name, DEFAULTS[name]))


def index_totals(response: dict) -> dict:
    """Pages, stories and the share of pages that are extra copies, from a ``totals`` response."""
    pages = int(response["hits"]["total"]["value"])
    stories = int(response["aggregations"]["stories"]["value"])
    duplicates = max(0, pages - stories)
    return {
        "pages": pages,
        "stories": stories,
        "duplicates": duplicates,
        "duplicate_share": duplicates / pages if pages else 0.0,
    }


@bp.get("/")
def index():
    """The overview: totals of the index, the largest clusters and links to every admin page."""
    es, settings = get_es(), get_settings()
    totals = index_totals(es.search(index=settings.index, **admin_queries.totals()).body)
    largest = es.search(index=settings.index, **admin_queries.largest_clusters(size=10))
    rows = [cluster_row(bucket) for bucket in largest["aggregations"]["clusters"]["buckets"]]
    indices = index_facts(es, settings.index)  # the time-based indices behind the alias (docs/scaling.md)
    health = es.cluster.health().body  # read from the node: status, nodes, unassigned shards
    return render_template(
        "admin/index.html", totals=totals, clusters=rows, indices=indices, alias=settings.index, health=health
    )


# ---------------------------------------------------------------- clusters
@bp.get("/clusters")
def clusters():
    """``/admin/clusters``: clusters filtered, sorted and paged as the URL says (``sort=weakest``: the queue)."""
    choices = review_queue.filter_values(get_es(), get_settings())
    try:
        params = ClusterListParams.from_args(request.args)
    except InputError as exc:
        form = ClusterListParams.for_form(request.args)
        return render_template("admin/clusters.html", params=None, form=form, error=str(exc), choices=choices), 400
    result = load_cluster_list(get_es(), get_settings(), params, page_size=_config("ADMIN_CLUSTERS"))
    links = page_links(params.page, result.total_pages)
    form = {k: ("" if v is None else v) for k, v in params.__dict__.items()}
    return render_template(
        "admin/clusters.html", params=params, form=form, result=result, page_links=links, choices=choices
    )


#: kinds of correction whose form on the cluster page is its own (cluster.html, merge.html); every other kind of
#: ``plugin.edit.kinds.KINDS`` gets the form built from its entry (admin/_kind_form.html): its fields and a note
OWN_FORMS = frozenset({"split", "merge", "representative"})


def _built_forms(members: int) -> list[CorrectionKind]:
    """The kinds whose form the cluster page builds: those without one of their own, less those that name more
    of its pages than a story of ``members`` pages has (not duplicates on a one-page story)."""
    return [kind for kind in KINDS if kind.name not in OWN_FORMS
            and sum(f.what == "page" for f in kind.fields) <= members]  # fmt: skip


def _detail_or_404(cluster_id: str, *, evidence: bool = True):
    found = load_cluster_detail(
        get_es(),
        get_settings(),
        cluster_id,
        limit=_config("ADMIN_MEMBERS"),
        pairs=_config("ADMIN_PAIRS"),
        evidence=evidence,
    )
    if found is None:
        abort(404, description=f"There is no cluster with the id {cluster_id!r}.")
    return found


@bp.get("/clusters/<story:cluster_id>")
def cluster(cluster_id: str):
    """One cluster: members with scores and evidence, heat map, weakest pairs and the correction forms."""
    detail = _detail_or_404(cluster_id)
    shown = detail.members[: _config("ADMIN_HEATMAP")]
    matrix = [row[: len(shown)] for row in detail.matrix[: len(shown)]]
    labels = [f"{m.get('site') or '?'}: {headline_filter(m.get('title'), m.get('site')) or '(untitled)'}"
              for m in shown]  # fmt: skip

    def cell_href(i: int, j: int) -> str:
        return url_for("admin.compare", cluster_id=cluster_id, a=shown[i]["id"], b=shown[j]["id"])

    chart = heatmap(
        labels, matrix, title=f"Pairwise similarity of {len(shown)} pages", chart_id="heatmap", cell_href=cell_href
    )
    return render_template(
        "admin/cluster.html",
        cluster=detail,
        heatmap=chart,
        heatmap_members=shown,
        heatmap_matrix=matrix,
        settings=get_settings(),
        kind_forms=_built_forms(len(detail.members)),
    )


@bp.get("/clusters/<path:cluster_id>/compare")
def compare(cluster_id: str):
    """``?a=&b=``: two members side by side with their word differences; the least similar pair by default."""
    detail = _detail_or_404(cluster_id, evidence=False)
    a_id, b_id = (request.args.get("a") or "").strip(), (request.args.get("b") or "").strip()
    if not a_id and not b_id:
        if not detail.pairs:
            flash("This cluster has a single page: there is nothing to compare.", "info")
            return redirect(url_for("admin.cluster", cluster_id=cluster_id), code=303)
        a_id, b_id = detail.pairs[0][0]["id"], detail.pairs[0][1]["id"]
    try:
        comparison = load_comparison(get_es(), get_settings(), detail, a_id, b_id)
    except LookupError as exc:
        abort(404, description=str(exc))
    return render_template("admin/compare.html", cluster=detail, cmp=comparison)


def _back_to(cluster_id: str | None):
    target = request.form.get("next") or ""
    if target.startswith("/admin/") and not target.startswith("//"):
        return redirect(target, code=303)
    if cluster_id:
        return redirect(url_for("admin.cluster", cluster_id=cluster_id), code=303)
    return redirect(url_for("admin.clusters"), code=303)


def _correct(kind: str, cluster_id: str, fields: dict):
    fields = {**fields, "note": request.form.get("note")}
    try:
        applied = apply_correction(kind, cluster_id=cluster_id, fields=fields, user=current_user() or "unknown")
    except CorrectionFailed as exc:
        flash(str(exc), "error")
        return _back_to(cluster_id)
    flash(applied.message, "success")
    if applied.story:  # a split: the template links the new story
        flash(applied.story, "story")
    if applied.cluster_id and applied.cluster_id != cluster_id:
        return redirect(url_for("admin.cluster", cluster_id=applied.cluster_id), code=303)
    return _back_to(cluster_id)


def _correction_view(kind: CorrectionKind):
    """The admin route of a kind of ``plugin.edit.kinds``: its fields from the form, then ``_correct``."""

    def view(cluster_id: str):
        return _correct(kind.name, cluster_id, {f.name: request.form.get(f.name) for f in kind.fields})

    view.__doc__ = kind.summary
    return view


for _kind in KINDS:  # endpoints admin.split, admin.merge, admin.not_duplicates, admin.representative
    bp.add_url_rule(f"/clusters/<path:cluster_id>/{_kind.route}", _kind.name, _correction_view(_kind),
                    methods=["POST"])  # fmt: skip


@bp.get("/merge")
def merge_preview():
    """``?cluster_id=&q=&other_cluster_id=``: find the other story by title, and preview the merge; changes nothing."""
    cluster_id, q, other = (_arg(name) for name in ("cluster_id", "q", "other_cluster_id"))
    if not cluster_id:
        abort(400, description="cluster_id is required")
    es, settings = get_es(), get_settings()
    candidates = preview = error = None
    try:
        if q and not other:
            candidates = merge_check.merge_candidates(es, settings, q, exclude=cluster_id)
        if other:
            preview = merge_check.merge_preview(es, settings, cluster_id, other)
    except LookupError as exc:
        error = str(exc)
    names = read_names([], [cluster_id, *([preview.other] if preview else [])])
    return render_template("admin/merge.html", cluster_id=cluster_id, q=q, other=other, candidates=candidates,
                           preview=preview, error=error, names=names), 404 if error else 200  # fmt: skip


def _arg(name: str) -> str | None:
    value = (request.args.get(name) or "").strip()
    if len(value) > 1024:
        abort(400, description=f"{name} must be at most 1024 characters")
    return value or None


@bp.post("/corrections/<path:correction_id>/undo")
def undo(correction_id: str):
    """Undo one correction of the log (later corrections that conflict keep their decisions)."""
    try:
        applied = apply_undo(
            correction_id,
            fields={"note": request.form.get("note")},
            user=current_user(),
            admin="admin" in current_scopes(),
        )
    except CorrectionFailed as exc:
        flash(str(exc), "error")
    else:
        flash(applied.message, "success")
    return redirect(url_for("admin.corrections"), code=303)


@bp.get("/corrections")
def corrections():
    """The corrections log: who changed which cluster when, newest first, paged."""
    page = corrections_page(request.args, page_size=_config("ADMIN_CORRECTIONS"))
    return render_template("admin/corrections.html", log=page, page_links=page_links(page.page, page.total_pages))


# ---------------------------------------------------------------- statistics
@bp.get("/stats")
def stats():
    """Charts: duplicate share, cluster sizes, similarity distributions, ingest rate, rejections, syndication."""
    window = (request.args.get("window") or "all").strip()
    if window not in WINDOW_NAMES:
        abort(400, description=f"window must be one of {', '.join(WINDOW_NAMES)}, got {window[:40]!r}")
    es, settings = get_es(), get_settings()
    figures = admin_stats.syndication(es, settings, window=window)
    charts = admin_stats.syndication_charts(figures)
    return render_template("admin/stats.html", stats=admin_stats.load_stats(es, settings), syndication=figures,
                           syndication_charts=charts, windows=WINDOW_NAMES)  # fmt: skip


@bp.get("/rejected")
def rejected():
    """The rejected pages with their reasons, newest first, paged (``?reason=`` for one reason)."""
    found = load_rejected(get_es(), get_settings(), request.args, page_size=_config("ADMIN_REJECTED"))
    return render_template("admin/rejected.html", rejected=found, page_links=page_links(found.page, found.total_pages))


# ---------------------------------------------------------------- API tokens
@bp.get("/tokens")
def tokens():
    """The configured API tokens with their scopes and last use; each can be revoked."""
    return render_template("admin/tokens.html", tokens=token_rows())


@bp.post("/tokens/<name>/revoke")
def revoke(name: str):
    """Revoke one API token: refused from now on (remove its entry from the setting to make that last)."""
    if revoke_token(name, by=current_user()):
        flash(f"Token {name} is revoked: it is refused from now on. Remove its entry from "
              "NEWSFOLD_API_TOKEN_HASHES at the next deploy.", "success")  # fmt: skip
    else:
        flash(f"No API token is named {name[:64]!r}.", "error")
    return redirect(url_for("admin.tokens"), code=303)


# ---------------------------------------------------------------- jobs
@bp.get("/jobs")
def jobs():
    """Running and past ingest/reindex jobs, newest first, and the form that starts a reindex."""
    page = _page_arg()
    size = _config("ADMIN_JOBS")
    store = get_job_store()
    total, listed = store.list(offset=(page - 1) * size, limit=size)
    pages = page_count(total, size)
    active = store.active("reindex")
    return render_template(
        "admin/jobs.html",
        jobs=listed,
        total=total,
        page=page,
        total_pages=pages,
        page_links=page_links(page, pages),
        active_reindex=active,
    )


@bp.get("/jobs/<job_id>")
def job(job_id: str):
    """One job: progress, counts, rejections by reason and its failures (paged)."""
    store = get_job_store()
    found = store.get(job_id) if len(job_id) <= 128 else None
    if found is None:
        abort(404, description=f"There is no job with the id {job_id!r}.")
    page = _page_arg()
    failures = job_failures_page(store, found, page=page, page_size=_config("ADMIN_JOBS"))
    return render_template("admin/job.html", job=found, failures=failures, page_links=page_links)


@bp.post("/jobs/reindex")
def reindex():
    """Start a reindex of the given source (``text`` or ``archive``) unless one is running."""
    try:
        started = start_reindex(request.form.get("source"), user=current_user() or "unknown")
    except JobRequestError as exc:
        flash(str(exc), "error")
        return redirect(url_for("admin.jobs"), code=303)
    flash(f"Reindex from {started.params.get('source')} queued as job {started.id}.", "success")
    return redirect(url_for("admin.job", job_id=started.id), code=303)


@bp.post("/jobs/<job_id>/retry")
def retry(job_id: str):
    """Re-queue the retryable failures of a job."""
    try:
        count = retry_job(job_id)
    except LookupError as exc:
        abort(404, description=str(exc))
    except JobRequestError as exc:
        flash(str(exc), "error")
        return redirect(url_for("admin.job", job_id=job_id), code=303)
    flash(f"Retrying the failed items of job {job_id} ({count} retryable).", "success")
    return redirect(url_for("admin.job", job_id=job_id), code=303)


def _page_arg() -> int:
    return page_number(request.args.get("page"))
