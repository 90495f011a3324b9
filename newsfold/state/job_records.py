"""A job as read from Redis, and the failed pages it keeps: plain records, no Redis calls.

``newsfold.state.jobs.JobStore`` writes and reads them; the CLI, the web and
the coordinators show them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import overload

KINDS = ("ingest", "reindex")
STATUSES = ("queued", "running", "done", "failed", "cancelled")
ACTIVE = ("queued", "running")
OUTCOMES = ("new", "duplicate", "merged", "updated", "unchanged", "rejected")
#: rejection reasons a second attempt can cure (the server or the file was away); content
#: reasons (empty, too_short, not_html, ...) give the same answer every time
RETRYABLE_REASONS = frozenset({"failed", "index_failed", "unreadable", "internal_error", "timeout", "worker_crashed"})
#: seconds a finished job (and the mark of a unit's start) is kept
RETENTION_SECONDS = 30 * 24 * 3600


def now_iso() -> str:
    """The current UTC time as ISO 8601 with milliseconds (the format of every job time)."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def parse_time(value: str | None) -> dt.datetime | None:
    """An ISO 8601 time as written by :func:`now_iso`, or None when missing or malformed."""
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None


@overload
def text_of(value: None) -> None: ...
@overload
def text_of(value: bytes | str | int | float) -> str: ...
def text_of(value: object) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)


@dataclass
class Job:
    """One ingest or reindex job as read from Redis."""

    id: str
    kind: str  # "ingest" | "reindex"
    status: str  # "queued" | "running" | "done" | "failed" | "cancelled"
    created: str
    updated: str
    finished: str | None
    total: int | None
    done: int
    counts: dict[str, int]  # new / duplicate / unchanged / rejected
    rejected: dict[str, int]  # by reason
    params: dict
    message: str | None
    started: str | None = None  # when the job first ran (rate and ETA are measured from it)

    def rate(self) -> float | None:
        """Pages per second since the job started (until it finished), or None before any page."""
        start = parse_time(self.started)
        if start is None or self.done <= 0:
            return None
        end = parse_time(self.finished) or dt.datetime.now(dt.UTC)
        elapsed = (end - start).total_seconds()
        return self.done / elapsed if elapsed > 0 else None

    def eta_seconds(self) -> float | None:
        """Seconds left at the current rate; None when unknown or the job is over."""
        if self.status not in ACTIVE or self.total is None:
            return None
        rate = self.rate()
        if not rate:
            return None
        return max(0, self.total - self.done) / rate

    def as_dict(self) -> dict:
        """The JSON of ``GET /api/jobs/<id>``: every field plus ``rate`` and ``eta_seconds``."""
        out = asdict(self)
        rate, eta = self.rate(), self.eta_seconds()
        out["rate"] = round(rate, 2) if rate is not None else None
        out["eta_seconds"] = round(eta, 1) if eta is not None else None
        return out


@dataclass
class Failure:
    """One page that failed (the entry of ``JobStore.failures``), with its payload when a retry can use it."""

    item: str
    reason: str
    detail: str | None = None
    payload: dict | None = field(default=None, repr=False)

    def retryable(self) -> bool:
        return self.reason in RETRYABLE_REASONS and self.payload is not None


def failed_batch(pages: list[dict], error: BaseException) -> list[dict]:
    """The outcomes of a batch that failed for good: each page ``rejected`` with reason ``failed``."""
    detail = f"{type(error).__name__}: {error}"
    return [{"page_id": str(p.get("id")), "status": "rejected", "reason": "failed", "detail": detail} for p in pages]


def failures_of(outcomes: Iterable[dict], payloads: dict[str, dict] | None = None) -> list[Failure]:
    """The rejected outcomes as failures, each with its payload when the reason is retryable."""
    payloads = payloads or {}
    out = []
    for o in outcomes:
        if o.get("status") != "rejected":
            continue
        item = str(o.get("page_id"))
        reason = o.get("reason") or "unknown"
        payload = payloads.get(item) if reason in RETRYABLE_REASONS else None
        out.append(Failure(item, reason, o.get("detail"), payload))
    return out
