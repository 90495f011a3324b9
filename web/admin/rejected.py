"""The admin's list of rejected pages: the records of ``<alias>-rejected`` with their reasons, paged."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from elasticsearch import Elasticsearch

from newsfold.plugin.admin import stats_queries
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.lookups import MAX_WINDOW
from newsfold.plugin.fold.rejections import rejections_index
from newsfold.plugin.settings import Settings
from newsfold.web.formatting import Paged
from newsfold.web.validation import page_number

MAX_REASON_CHARS = 100


@dataclass
class RejectedPage(Paged):
    """One page of the rejected-pages list, optionally of one reason."""

    reason: str | None = None
    records: list[dict] = field(default_factory=list)

    def url_args(self) -> dict:
        return {"reason": self.reason} if self.reason else {}


def load_rejected(es: Elasticsearch, settings: Settings, args: Mapping[str, str], *, page_size: int) -> RejectedPage:
    """Read ``reason`` and ``page`` from request arguments and load that page of the records (none before the
    first rejection: the index is made by the first one).

    Raises:
        ValueError: an argument is malformed or the page out of range.
    """
    page = page_number(args.get("page"))
    if (page - 1) * page_size >= MAX_WINDOW:
        raise InputError(f"page {page} is out of range (the list is paged through its first {MAX_WINDOW:,} records)")
    reason = (args.get("reason") or "").strip() or None
    if reason is not None and (len(reason) > MAX_REASON_CHARS or not reason.isprintable()):
        raise InputError(f"reason must be at most {MAX_REASON_CHARS} printable characters")
    body = stats_queries.rejected_pages(reason=reason, offset=(page - 1) * page_size, size=page_size)
    res = es.search(index=rejections_index(settings), ignore_unavailable=True, **body)
    records = [hit["_source"] for hit in res["hits"]["hits"]]
    return RejectedPage(page=page, page_size=page_size, total=int(res["hits"]["total"]["value"]), reason=reason,
                        records=records)  # fmt: skip
