"""CPU per page and token F1 of article extraction: lxml, trafilatura (default and fast), newsfold.

    python benchmarks/extract_bench.py ../shared/data/dev [--pages 600] [--repeat 3] [--json out.json]
        [--per-page after.jsonl] [--compare before.jsonl]

One process, one pass over the same pages: for each page every method runs in
turn (the order rotates from page to page, so no method always runs on a warm
cache). Each page is read and decoded once, outside the timed calls, with
newsfold's own decoder; every method gets the same ``str``. Methods:

- ``lxml parse``: ``trafilatura.utils.load_html`` alone (the parse every other
  method starts with; the floor);
- ``trafilatura default``: ``trafilatura.extract(html, url=..., include_comments=False)``;
- ``trafilatura fast``: the same with ``fast=True``;
- ``newsfold``: ``extract_article(html, url=..., lang=..., min_tokens=1)``,
  as ``newsfold extract`` calls it.

CPU time is ``time.process_time`` around one call; with ``--repeat R`` each
call runs R times and the page's figure is the smallest of the R (the run least
disturbed by other work on the machine). Token F1 is
``newsfold.scoring.token_prf`` against the gold text, macro-averaged over the
pages, a failed extraction scoring 0, exactly as ``newsfold evaluate
--extraction`` does. Rows are given overall, per language (``lang`` of
pages.jsonl) and per source group (``source`` of ``truth/provenance.jsonl``:
the dev set's source datasets and its transplants).

``--per-page PATH`` writes each page's F1 per method; ``--compare PATH`` reads
such a file from an earlier run (another commit) and prints, per method, how
many pages got better or worse (by :data:`CHANGE` or more) and the sum of the
changes: what "N pages better, none worse" in docs/quality.md counts.

After the table, one line counts the pages by the path that gave newsfold its
text: trafilatura's fast mode, its full cascade (on doubt), the fallbacks
(the largest block of paragraphs, trafilatura's baseline) or ``none`` (every
method came back empty: a ``no_article`` rejection).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import trafilatura
from benchlib import percentiles
from trafilatura.utils import load_html

from newsfold.evaluate import load_truth
from newsfold.plugin.extract.article import PATHS as PATHS_ORDER
from newsfold.plugin.extract.article import Rejection, decode_html, extract_article
from newsfold.scoring import token_prf

MAX_BYTES = 10 * 1024 * 1024


def _lxml(html: str, url: str | None, lang: str | None) -> None:
    load_html(html)
    return None


def _trafilatura_default(html: str, url: str | None, lang: str | None) -> str | None:
    return trafilatura.extract(html, url=url, include_comments=False)


def _trafilatura_fast(html: str, url: str | None, lang: str | None) -> str | None:
    return trafilatura.extract(html, url=url, include_comments=False, fast=True)


#: how often each of newsfold's extraction paths produced the text (``extract_article``'s ``counts``)
PATHS: dict[str, int] = {}


def _newsfold(html: str, url: str | None, lang: str | None) -> str | None:
    art = extract_article(html, url=url, lang=lang, min_tokens=1, max_bytes=MAX_BYTES, counts=PATHS)
    return None if isinstance(art, Rejection) else art.text


#: name -> (function, whether it yields a text to score)
METHODS = {
    "lxml parse": (_lxml, False),
    "trafilatura default": (_trafilatura_default, True),
    "trafilatura fast": (_trafilatura_fast, True),
    "newsfold": (_newsfold, True),
}
BASELINE = "trafilatura default"


def load_pages(dev_dir: Path, limit: int | None) -> list[dict]:
    """The first ``limit`` pages of ``pages.jsonl`` that have a gold text, with language and source group."""
    truth = load_truth(dev_dir)
    gold = truth["extraction"]
    sources: dict[str, str] = {}
    provenance = dev_dir / "truth" / "provenance.jsonl"
    if provenance.is_file():
        with open(provenance, encoding="utf-8") as fh:
            sources = {str(r["id"]): r.get("source") or "-" for r in map(json.loads, filter(str.strip, fh))}
    pages = []
    with open(dev_dir / "pages.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            page_id = str(rec["id"])
            if page_id not in gold:
                continue
            pages.append(
                {
                    "id": page_id,
                    "url": rec.get("url"),
                    "lang": rec.get("lang"),
                    "source": sources.get(page_id, "-"),
                    "path": dev_dir / rec["html"],
                    "gold": gold[page_id],
                }
            )
            if limit is not None and len(pages) >= limit:
                break
    return pages


def run(pages: list[dict], methods: list[str], repeat: int) -> dict[str, dict[str, dict]]:
    """``{method: {page id: {"ms": cpu ms, "f1": token F1 or None}}}``."""
    results: dict[str, dict[str, dict]] = {m: {} for m in methods}
    for n, page in enumerate(pages):
        html = decode_html(page["path"].read_bytes(), max_bytes=MAX_BYTES)
        if isinstance(html, Rejection):
            html = ""
        order = methods[n % len(methods) :] + methods[: n % len(methods)]
        for name in order:
            func, scored = METHODS[name]
            best = float("inf")
            text = None
            for _ in range(repeat):
                start = time.process_time()
                try:
                    text = func(html, page["url"], page["lang"])
                except Exception:  # a method failing on a page scores 0 there, as a rejection would
                    text = None
                best = min(best, time.process_time() - start)
            f1 = (0.0 if text is None else token_prf(page["gold"], text)[2]) if scored else None
            results[name][page["id"]] = {"ms": best * 1000, "f1": f1}
    return results


def groups_of(pages: list[dict]) -> list[tuple[str, str, list[str]]]:
    """``(scope, group, page ids)``: everything, then each language, then each source group."""
    by_lang: dict[str, list[str]] = defaultdict(list)
    by_source: dict[str, list[str]] = defaultdict(list)
    for p in pages:
        by_lang[p["lang"] or "(none)"].append(p["id"])
        by_source[p["source"]].append(p["id"])
    out = [("overall", "all", [p["id"] for p in pages])]
    out += [("lang", k, v) for k, v in sorted(by_lang.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    out += [("source", k, v) for k, v in sorted(by_source.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    return out


def summarise(pages: list[dict], results: dict[str, dict[str, dict]]) -> list[dict]:
    """One row per (scope, group, method): pages, CPU ms median/p95/mean, mean relative to the baseline, F1."""
    rows = []
    for scope, group, ids in groups_of(pages):
        base = results.get(BASELINE)
        base_mean = sum(base[i]["ms"] for i in ids) / len(ids) if base else None
        for name, per_page in results.items():
            ms = [per_page[i]["ms"] for i in ids]
            stats = percentiles(ms, points=(50, 95))
            f1s = [per_page[i]["f1"] for i in ids]
            rows.append(
                {
                    "scope": scope,
                    "group": group,
                    "method": name,
                    "pages": len(ids),
                    "cpu_ms_median": stats["p50"],
                    "cpu_ms_p95": stats["p95"],
                    "cpu_ms_mean": stats["mean"],
                    "vs_default": stats["mean"] / base_mean if base_mean else None,
                    "f1": None if f1s[0] is None else sum(f1s) / len(f1s),
                }
            )
    return rows


def format_table(rows: list[dict]) -> str:
    """A plain-text table of :func:`summarise`'s rows."""
    headers = ["scope", "group", "method", "pages", "ms p50", "ms p95", "ms mean", "x default", "token F1"]
    cells = [headers]
    for r in rows:
        cells.append(
            [
                r["scope"],
                r["group"],
                r["method"],
                str(r["pages"]),
                f"{r['cpu_ms_median']:.1f}",
                f"{r['cpu_ms_p95']:.1f}",
                f"{r['cpu_ms_mean']:.1f}",
                "-" if r["vs_default"] is None else f"{r['vs_default']:.2f}",
                "-" if r["f1"] is None else f"{r['f1']:.4f}",
            ]
        )
    widths = [max(len(c[i]) for c in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(c.ljust(w) if i < 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dev_dir", type=Path, help="a folder with pages.jsonl and truth/extraction.jsonl")
    parser.add_argument("--pages", type=int, default=None, help="the first N pages with a gold text (default: all)")
    parser.add_argument("--repeat", type=int, default=1, help="calls per page and method; the fastest counts")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated subset of {list(METHODS)}")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--per-page", type=Path, help="write each page's token F1 per method here (JSON lines)")
    parser.add_argument("--compare", type=Path, help="a --per-page file of an earlier run: count pages better / worse")
    args = parser.parse_args(argv)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        parser.error(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    if args.repeat < 1:
        parser.error(f"--repeat must be at least 1, not {args.repeat}")
    pages = load_pages(args.dev_dir, args.pages)
    if not pages:
        parser.error(f"no page with a gold text in {args.dev_dir}")
    # one untimed call per method first: imports and caches warm up outside the figures
    for name in methods:
        METHODS[name][0]("<html><body><p>warm up</p></body></html>", None, None)
    PATHS.clear()
    start = time.process_time()
    results = run(pages, methods, args.repeat)
    rows = summarise(pages, results)
    print(
        f"{len(pages)} pages, repeat {args.repeat}, trafilatura {trafilatura.__version__}, "
        f"{time.process_time() - start:.1f} s CPU in all"
    )
    print(format_table(rows), end="")
    if PATHS:
        print(format_paths(PATHS, args.repeat), end="")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    scores = per_page(results)
    if args.per_page:
        args.per_page.write_text("".join(json.dumps(r) + "\n" for r in scores), encoding="utf-8")
    if args.compare:
        print(compare(scores, args.compare), end="")
    return 0


def format_paths(counts: dict[str, int], repeat: int) -> str:
    """One line: pages whose newsfold text came from each extraction path (``none``: every method came back empty)."""
    parts = [f"{name} {counts[name] // repeat}" for name in PATHS_ORDER if counts.get(name)]
    return "newsfold paths (pages): " + ", ".join(parts) + "\n"


def per_page(results: dict[str, dict[str, dict]]) -> list[dict]:
    """``{"id", "method", "f1"}`` for every scored page and method."""
    return [
        {"id": pid, "method": name, "f1": r["f1"]}
        for name, pages in results.items()
        for pid, r in pages.items()
        if r["f1"] is not None
    ]


#: a page whose F1 moved by less than this is unchanged in a comparison
CHANGE = 0.003


def compare(scores: list[dict], earlier: Path) -> str:
    """Per method: pages better and worse than in an earlier ``--per-page`` run, and the sum of the changes."""
    before = {}
    with open(earlier, encoding="utf-8") as fh:
        for line in filter(str.strip, fh):
            r = json.loads(line)
            before[(r["id"], r["method"])] = r["f1"]
    lines = [f"against {earlier} (a page changed when its F1 moved by {CHANGE} or more):"]
    for name in dict.fromkeys(r["method"] for r in scores):
        moves = [r["f1"] - before[(r["id"], name)] for r in scores if r["method"] == name and (r["id"], name) in before]
        better = sum(d >= CHANGE for d in moves)
        worse = sum(d <= -CHANGE for d in moves)
        lines.append(f"  {name}: {len(moves)} pages compared, {better} better, {worse} worse, sum {sum(moves):+.3f}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
