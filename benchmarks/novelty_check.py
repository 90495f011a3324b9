"""A check of the novelty rule (``plugin.sign.novelty``) on the dev set's transplant kinds.

    python benchmarks/novelty_check.py DEV_DIR [--gold] [--json OUT]

Every transplant copy in ``DEV_DIR`` is compared with its source article, as
``relation(source keys, copy keys)`` from the keys ingest stores (``passage_keys``): both pages are extracted with
``extract_article`` (what ingest stores; ``--gold`` uses the gold texts of
``truth/extraction.jsonl`` instead, to see the rule apart from extraction).
What the variants must give:

- ``truncated`` (the first 40-70% of the paragraphs): shorter;
- ``full`` (every paragraph, headline maybe changed): neither shorter nor adding material.

Accuracy is the share of copies of a kind that come out so; the other kinds
(``edited``, ``reparagraphed``, ``related-box``) are shown for information.
Prints one table per run; nothing is written into the dev folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from newsfold.indexer.sources.jsonl import iter_jsonl
from newsfold.plugin.extract.article import Rejection, extract_article
from newsfold.plugin.sign.novelty import relation
from newsfold.plugin.sign.passages import passage_keys

#: what each checked variant must come out as
EXPECTED = {
    "truncated": lambda r: r.shorter,
    "full": lambda r: r.kind == "copy",
}


def load_transplants(dev_dir: Path) -> dict[str, dict]:
    """``copy id -> {"source", "variant"}`` from ``truth/provenance.jsonl``."""
    out = {}
    with (dev_dir / "truth" / "provenance.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            plant = rec.get("transplant")
            if plant:
                out[rec["id"]] = {"source": plant["source"], "variant": plant["variant"]}
    return out


def texts(dev_dir: Path, ids: set[str], *, gold: bool) -> dict[str, str]:
    """The article text of each page in ``ids``: extracted as ingest does, or the gold text."""
    out: dict[str, str] = {}
    if gold:
        with (dev_dir / "truth" / "extraction.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                if rec["id"] in ids:
                    out[rec["id"]] = rec["text"]
        return out
    for rec in iter_jsonl(dev_dir / "pages.jsonl"):
        if rec.id not in ids or rec.html is None:
            continue
        article = extract_article(rec.html, url=rec.url, lang=rec.lang)
        if not isinstance(article, Rejection):
            out[rec.id] = article.text
    return out


def check(dev_dir: Path, *, gold: bool) -> dict:
    """Relations of every transplant copy to its source, counted by variant and kind."""
    plants = load_transplants(dev_dir)
    wanted = set(plants) | {p["source"] for p in plants.values()}
    found = texts(dev_dir, wanted, gold=gold)
    keys = {pid: passage_keys(text) for pid, text in found.items()}
    kinds: dict[str, Counter] = defaultdict(Counter)
    misses: dict[str, list] = defaultdict(list)
    for copy_id, plant in sorted(plants.items()):
        rel = relation(keys.get(plant["source"]), keys.get(copy_id))
        variant = plant["variant"]
        if rel is None:
            kinds[variant]["no text"] += 1
            continue
        kinds[variant][rel.kind] += 1
        ok = EXPECTED.get(variant)
        if ok and not ok(rel):
            misses[variant].append({"copy": copy_id, "source": plant["source"], **rel.as_json()})
    report = {"gold": gold, "variants": {}}
    for variant, counts in sorted(kinds.items()):
        n = sum(counts.values())
        entry = {"copies": n, "kinds": dict(counts)}
        if variant in EXPECTED:
            entry["accuracy"] = round((n - len(misses[variant])) / n, 4) if n else None
            entry["misses"] = misses[variant]
        report["variants"][variant] = entry
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dev_dir", type=Path)
    parser.add_argument("--gold", action="store_true", help="compare the gold texts instead of the extracted ones")
    parser.add_argument("--json", type=Path, help="also write the report (with the misses) here")
    args = parser.parse_args(argv)
    report = check(args.dev_dir, gold=args.gold)
    print(f"novelty rule on dev transplants ({'gold texts' if args.gold else 'extracted texts'})")
    print(f"{'variant':<15}{'copies':>7}  {'accuracy':>9}  kinds")
    for variant, entry in report["variants"].items():
        acc = entry.get("accuracy")
        shown = f"{acc:.3f}" if acc is not None else "-"
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(entry["kinds"].items(), key=lambda kv: -kv[1]))
        print(f"{variant:<15}{entry['copies']:>7}  {shown:>9}  {kinds}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
