"""The read-only admin area under /admin: the largest clusters and their members."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, render_template

from plugin import queries
from web.resources import get_es, get_settings
from web.stories import load_cluster

bp = Blueprint("admin", __name__)


def _bucket_time(agg: dict) -> str | int | float | None:
    """A min/max date aggregation's value: its string form, else the epoch milliseconds."""
    return agg.get("value_as_string") or agg.get("value")


def cluster_rows(response: dict) -> list[dict]:
    """Table rows from a ``largest_clusters`` response."""
    rows = []
    for bucket in response["aggregations"]["clusters"]["buckets"]:
        sample_hits = bucket["sample"]["hits"]["hits"]
        sample = sample_hits[0]["_source"] if sample_hits else {}
        rows.append(
            {
                "cluster_id": bucket["key"],
                "size": bucket["doc_count"],
                "sites": bucket["sites"]["value"],
                "first_seen": _bucket_time(bucket["first"]),
                "last_seen": _bucket_time(bucket["last"]),
                "title": sample.get("title"),
                "site": sample.get("site"),
            }
        )
    return rows


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
    """The largest clusters and the totals of the index."""
    es, settings = get_es(), get_settings()
    totals = index_totals(es.search(index=settings.index, **queries.totals()))
    largest = es.search(
        index=settings.index, **queries.largest_clusters(size=int(current_app.config["ADMIN_CLUSTERS"]))
    )
    return render_template("admin/index.html", totals=totals, clusters=cluster_rows(largest))


@bp.get("/clusters/<cluster_id>")
def cluster(cluster_id: str):
    """The pages of one cluster, oldest first."""
    found = load_cluster(get_es(), get_settings(), cluster_id)
    if found is None:
        abort(404, description=f"There is no cluster with the id {cluster_id!r}.")
    return render_template("admin/cluster.html", cluster=found)
