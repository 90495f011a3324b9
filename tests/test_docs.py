"""The README stays a README (what newsfold is, the two commands, an example, where to read next), and every link of
the docs reaches a file and a heading that exist."""

from __future__ import annotations

import re
from pathlib import Path

from tests.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
DOCS = [README, *sorted((REPO_ROOT / "docs").rglob("*.md")), REPO_ROOT / "benchmarks" / "README.md"]
_LINK = re.compile(r"\]\(([^()\s]+)\)")


def test_the_readme_is_short_names_the_two_commands_and_links_every_doc():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "./run demo" in text and "./run test --backend all" in text  # .ci/run runs the second
    assert "./run test --backend all" in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    linked = {target.split("#")[0] for target in _LINK.findall(text)}
    missing = [f"docs/{p.name}" for p in sorted((REPO_ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in linked]
    assert not missing, f"README.md does not link these docs: {missing}"


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def broken_links(doc: Path, root: Path = REPO_ROOT) -> list[str]:
    """Each relative link of ``doc`` (outside code blocks) whose file or heading does not exist."""
    broken = []
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        where = (doc.parent / path).resolve() if path else doc
        if not where.exists():
            broken.append(f"{doc.relative_to(root)}: {target} (no such file)")
        elif anchor and where.suffix == ".md" and anchor not in _anchors(where):
            broken.append(f"{doc.relative_to(root)}: {target} (no such heading)")
    return broken


def test_every_link_of_the_docs_reaches_a_file_and_a_heading():
    broken = [b for doc in DOCS for b in broken_links(doc)]
    assert not broken, broken


def test_the_link_check_catches_a_moved_section(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## Limits on hostile input\n\n[b](b.md) [here](#limits-on-hostile-input)\n")
    doc = tmp_path / "c.md"
    doc.write_text("[ok](a.md#limits-on-hostile-input) [gone](a.md#security-limits) [none](b.md)\n")
    doc.write_text(doc.read_text() + "```\n[in code](y.md)\n```\n")
    assert broken_links(doc, tmp_path) == [
        "c.md: a.md#security-limits (no such heading)",
        "c.md: b.md (no such file)",
    ]
    assert broken_links(tmp_path / "a.md", tmp_path) == ["a.md: b.md (no such file)"]
