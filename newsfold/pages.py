"""Reading the JSONL page-list format shared by the CLI commands."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class PageRow:
    """One line of a PAGES.jsonl file (``error`` set when the line is unusable)."""

    line: int
    id: str | None
    payload: dict | None
    error: str | None = None


def read_pages(path: Path) -> Iterator[PageRow]:
    """Yield the rows of PAGES.jsonl; ``html`` paths are resolved against the file's folder.

    Each input line is ``{"id", "url", "site", "lang", "html"}`` (other fields
    may be null). A line that is not a JSON object or has no ``html`` path is
    yielded with an ``error`` instead of stopping the run.
    """
    base = path.resolve().parent
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                yield PageRow(n, None, None, f"line {n} is not valid JSON: {exc.msg}")
                continue
            if not isinstance(row, dict):
                yield PageRow(n, None, None, f"line {n} is not a JSON object")
                continue
            page_id = row.get("id")
            page_id = str(page_id) if page_id is not None else f"line-{n}"
            html = row.get("html")
            if not isinstance(html, str) or not html:
                yield PageRow(n, page_id, None, "no html path given")
                continue
            payload = {
                "id": page_id,
                "html_path": str(base / html),
                "url": row.get("url"),
                "site": row.get("site"),
                "lang": row.get("lang"),
                "published": row.get("published") or row.get("date"),
            }
            yield PageRow(n, page_id, payload)
