"""The sample corpus generator (newsfold.samples): plain unit tests, no servers."""

from __future__ import annotations

import datetime as dt
import hashlib
import html
import itertools
import json
import re
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path

import pytest

from newsfold.plugin.extract.article import Rejection
from newsfold.plugin.fold.cluster import verify
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import Page, SignedPage
from newsfold.plugin.sign.signing import sign_page
from newsfold.plugin.text import is_cjk_text, tokenize
from newsfold.plugin.urls import site_of
from newsfold.samples import generate
from newsfold.samples.sites import SITES, View, render

SETTINGS = Settings()
FIELDS = {"id", "url", "site", "lang", "html", "published"}


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The default corpus, written once: (folder, pages, gold cluster by page id)."""
    out = tmp_path_factory.mktemp("samples")
    pages_path = generate(out)
    assert pages_path == out / "pages.jsonl"
    pages = _read_jsonl(pages_path)
    truth = {row["id"]: row["cluster"] for row in _read_jsonl(out / "truth.jsonl")}
    return out, pages, truth


@pytest.fixture(scope="module")
def signed(corpus):
    """Every page through ``sign_page``: a SignedPage or a Rejection by page id."""
    out, pages, _ = corpus
    return {
        p["id"]: sign_page(
            Page(html=(out / p["html"]).read_bytes(), url=p["url"], id=p["id"], site=p["site"], lang=p["lang"]),
            SETTINGS,
        )
        for p in pages
    }


def _clusters(pages: list[dict], truth: dict[str, str]) -> dict[str, list[dict]]:
    by_cluster: dict[str, list[dict]] = defaultdict(list)
    for p in pages:
        by_cluster[truth[p["id"]]].append(p)
    return by_cluster


def _files(folder: Path) -> dict[str, bytes]:
    return {str(f.relative_to(folder)): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}


def _digest(files: dict[str, bytes]) -> str:
    h = hashlib.sha256()
    for name, data in sorted(files.items()):
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


# The corpus is pinned: a change that alters a single byte for a given seed (vocabularies, templates, the order of
# random draws) fails here. If that is wanted, update the digests and say so: the demo's and tests' corpora change.
DEFAULT_DIGEST = "e2ca6ee2343a9c88d9d0c8fcacf50ebacfc0818bcb834bd2835b4cc1eee6dcda"  # seed 7, 40 stories (the demo's)
SEED_3_DIGEST = "b360655aa03b5688275e1da407676bdd4cc07defb40e7964e2caa853d4327da6"  # seed 3, 12 stories


def test_same_seed_gives_identical_files(tmp_path):
    generate(tmp_path / "a", seed=3, stories=12)
    generate(tmp_path / "b", seed=3, stories=12)
    generate(tmp_path / "c", seed=4, stories=12)
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert a == b
    assert a != c
    assert _digest(a) == SEED_3_DIGEST


def test_default_corpus_is_pinned(corpus):
    out, _, _ = corpus
    assert _digest(_files(out)) == DEFAULT_DIGEST


def test_too_few_stories_is_refused(tmp_path):
    with pytest.raises(ValueError, match="stories"):
        generate(tmp_path, stories=3)


def test_counts_fields_and_files(corpus):
    out, pages, truth = corpus
    assert 120 <= len(pages) <= 200
    ids = [p["id"] for p in pages]
    assert len(set(ids)) == len(ids)
    assert set(truth) == set(ids)
    assert len({p["url"] for p in pages}) == len(pages)
    for p in pages:
        assert set(p) == FIELDS
        assert re.fullmatch(r"s\d+-\d+", p["id"])
        assert p["html"] == f"html/{p['id']}.html"
        assert (out / p["html"]).is_file()
        assert re.fullmatch(r"https://www\.[a-z]+\.example/[a-z-]+/\d{4}/\d{2}/[a-z0-9-]+", p["url"])
        assert site_of(p["url"]) == p["site"]
        published = dt.date.fromisoformat(p["published"])
        assert f"/{published.year:04d}/{published.month:02d}/" in p["url"]
        assert p["lang"] in ("en", "zh")
    sites = {p["site"] for p in pages}
    assert 6 <= len(sites) <= 8
    assert all(s.endswith(".example") for s in sites)


def test_gold_clusters(corpus):
    _, pages, truth = corpus
    clusters = _clusters(pages, truth)
    multi = {c: members for c, members in clusters.items() if len(members) > 1}
    singles = [c for c, members in clusters.items() if len(members) == 1]
    assert len(multi) >= 20
    for members in multi.values():
        sites = [p["site"] for p in members]
        assert len(set(sites)) == len(sites) >= 2  # a wire story: one copy per site
        assert len(sites) <= 5
        assert len({p["lang"] for p in members}) == 1
    assert len(singles) >= 4  # stories carried once, plus the two bad pages
    zh = [members for members in multi.values() if members[0]["lang"] == "zh"]
    assert 2 <= len(zh) <= 3
    assert all(len(members) == 2 for members in zh)


def test_each_site_carries_different_stories(corpus):
    _, pages, truth = corpus
    stories_of: dict[str, set[str]] = defaultdict(set)
    for p in pages:
        if not truth[p["id"]].startswith("bad-"):
            stories_of[p["site"]].add(truth[p["id"]])
    assert all(len(stories) >= 2 for stories in stories_of.values())


def test_pages_are_html_with_site_templates(corpus):
    out, pages, truth = corpus
    skeleton: dict[str, set[str]] = defaultdict(set)
    for p in pages:
        if truth[p["id"]].startswith("bad-"):
            continue
        text = (out / p["html"]).read_text(encoding="utf-8")
        assert re.search(rf'<html lang="{p["lang"]}(-[A-Z]+)?"', text)
        title = html.unescape(re.search(r"<title>(.*?)</title>", text).group(1))
        h1 = html.unescape(re.search(r"<h1[^>]*>(.*?)</h1>", text).group(1))
        assert title.startswith(h1 + " - ") or title.endswith(" | " + h1)
        assert "cookie" in text.lower()
        skeleton[p["site"]].update(re.findall(r'(?:class|id)="([^"]+)"', text))
    for a, b in itertools.combinations(skeleton.values(), 2):  # markup differs from site to site
        assert len(a & b) / len(a | b) < 0.5


def test_headlines_differ_between_copies(corpus):
    out, pages, truth = corpus
    for members in _clusters(pages, truth).values():
        if len(members) > 1:
            titles = [re.search(r"<h1[^>]*>(.*?)</h1>", (out / p["html"]).read_text(encoding="utf-8")).group(1)
                      for p in members]  # fmt: skip
            assert len(set(titles)) == len(titles)


def test_bad_pages_are_rejected(corpus, signed):
    _, pages, truth = corpus
    clusters = _clusters(pages, truth)
    bad = [p for p in pages if truth[p["id"]].startswith("bad-")]
    assert len(bad) == 2
    assert all(len(clusters[truth[p["id"]]]) == 1 for p in bad)
    reasons = {signed[p["id"]].reason for p in bad if isinstance(signed[p["id"]], Rejection)}
    assert reasons == {"empty", "not_html"}
    good = [s for pid, s in signed.items() if not truth[pid].startswith("bad-")]
    assert all(isinstance(s, SignedPage) for s in good)


def test_chinese_pages_take_the_cjk_path(corpus, signed):
    _, pages, _ = corpus
    zh = [signed[p["id"]] for p in pages if p["lang"] == "zh"]
    assert len(zh) >= 4
    for s in zh:
        assert s.article.lang == "zh"
        assert is_cjk_text(tokenize(s.article.text))


def test_copies_verify_and_different_stories_do_not(corpus, signed):
    _, pages, truth = corpus
    ids = [p["id"] for p in pages if isinstance(signed[p["id"]], SignedPage)]
    same = same_ok = different = different_ok = 0
    for a, b in itertools.combinations(ids, 2):
        ok, _, _ = verify(signed[a].signature, signed[b].signature, SETTINGS)
        if truth[a] == truth[b]:
            same += 1
            same_ok += ok
        else:
            different += 1
            different_ok += ok
    assert same >= 100
    assert same_ok / same >= 0.95
    assert different_ok == 0


def test_related_boxes_do_not_leak_into_articles(corpus, signed):
    """The teaser of a story (its lede, shown in other pages' related boxes) stays out of their articles."""
    out, pages, truth = corpus
    teasers: dict[str, str] = {}
    for p in pages:
        text = (out / p["html"]).read_text(encoding="utf-8", errors="replace")
        m = re.search(r'<meta (?:name="description"|property="og:description") content="([^"]+)"', text)
        if m:
            teasers[truth[p["id"]]] = " ".join(tokenize(html.unescape(m.group(1))))
    assert len(teasers) >= 20
    for pid, s in signed.items():
        if isinstance(s, Rejection):
            continue
        body = " ".join(tokenize(s.article.text))
        leaked = [c for c, teaser in teasers.items() if c != truth[pid] and teaser in body]
        assert not leaked, f"{pid} shows the teasers of {leaked}"


HOSTILE = """<script>alert("x")</script> & Tom's "quoted" words"""


class _Page(HTMLParser):
    """The start tags (name, attributes), the text and the script bodies of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.in_script = tag == "script"

    def handle_endtag(self, tag):
        self.in_script = False

    def handle_data(self, data):
        (self.scripts if self.in_script else self.text).append(data)


@pytest.mark.parametrize("site", SITES, ids=lambda s: s.key)
def test_site_templates_escape_what_they_show(site):
    """Markup in a headline, teaser, byline, comment or url shows as text and never ends an attribute or a script."""
    view = View(
        site=site, page_id="s1-001", headline=HOSTILE, paragraphs=[HOSTILE] * 5, byline=HOSTILE,
        published=dt.datetime(2025, 3, 4, 9, 30), url=f"https://x.example/{HOSTILE}", section="news",
        description=HOSTILE, related=[(HOSTILE, HOSTILE, f"https://x.example/r/{HOSTILE}")] * 2,
        most_read=[(HOSTILE, f"https://x.example/m/{HOSTILE}")] * 3, comments=[(HOSTILE, HOSTILE, HOSTILE)] * 2,
        note=HOSTILE, caption=HOSTILE,
    )  # fmt: skip
    text = render(view)
    assert "<script>alert" not in text
    page = _Page()
    page.feed(text)
    page.close()
    assert [a.get("type") for tag, a in page.tags if tag == "script"] in ([], ["application/ld+json"])
    for script in page.scripts:  # JSON-LD: the whole headline, and nothing after it
        assert json.loads(script)["headline"] == HOSTILE
    assert sum(HOSTILE in chunk for chunk in page.text) >= 10  # headline, paragraphs, comments, related...
    values = [v for _, attrs in page.tags for v in attrs.values() if v and "alert" in v]
    assert values  # urls, descriptions, titles in attributes...
    assert all(v.endswith(HOSTILE) for v in values)  # each one whole: no quote ended it early


def test_the_labelled_provenance_set(tmp_path):
    import json

    from newsfold.samples.provenance import generate_provenance

    first = generate_provenance(tmp_path / "a", stories=12)
    again = generate_provenance(tmp_path / "b", stories=12)
    assert first.read_bytes() == again.read_bytes()  # the same seed, the same files
    truth = [json.loads(line) for line in (tmp_path / "a" / "truth.jsonl").read_text("utf-8").splitlines()]
    by_story: dict[str, list[dict]] = {}
    for t in truth:
        by_story.setdefault(t["cluster"], []).append(t)
    assert len(by_story) == 12
    for pages in by_story.values():
        origin = pages[0]["origin"]
        assert all(p["origin"] == origin for p in pages)
        if origin.startswith("wire:"):  # a wire story: at least one page credits the agency
            assert any(p["wire"] == origin[5:] for p in pages)
        else:
            assert all(p["wire"] is None for p in pages)
    assert {t["style"] for t in truth} >= {"none", "dateline"}


def test_the_labelled_provenance_set_with_forged_credits(tmp_path):
    import json

    from newsfold.samples.provenance import generate_provenance

    plain = generate_provenance(tmp_path / "a", stories=12).read_text("utf-8").splitlines()
    forged = generate_provenance(tmp_path / "b", stories=12, forged=3).read_text("utf-8").splitlines()
    assert forged[: len(plain)] == plain  # the forged stories come after, and change none of the others
    truth = [json.loads(line) for line in (tmp_path / "b" / "truth.jsonl").read_text("utf-8").splitlines()]
    fake = [t for t in truth if t.get("kind") == "forged"]
    assert len(fake) == 9 and len({t["cluster"] for t in fake}) == 3
    for n in range(0, 9, 3):
        first, copy, late = fake[n : n + 3]
        assert first["origin"] == copy["origin"] == late["origin"] and first["origin"].startswith("site:")
        assert first["wire"] is None and copy["wire"] is None and late["wire"] is not None


def test_some_stories_are_a_sites_own_and_others_an_agencys(corpus, signed):
    """Every filter of the demo's first screen shows something: the English sites originate stories (their
    earliest version credits no agency, nor do most copies), and other stories credit a wire on every copy.
    (Indexed, each English site originates two to four: ``originals=1`` on any of them shows stories.)"""
    _, pages, truth = corpus
    own: dict[str, int] = defaultdict(int)
    own_copied = wire_stories = 0
    for members in _clusters(pages, truth).values():  # each story's pages in publication order
        found = [signed[p["id"]] for p in members if isinstance(signed[p["id"]], SignedPage)]
        if not found or found[0].article.lang != "en":
            continue
        credits = [page.article.wire for page in found]
        if credits[0] is None and credits.count(None) > len(credits) / 2:
            own[members[0]["site"]] += 1
            own_copied += len(members) > 1
        elif None not in credits:
            wire_stories += 1
    english = {site.domain for site in SITES if site.lang == "en"}
    assert len(set(own) & english) >= len(english) - 1 and sum(own.values()) >= 12, own
    assert own_copied >= 5 and wire_stories >= 10, (own_copied, wire_stories)


def test_english_stories_name_a_picture_the_corpus_holds(corpus, signed):
    out, pages, _ = corpus
    english = [p for p in pages if p["lang"] == "en" and isinstance(signed[p["id"]], SignedPage)]
    for p in english:
        image = signed[p["id"]].article.image
        assert image and image.startswith(f"https://www.{p['site']}/media/story-") and image.endswith(".svg"), image
        svg = (out / "media" / image.rsplit("/", 1)[1]).read_text(encoding="utf-8")
        assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg"') and "<script" not in svg
