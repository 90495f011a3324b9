"""The times of pages: which ones are believed, and their forms (ISO 8601, epoch milliseconds).

A time before 1990 or more than a day after now is not believed: the windows of top stories count back
from the newest believed time (``plugin.search.story_queries``), and a story's first publisher and timeline
leave the others out (``plugin.search.story_versions``). One page dated in the year 9999 must not empty
every window, nor one dated in the year 1 become a story's first publisher.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from newsfold.plugin.times import utc

#: publication times believed: from this day on, and up to a day after now (others count as undated)
EARLIEST_PLAUSIBLE = dt.datetime(1990, 1, 1, tzinfo=dt.UTC)
FUTURE_SLACK = dt.timedelta(days=1)
#: the same as a range query
PLAUSIBLE_RANGE = {"gte": EARLIEST_PLAUSIBLE.date().isoformat(), "lte": "now+1d"}


def plausible_times(times_ms: Sequence[int], *, now: dt.datetime | None = None) -> list[int]:
    """The times (epoch ms) a timeline shows: none before 1990 nor more than a day in the future."""
    now = now or dt.datetime.now(dt.UTC)
    low = int(EARLIEST_PLAUSIBLE.timestamp() * 1000)
    high = int((now + FUTURE_SLACK).timestamp() * 1000)
    return [t for t in times_ms if low <= t <= high]


def epoch_millis(value: object) -> int | None:
    """An ISO 8601 time or date (UTC when no zone) as epoch milliseconds; None when unreadable."""
    when = utc(value)
    return int(when.timestamp() * 1000) if when is not None else None


def iso_millis(value: float | None) -> str | None:
    """An epoch-millisecond aggregation value as an ISO 8601 UTC time (None outside the years 1 to 9999)."""
    if value is None:
        return None
    try:
        return dt.datetime.fromtimestamp(value / 1000, tz=dt.UTC).isoformat().replace("+00:00", "Z")
    except (ValueError, OverflowError, OSError):
        return None
