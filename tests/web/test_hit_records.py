"""The web reads hits through the core's records (``plugin.search.hits``), never a raw ``_source`` or ``_id``."""

from __future__ import annotations

import re
from pathlib import Path

from tests.paths import REPO_ROOT

WEB = REPO_ROOT / "web"
#: reading a raw hit or document: ``hit["_source"]``, ``doc.get("_id")``
RAW_ACCESS = re.compile(r"""\[\s*["']_(source|id)["']\s*\]|\.get\(\s*["']_(source|id)["']""")
#: the documents the web reads that are no hits of a page, and why
NOT_HITS = {
    "web/actions/correction_requests.py": "the corrections log's documents (who made a correction, what undid it)",
    "web/admin/rejected.py": "the rejected-pages log's records",
    "web/actions/review_queue.py": "the corrections log's documents (the pages each correction named)",
}


def raw_accesses(root: Path) -> dict[str, list[int]]:
    """``module -> lines`` of every raw hit access under ``root`` (its path relative to the repository)."""
    found: dict[str, list[int]] = {}
    for path in sorted(root.rglob("*.py")):
        lines = [
            n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if RAW_ACCESS.search(line)
        ]
        if lines:
            found[str(path.relative_to(root.parent))] = lines
    return found


def test_the_web_reads_no_raw_hit():
    found = {name: lines for name, lines in raw_accesses(WEB).items() if name not in NOT_HITS}
    assert not found, f"read hits through newsfold.plugin.search.hits (Version, StoryHit, read_versions): {found}"


def test_the_check_sees_a_raw_hit_read(tmp_path):
    web = tmp_path / "web"
    web.mkdir()
    (web / "page.py").write_text('a = hit["_source"]\nb = doc.get("_id")\nc = {"_source": ["title"]}\n')
    assert raw_accesses(web) == {"web/page.py": [1, 2]}  # a request body's "_source" is no read


def test_every_allowed_module_still_reads_its_documents():
    """An allowance nothing needs any more is dropped, so that the list stays a list of reasons."""
    found = raw_accesses(WEB)
    assert set(NOT_HITS) <= set(found), f"drop from NOT_HITS: {sorted(set(NOT_HITS) - set(found))}"
