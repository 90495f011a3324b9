"""Times as newsfold reads them: an ISO 8601 time or date, from a page, a document or a request, in UTC."""

from __future__ import annotations

import datetime as dt


def utc(value: object) -> dt.datetime | None:
    """An ISO 8601 time or date (a datetime or date too) as an aware UTC time (no zone: UTC); None when unreadable."""
    when = value
    if isinstance(value, str):
        try:
            when = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            return None
    if isinstance(when, dt.date) and not isinstance(when, dt.datetime):
        when = dt.datetime(when.year, when.month, when.day)
    if not isinstance(when, dt.datetime):
        return None
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).astimezone(dt.UTC)
