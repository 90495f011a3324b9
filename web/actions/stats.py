"""The numbers and charts of /admin/stats, from a few aggregations.

Each section is a chart (``web.charts``, server-rendered SVG) plus the rows
of the table shown under it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from elasticsearch import Elasticsearch, NotFoundError

from newsfold.plugin.admin import stats_queries
from newsfold.plugin.fold.rejections import rejections_index
from newsfold.plugin.search.page_dates import iso_millis
from newsfold.plugin.search.story_queries import window_filter
from newsfold.plugin.settings import Settings
from newsfold.web.actions.top_stories import time_field
from newsfold.web.charts import bar_chart, histogram, line_chart, stacked_bar_chart
from newsfold.web.formatting import format_datetime, percent

SIMILARITY_STEP = 0.05
#: the ingest-rate intervals in words
INTERVAL_WORDS = {
    "1m": "minute",
    "5m": "5 minutes",
    "15m": "15 minutes",
    "1h": "hour",
    "6h": "6 hours",
    "1d": "day",
    "7d": "7 days",
    "30d": "30 days",
}
#: cluster sizes binned for the histogram: (lowest, highest or None, label)
SIZE_BINS = (
    (2, 2, "2"),
    (3, 3, "3"),
    (4, 4, "4"),
    (5, 9, "5–9"),
    (10, 19, "10–19"),
    (20, 49, "20–49"),
    (50, 99, "50–99"),
    (100, None, "100+"),
)


def duplicate_rows(response: Mapping) -> tuple[dict, list[dict]]:
    """Overall and per-site duplicate counts and shares from a ``duplicate_overview`` response.

    Overall, a duplicate is any page beyond the first of its story (pages
    minus stories, exact up to the story count's cardinality estimate); per
    site, the pages with a ``matched_id`` (they matched an earlier copy when
    ingested).
    """
    aggs = response["aggregations"]
    pages = int(response["hits"]["total"]["value"])
    stories = int(aggs["stories"]["value"])
    # overall: every page beyond the first of its story (as on the overview); per site only the
    # pages that matched an earlier copy can be counted
    duplicates = max(0, pages - stories)
    overall = {
        "pages": pages,
        "stories": stories,
        "duplicates": duplicates,
        "matched": int(aggs["duplicates"]["doc_count"]),
        "share": duplicates / pages if pages else 0.0,
    }
    sites = []
    for bucket in aggs["sites"]["buckets"]:
        count, dups = int(bucket["doc_count"]), int(bucket["duplicates"]["doc_count"])
        sites.append({"site": bucket["key"], "pages": count, "duplicates": dups, "share": dups / count if count else 0})
    return overall, sites


def size_rows(response: Mapping) -> tuple[list[dict], int, bool]:
    """Cluster counts per size bin, the single-page story count and whether the clusters were capped."""
    agg = response["aggregations"]
    sizes = [int(b["doc_count"]) for b in agg["clusters"]["buckets"]]
    rows = []
    for low, high, label in SIZE_BINS:
        inside = [s for s in sizes if s >= low and (high is None or s <= high)]
        rows.append({"label": label, "clusters": len(inside), "pages": sum(inside)})
    singles = max(0, int(agg["stories"]["value"]) - len(sizes))
    return rows, singles, bool(agg["clusters"].get("sum_other_doc_count"))


def similarity_rows(response: Mapping, *, step: float = SIMILARITY_STEP) -> tuple[list[float], dict[str, list[int]]]:
    """Bin edges on [0, 1] and the counts of accepted and rejected candidates per bin (1.0 joins the last bin)."""
    bins = round(1 / step)
    edges = [round(k * step, 4) for k in range(bins + 1)]
    counts: dict[str, list[int]] = {}
    for name in ("accepted", "rejected"):
        row = [0] * bins
        for bucket in response.get("aggregations", {}).get(name, {}).get("buckets", []):
            k = min(bins - 1, max(0, int(round(float(bucket["key"]) / step))))
            row[k] += int(bucket["doc_count"])
        counts[name] = row
    return edges, counts


def _ms(value) -> int | None:
    return int(value) if isinstance(value, int | float) else None


def rate_points(response: Mapping, interval: str) -> list[tuple[str, int]]:
    """``(label, pages)`` per interval from an ``ingest_rate`` response (labels in UTC)."""
    points = []
    for bucket in response["aggregations"]["rate"]["buckets"]:
        when = dt.datetime.fromtimestamp(int(bucket["key"]) / 1000, tz=dt.UTC)
        label = f"{when:%Y-%m-%d}" if interval.endswith("d") else f"{when:%Y-%m-%d %H:%M}"
        points.append((label, int(bucket["doc_count"])))
    return points


def reason_rows(response: Mapping | None) -> tuple[int, list[dict]]:
    """Total rejected pages and the count per reason (nothing when the index does not exist yet)."""
    if not response:
        return 0, []
    buckets = response.get("aggregations", {}).get("reasons", {}).get("buckets", [])
    total = int(response.get("hits", {}).get("total", {}).get("value", 0))
    return total, [{"reason": b["key"], "pages": int(b["doc_count"])} for b in buckets]


def load_stats(es: Elasticsearch, settings: Settings) -> dict:
    """Run the statistics aggregations and draw their charts."""
    overview = es.search(index=settings.index, **stats_queries.duplicate_overview()).body
    overall, sites = duplicate_rows(overview)
    sizes, singles, sizes_capped = size_rows(
        es.search(index=settings.index, **stats_queries.cluster_size_counts()).body
    )
    edges, similarity = similarity_rows(
        es.search(index=settings.index, **stats_queries.similarity_distribution(interval=SIMILARITY_STEP)).body
    )
    ingested = overview["aggregations"]["ingested"]
    start, end = _ms(ingested.get("min")), _ms(ingested.get("max"))
    rate, interval = _ingest_rate(es, settings, start, end)
    rejected_total, reasons = reason_rows(_rejection_reasons(es, settings))
    figures = {
        "overall": overall,
        "sites": sites,
        "sizes": sizes,
        "singles": singles,
        "sizes_capped": sizes_capped,
        "edges": edges,
        "similarity": similarity,
        "rate": rate,
        "interval": interval,
        "first_ingest": format_datetime(ingested.get("min_as_string")) if start is not None else None,
        "last_ingest": format_datetime(ingested.get("max_as_string")) if end is not None else None,
        "rejected_total": rejected_total,
        "reasons": reasons,
    }
    return {**figures, "charts": stats_charts(figures)}


def _ingest_rate(
    es: Elasticsearch, settings: Settings, start: int | None, end: int | None
) -> tuple[list[tuple[str, int]], str | None]:
    """Pages ingested per interval between the first and the last ingest, and the interval in words."""
    if start is None or end is None:
        return [], None
    name, _ = stats_queries.rate_interval(start, end)
    rate = rate_points(
        es.search(index=settings.index, **stats_queries.ingest_rate(start_ms=start, end_ms=end)).body, name
    )
    return rate, INTERVAL_WORDS.get(name, name)


def _rejection_reasons(es: Elasticsearch, settings: Settings) -> dict | None:
    """The rejection-reason aggregation of the rejected-pages index (None when it does not exist yet)."""
    try:
        return es.search(
            index=rejections_index(settings), ignore_unavailable=True, **stats_queries.rejection_reasons()
        ).body
    except NotFoundError:
        return None


def stats_charts(figures: dict) -> dict:
    """The charts of the statistics page, drawn from ``load_stats``'s figures."""
    interval = figures["interval"]
    return {
        "sites": bar_chart(
            [(f"{r['site']} ({r['pages']:,})", r["share"]) for r in figures["sites"]],
            title="Share of duplicate pages per site",
            chart_id="chart-sites",
            value_format=percent,
            max_value=1.0,
        ),
        "sizes": bar_chart(
            [(f"{r['label']} pages", r["clusters"]) for r in figures["sizes"]]
            if any(r["clusters"] for r in figures["sizes"])
            else [],
            title="Clusters by size",
            chart_id="chart-sizes",
            empty_message="No story has more than one page yet.",
        ),
        "similarity": histogram(
            figures["edges"],
            [("accepted", figures["similarity"]["accepted"]), ("nearest rejected", figures["similarity"]["rejected"])],
            title="Estimated Jaccard of accepted matches and of the nearest rejected candidate",
            chart_id="chart-similarity",
            x_label="estimated Jaccard",
            y_label="pages",
            edge_format=lambda v: f"{v:.2f}".rstrip("0").rstrip(".") if v else "0",
        ),
        "rate": line_chart(
            figures["rate"],
            title=f"Pages ingested per {interval}" if interval else "Pages ingested",
            chart_id="chart-rate",
            y_label=f"pages / {interval}" if interval else "pages",
        ),
        "reasons": bar_chart(
            [(r["reason"], r["pages"]) for r in figures["reasons"]],
            title="Rejected pages by reason",
            chart_id="chart-reasons",
            empty_message="No page has been rejected (or none recorded yet).",
        ),
    }


#: sites the syndication figures break down at most
SYNDICATION_SITES = 30
#: wires per site in the chart (the table lists every one)
WIRES_CHARTED = 2


def syndication(es: Elasticsearch, settings: Settings, *, window: str = "all", sites: int = SYNDICATION_SITES) -> dict:
    """Per site (publisher: a registrable domain), in a window counted back from the newest page: how much of its
    output is its own.

    For each of the ``sites`` sites with the most pages in the window: its pages; the share of them that are
    copies of a story first published elsewhere (by another site or a wire: its story's origin is not this
    site); the share of its pages crediting each wire; and its own stories (it is their origin) against the
    ones it carried. Pages whose story has no origin yet (ingested before provenance) are left out of the
    shares. ``1 + sites`` requests (one ``msearch`` for the sites).

    Raises:
        ValueError: an unknown window.
    """
    field_name, anchor = time_field(es, settings)
    filters = window_filter(window, anchor_ms=anchor, time_field=field_name)
    res = es.search(index=settings.index, body=stats_queries.syndication_sites(filters=filters, sites=sites))
    buckets = res["aggregations"]["sites"]["buckets"]
    owns = []
    if buckets:
        searches = []
        for bucket in buckets:
            hosts = [h["key"] for h in bucket["hosts"]["buckets"]]
            searches += [{"index": settings.index},
                         stats_queries.syndication_site(bucket["key"], hosts=hosts, filters=filters)]  # fmt: skip
        owns = es.msearch(searches=searches)["responses"]
    rows = []
    for bucket, own in zip(buckets, owns, strict=True):
        if "error" in own:
            raise RuntimeError(f"syndication search failed: {own['error']}")
        pages, decided = int(bucket["doc_count"]), int(bucket["decided"]["doc_count"])
        own_pages = int(own["aggregations"]["own"]["doc_count"])
        own_stories = int(own["aggregations"]["own"]["stories"]["value"] or 0)
        stories = int(bucket["stories"]["value"] or 0)
        copies = max(0, decided - own_pages)
        rows.append({
            "site": bucket["key"],
            "pages": pages,
            "copies": copies,
            "copy_share": copies / decided if decided else None,
            "own_stories": own_stories,
            "carried_stories": max(0, stories - own_stories),
            "wires": [{"wire": w["key"], "pages": int(w["doc_count"]), "share": int(w["doc_count"]) / pages}
                      for w in bucket["wires"]["buckets"]],
        })  # fmt: skip
    return {"window": window, "time_field": field_name, "newest": iso_millis(anchor), "sites": rows}


def syndication_charts(figures: dict) -> dict:
    """The charts of the syndication figures: copy share per site, and own against carried stories."""
    rows = figures["sites"]
    wire_items = [(f"{r['site']} · {w['wire']}", w["share"]) for r in rows for w in r["wires"][:WIRES_CHARTED]]
    return {
        "copies": bar_chart(
            [(f"{r['site']} ({r['pages']:,})", r["copy_share"]) for r in rows if r["copy_share"] is not None],
            title="Share of each site's pages that copy a story first published elsewhere",
            chart_id="chart-syndication", value_format=percent, max_value=1.0,
            empty_message="No page has an origin yet.",
        ),
        "own": stacked_bar_chart(
            [(r["site"], [r["own_stories"], r["carried_stories"]]) for r in rows], ["own stories", "carried"],
            title="Stories each site originated and stories it carried", chart_id="chart-own-stories",
        ),
        "wires": bar_chart(
            wire_items, title="Share of each site's pages credited to its two most credited wires",
            chart_id="chart-wires",
            value_format=percent, max_value=1.0, empty_message="No page credits a wire.",
        ),
    }  # fmt: skip
