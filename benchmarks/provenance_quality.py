"""How well newsfold tells where a story came from, and how often a cleaned headline is wrong.

    python benchmarks/provenance_quality.py [--stories 60] [--dev DEV_DIR [--labels FILE]] [--json OUT]

1. **The labelled provenance set** (``newsfold.samples.provenance``, generated
   in a temporary folder): precision and recall of each page's ``wire`` (overall
   and per credit style, including pages that only mention an agency in the
   text), the accuracy of each story's ``origin`` after ingesting every page
   into the embedded stand-in through ``ingest`` (the stored origin of the
   pages of each labelled story), and how often a cleaned headline differs from
   the labelled one. ``--forged`` more stories (20 by default, written after the
   others, so the figures above stay those of the same pages) each carry one late
   copy whose credit is forged; their wire and origin figures are printed apart.
2. **The dev pages** (``--dev``, read from the path given; nothing is copied):
   precision and recall of ``wire`` on the hand-labelled pages of ``--labels``
   (default ``benchmarks/data/dev_wire_labels.tsv``: ``page id<TAB>agency or -``),
   and for every page with a title: headlines emptied, headlines with a word of
   the gold title cut (pages with a gold title), and headlines changed at all,
   with the site affixes learned from the dev pages' own titles
   (``plugin.extract.headlines.learn_from_titles``, the rule the index aggregation uses).
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import tempfile
import uuid
from collections import Counter, defaultdict
from pathlib import Path

from benchlib import machine

from newsfold.embedded import services
from newsfold.plugin import ingest
from newsfold.plugin.client import build_client
from newsfold.plugin.extract.article import Article, extract_article
from newsfold.plugin.extract.headlines import clean_headline, learn_from_titles
from newsfold.plugin.fold.document import fold_of
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import Page, SignedPage
from newsfold.plugin.sign.signing import sign_page
from newsfold.samples.provenance import generate_provenance

LABELS = Path(__file__).resolve().parent / "data" / "dev_wire_labels.tsv"
_WORD = re.compile(r"\w+")


def precision_recall(pairs: list[tuple[str | None, str | None]]) -> dict:
    """``(truth, predicted)`` wire pairs: a prediction is right only when it names the true agency."""
    tp = sum(1 for t, p in pairs if p is not None and p == t)
    fp = sum(1 for t, p in pairs if p is not None and p != t)
    fn = sum(1 for t, p in pairs if t is not None and p != t)
    return {"pages": len(pairs), "credited": sum(t is not None for t, _ in pairs), "tp": tp, "fp": fp, "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / (tp + fn) if tp + fn else 1.0}  # fmt: skip


def _fmt(pr: dict) -> str:
    return (f"P {pr['precision']:.3f}  R {pr['recall']:.3f}  (pages {pr['pages']}, credited {pr['credited']}, "
            f"tp {pr['tp']}, fp {pr['fp']}, fn {pr['fn']})")  # fmt: skip


def samples(stories: int, forged: int = 0) -> dict:
    """Wire, origin and headline figures on a freshly generated labelled set (forged-credit stories apart)."""
    with tempfile.TemporaryDirectory() as tmp:
        pages_path = generate_provenance(Path(tmp), stories=stories, forged=forged)
        rows = [json.loads(line) for line in pages_path.read_text("utf-8").splitlines()]
        truth = {t["id"]: t for t in map(json.loads, (Path(tmp) / "truth.jsonl").read_text("utf-8").splitlines())}
        base = Settings.from_env().replace(index=f"provenance-{uuid.uuid4().hex[:8]}")
        with services(base, announce=lambda m: print(m, file=sys.stderr)) as live:
            client = build_client(live)
            ensure_index(client, live)
            signed: list[SignedPage] = []
            for r in rows:
                page = Page(html=(Path(tmp) / r["html"]).read_bytes(), url=r["url"], id=r["id"], site=r["site"],
                            lang=r["lang"], published=r["published"])  # fmt: skip
                out = sign_page(page, live)
                if isinstance(out, SignedPage):
                    signed.append(out)
            for start in range(0, len(signed), 20):  # batches, as workers send them
                ingest(signed[start : start + 20], client=client, settings=live)
            client.indices.refresh(index=live.index)
            hits = client.search(index=live.index, size=10_000, query={"match_all": {}})["hits"]["hits"]
            drop_index(client, live)
            client.close()
    got = {h["_id"]: fold_of(h["_source"]) for h in hits}
    main = {pid: t for pid, t in truth.items() if not t.get("kind")}
    result = _figures(signed, main, got, rows)
    if forged:
        fake = {pid: t for pid, t in truth.items() if t.get("kind") == "forged"}
        found = _figures(signed, fake, got, rows)
        result["forged"] = {k: found[k] for k in ("pages", "signed", "wire", "origin_accuracy", "stories",
                                                   "origin_wrong")}  # fmt: skip
    return result


def _figures(signed: list[SignedPage], truth: dict, got: dict, rows: list[dict]) -> dict:
    """Wire, origin and headline figures of the labelled pages ``truth`` names."""
    signed = [s for s in signed if s.page_id in truth]
    rows = [r for r in rows if r["id"] in truth]
    by_style: dict[str, list] = defaultdict(list)
    pairs = []
    for s in signed:
        t = truth[s.page_id]
        pair = (t["wire"], s.article.wire)
        pairs.append(pair)
        by_style[t["style"]].append(pair)
    stories_right, stories_all = 0, 0
    origin_wrong: list[dict] = []
    story_pages: dict[str, list[str]] = defaultdict(list)
    for pid, t in truth.items():
        story_pages[t["cluster"]].append(pid)
    for pids in story_pages.values():
        stories_all += 1
        want = truth[pids[0]]["origin"]
        found = Counter()
        for pid in pids:
            f = got.get(pid) or {}
            found[f"wire:{f['origin_wire']}" if f.get("origin_wire") else f"site:{f.get('origin_site')}"] += 1
        right = bool(found) and found.most_common(1)[0][0] == want
        stories_right += right
        if not right:
            origin_wrong.append({"story": truth[pids[0]]["cluster"], "want": want, "found": dict(found)})
    titles = {s.page_id: s.article.title for s in signed}
    learned = learn_from_titles((r["site"], titles[r["id"]]) for r in rows if r["id"] in titles)
    site_of = {r["id"]: r["site"] for r in rows}
    wrong = [(s.article.title, truth[s.page_id]["headline"]) for s in signed
             if clean_headline(s.article.title, site=site_of[s.page_id], affixes=learned.get(site_of[s.page_id], ()))
             != truth[s.page_id]["headline"]]  # fmt: skip
    return {"pages": len(rows), "signed": len(signed), "wire": precision_recall(pairs),
            "wire_by_style": {k: precision_recall(v) for k, v in sorted(by_style.items())},
            "origin_accuracy": stories_right / stories_all if stories_all else 0.0, "stories": stories_all,
            "origin_wrong": origin_wrong,
            "headlines_wrong": len(wrong), "headline_examples": wrong[:5]}  # fmt: skip


def _words(text: str | None) -> set[str]:
    return set(_WORD.findall((text or "").casefold()))


def dev(dev_dir: Path, labels_path: Path) -> dict:
    """Wire figures on the hand-labelled dev pages, and headline-cleaning errors on every dev page."""
    rows = [json.loads(line) for line in (dev_dir / "pages.jsonl").read_text("utf-8").splitlines()]
    labels = {}
    if labels_path.exists():
        for line in labels_path.read_text("utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                pid, label = line.split("\t")[:2]
                labels[pid] = None if label.strip() == "-" else label.strip()
    articles: dict[str, Article] = {}
    for n, r in enumerate(rows):
        data = (dev_dir / r["html"]).read_bytes()
        if r["html"].endswith(".gz"):
            data = gzip.decompress(data)
        got = extract_article(data, url=r.get("url"), lang=r.get("lang"))
        if isinstance(got, Article):
            articles[r["id"]] = got
        if n % 200 == 0:
            print(f"extracted {n}/{len(rows)}", file=sys.stderr)
    pairs = [(labels[pid], articles[pid].wire if pid in articles else None) for pid in labels]
    learned = learn_from_titles((r["site"], articles[r["id"]].title) for r in rows if r["id"] in articles)
    emptied = cut = changed = with_gold = site_names = 0
    examples, site_name_ids = [], []
    for r in rows:
        a = articles.get(r["id"])
        if a is None or not a.title:
            continue
        cleaned = clean_headline(a.title, site=r["site"], affixes=learned.get(r["site"], ()))
        changed += cleaned != " ".join(a.title.split())
        if not _WORD.search(cleaned):
            emptied += 1
        gold = r.get("title")
        if gold and _words(gold) <= _words(a.title):
            with_gold += 1
            lost = _words(gold) - _words(cleaned)
            if lost:
                site_names += 1
                site_name_ids.append(r["id"])
            # the dev set's gold "titles" are the pages' <title>s, site name included: a lost word that is part
            # of the site's host name (or a short word of it, "the", "ai") is the site's name, not the headline's
            host = re.sub(r"[^a-z0-9]", "", r["site"].casefold())
            if any(len(w) > 3 and w not in host for w in lost):
                cut += 1
                examples.append(r["id"])
    return {"pages": len(rows), "extracted": len(articles), "labelled": len(labels),
            "wire": precision_recall(pairs), "sites_with_learned_affixes": len(learned),
            "headlines_changed": changed, "headlines_emptied": emptied, "gold_titles_checked": with_gold,
            "headlines_cut": cut, "cut_page_ids": examples[:20], "gold_words_removed": site_names,
            "gold_words_removed_ids": site_name_ids[:40],
            "detected_on_unlabelled": sum(1 for p, a in articles.items() if a.wire and p not in labels)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stories", type=int, default=60, help="stories of the generated labelled set")
    parser.add_argument("--forged", type=int, default=20, help="more stories, each with one late forged credit")
    parser.add_argument("--dev", type=Path, help="the dev set folder (pages.jsonl, html/)")
    parser.add_argument("--labels", type=Path, default=LABELS, help="hand labels: page id<TAB>agency or -")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    result: dict = {"machine": machine()}
    s = result["samples"] = samples(args.stories, args.forged)
    print(f"{machine()}\nlabelled provenance set: {s['pages']} pages, {s['stories']} stories")
    print(f"  wire        {_fmt(s['wire'])}")
    for style, pr in s["wire_by_style"].items():
        print(f"    {style:<14}{_fmt(pr)}")
    print(f"  origin      accuracy {s['origin_accuracy']:.3f} over {s['stories']} stories")
    print(f"  headlines   {s['headlines_wrong']} of {s['signed']} differ from the labelled headline")
    if "forged" in s:
        f = s["forged"]
        print(f"forged-credit stories: {f['pages']} pages, {f['stories']} stories (one late copy credits an agency)")
        print(f"  wire        {_fmt(f['wire'])}")
        print(f"  origin      accuracy {f['origin_accuracy']:.3f} over {f['stories']} stories (the first site's)")
    if args.dev:
        d = result["dev"] = dev(args.dev, args.labels)
        print(f"dev pages: {d['pages']} ({d['extracted']} with an article), {d['labelled']} hand-labelled for wire")
        print(f"  wire        {_fmt(d['wire'])}")
        print(f"  wire found on {d['detected_on_unlabelled']} unlabelled pages")
        print(f"  headlines   changed {d['headlines_changed']}, emptied {d['headlines_emptied']}, "
              f"a gold-title word removed {d['gold_words_removed']}, of them not the site's name "
              f"{d['headlines_cut']} (of {d['gold_titles_checked']} gold titles) "
              f"(sites with learned affixes: {d['sites_with_learned_affixes']})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
