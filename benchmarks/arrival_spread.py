"""How late do copies of a story arrive? The delay of each copy after its story's first, by publication date.

Reads a dev-set folder (pages.jsonl, html/, truth/clusters.jsonl), extracts each
page's publication date with newsfold's own extraction, and counts the copies
published more than 30, 90 or 365 days after the first dated page of their gold
story: the copies a lookup window of that length would not fold (docs/scaling.md,
"Time-based indices").

    python benchmarks/arrival_spread.py ../shared/data/dev --json out/arrival.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
from collections import defaultdict
from pathlib import Path

from newsfold.plugin.extract.article import extract_article
from newsfold.plugin.extract.result import Rejection

LIMITS = (30, 90, 365)


def _date(raw: str | None) -> dt.datetime | None:
    if not raw:
        return None
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dev", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    clusters = {}
    for line in (args.dev / "truth" / "clusters.jsonl").read_text().splitlines():
        row = json.loads(line)
        clusters[row["id"]] = row["cluster"]
    dates: dict[str, list[dt.datetime]] = defaultdict(list)
    undated = 0
    for line in (args.dev / "pages.jsonl").read_text().splitlines():
        page = json.loads(line)
        html = gzip.decompress((args.dev / page["html"]).read_bytes())
        result = extract_article(html, url=page.get("url"), lang=page.get("lang"))
        when = None if isinstance(result, Rejection) else _date(result.published)
        if when is None:
            undated += 1
            continue
        dates[clusters[page["id"]]].append(when)
    copies = 0
    late = dict.fromkeys(LIMITS, 0)
    delays = []
    for when in dates.values():
        if len(when) < 2:
            continue
        first = min(when)
        for w in sorted(when)[1:]:
            copies += 1
            days = (w - first).total_seconds() / 86400
            delays.append(days)
            for limit in LIMITS:
                late[limit] += days > limit
    delays.sort()
    report = {
        "dated_copies_after_the_first": copies,
        "undated_pages": undated,
        "later_than_days": {str(k): v for k, v in late.items()},
        "share_later_than_days": {str(k): round(v / copies, 4) if copies else None for k, v in late.items()},
        "median_delay_days": round(delays[len(delays) // 2], 1) if delays else None,
    }
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
