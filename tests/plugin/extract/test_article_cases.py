"""Extraction cases kept as files, as Read the Docs keeps its parser cases.

``tests/data/extraction/NAME.html`` is a page exactly as a crawler would hand it
over (any bytes: some cases are PDFs, broken gzip or GB2312). ``NAME.json``
says why the case exists and what ``extract_article`` must return: the
rejection ``reason``, or the article's ``title``, ``lang`` and ``published``,
with the text in ``NAME.txt``. ``trafilatura_alone`` states what trafilatura
on its own gets wrong on the page (it ``misses`` or ``keeps`` these snippets,
returns nothing, or cannot parse it), so that a trafilatura upgrade that
changes the premise shows up instead of making the case vacuous.

After a deliberate change of the output, ``python -m tests.plugin.extract.test_article_cases``
rewrites the expected files; read the diff before committing it.
"""

from __future__ import annotations

import json

import pytest
import trafilatura
from trafilatura.utils import load_html

from newsfold.plugin.extract.article import Article, Rejection, extract_article
from tests.paths import TESTS

CASES = TESTS / "data" / "extraction"
NAMES = sorted(path.stem for path in CASES.glob("*.html"))


def _expected(name: str) -> dict:
    return json.loads((CASES / f"{name}.json").read_text(encoding="utf-8"))


def _extract(name: str) -> Article | Rejection:
    return extract_article((CASES / f"{name}.html").read_bytes(), url=_expected(name).get("url"))


@pytest.mark.parametrize("name", NAMES)
def test_extraction_case(name):
    expected = _expected(name)
    result = _extract(name)
    if "reason" in expected:
        assert isinstance(result, Rejection), result
        assert result.reason == expected["reason"], result.message()
        return
    assert isinstance(result, Article), result
    assert (result.title, result.lang, result.published) == (expected["title"], expected["lang"], expected["published"])
    assert result.text == (CASES / f"{name}.txt").read_text(encoding="utf-8").rstrip("\n")


@pytest.mark.parametrize("name", [name for name in NAMES if "trafilatura_alone" in _expected(name)])
def test_trafilatura_alone_gets_the_case_wrong(name):
    premise = _expected(name)["trafilatura_alone"]
    html = (CASES / f"{name}.html").read_bytes().decode("utf-8", "replace")
    tree = load_html(html)
    if premise.get("unparsed"):
        assert tree is None
        return
    doc = trafilatura.bare_extraction(tree, include_comments=False, with_metadata=False)
    text = (doc.text or "") if doc is not None else ""
    if premise.get("empty"):
        assert text == ""
    assert not [snippet for snippet in premise.get("misses", []) if snippet in text]
    assert not [snippet for snippet in premise.get("keeps", []) if snippet not in text]


def main() -> None:
    """Rewrite every case's expected output from what ``extract_article`` returns now."""
    for name in NAMES:
        expected = {k: v for k, v in _expected(name).items() if k in ("why", "url", "trafilatura_alone")}
        result = _extract(name)
        txt = CASES / f"{name}.txt"
        if isinstance(result, Rejection):
            expected["reason"] = result.reason
            txt.unlink(missing_ok=True)
        else:
            expected.update(title=result.title, lang=result.lang, published=result.published)
            txt.write_text(result.text + "\n", encoding="utf-8")
        order = ("why", "url", "reason", "title", "lang", "published", "trafilatura_alone")
        expected = {k: expected[k] for k in order if k in expected}
        (CASES / f"{name}.json").write_text(json.dumps(expected, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(name, result.reason if isinstance(result, Rejection) else f"{len(result.text)} characters")


if __name__ == "__main__":
    main()
