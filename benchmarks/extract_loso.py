"""Leave-one-source-out check of extraction rules: does a rule's gain hold on sources it was not tuned on?

    python benchmarks/extract_loso.py ../shared/data/dev [--rules fallback,trim_edges] [--pages N]
        [--markdown]

Each rule is a switch or a threshold of newsfold's extraction with an "off"
setting (the rule absent) and one or more "on" settings (the values a
threshold may take). Every setting is run over the same dev pages; then, for
each source of the dev set (``source`` in ``truth/provenance.jsonl``) held
out in turn, the "on" setting with the best macro token F1 on the *other*
sources is chosen, and its F1 on the held-out source is compared with the
"off" setting's there. A rule is kept only when its tuned setting does not
lose on any held-out source (by any amount) and helps the
total. The token F1 is ``newsfold.scoring.token_prf``, a failed extraction
scoring 0, as in ``extract_bench.py``.

Settings are module attributes patched for the run (thresholds, or a
step replaced by the identity to switch it off); nothing is patched outside
this process.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

from extract_bench import MAX_BYTES, load_pages

from newsfold.plugin.extract.article import Rejection, decode_html, extract_article
from newsfold.scoring import token_prf

_NEVER = re.compile(r"(?!)")  # a pattern that matches nothing


def _identity_text(text, *args, **kwargs):
    return text


def _no_cleanup(tree, *args, **kwargs):
    return 0


def _no_recovery(tree, text, *, runs=None):
    return text


#: rule -> (off setting, {label: on setting}); a setting is a list of (module, attribute, value)
RULES: dict[str, tuple[list, dict[str, list]]] = {
    # the parts of trim_edges, each switched off alone (a pattern that never matches)
    "edges_links": ([("newsfold.plugin.extract.edges", "_EDGE_LINK_SHARE", 2.0)], {"on": []}),
    "edges_date_bars": ([("newsfold.plugin.extract.edges", "_DATE_BAR", _NEVER)], {"on": []}),
    "edges_skip_links": ([("newsfold.plugin.extract.edges", "_SKIP_LINK", _NEVER)], {"on": []}),
    "edges_most_read": ([("newsfold.plugin.extract.edges", "_MOST_READ", _NEVER)], {"on": []}),
    "fallback": (
        [("newsfold.plugin.extract.article", "_FALLBACKS", ())],
        {"paragraphs, baseline": []},
    ),
    "fallback_share": (
        [],
        {
            f"share {share}": [("newsfold.plugin.extract.article", "FALLBACK_SHARE", share)]
            for share in (0.05, 0.1, 0.15, 0.2, 0.3)
        },
    ),
    "trim_edges": (
        [("newsfold.plugin.extract.article", "trim_edges", _identity_text)],
        {"on": []},
    ),
    "recover_dropped_blocks": (
        [("newsfold.plugin.extract.article", "recover_dropped_blocks", _no_recovery)],
        {"on": []},
    ),
    "drop_layout_rows": (
        [("newsfold.plugin.extract.article", "drop_layout_rows", _identity_text)],
        {"on": []},
    ),
    "drop_headline": (
        [("newsfold.plugin.extract.article", "drop_headline", _identity_text)],
        {"on": []},
    ),
    "clean_tree": (
        [("newsfold.plugin.extract.article", "clean_tree", _no_cleanup)],
        {"on": []},
    ),
    "unwrap_page_wrappers": (
        [("newsfold.plugin.extract.article", "unwrap_page_wrappers", _no_cleanup)],
        {"on": []},
    ),
    "teaser_lists": (
        [("newsfold.plugin.extract.cleanup", "_teaser_lists", lambda tree, total: [])],
        {"on": []},
    ),
    "second_opinion_share": (
        [],
        {
            f"share {share}": [("newsfold.plugin.extract.blocks", "_MIN_PROSE_SHARE", share)]
            for share in (0.15, 0.2, 0.3, 0.4)
        },
    ),
}




def _patched(setting: list):
    """Apply a setting; return what to restore."""
    saved = []
    for module_name, attr, value in setting:
        module = importlib.import_module(module_name)
        saved.append((module, attr, getattr(module, attr)))
        setattr(module, attr, value)
    return saved


def run_setting(pages: list[dict], htmls: dict[str, str], setting: list) -> tuple[dict[str, float], dict[str, int]]:
    """Per-page token F1 under one setting, and how often each extraction path was taken."""
    saved = _patched(setting)
    counts: dict[str, int] = {}
    try:
        scores = {}
        for page in pages:
            art = extract_article(
                htmls[page["id"]], url=page["url"], lang=page["lang"], min_tokens=1, max_bytes=MAX_BYTES, counts=counts
            )
            text = None if isinstance(art, Rejection) else art.text
            scores[page["id"]] = 0.0 if text is None else token_prf(page["gold"], text)[2]
    finally:
        for module, attr, value in reversed(saved):
            setattr(module, attr, value)
    return scores, counts


def _mean(scores: dict[str, float], ids: list[str]) -> float:
    return sum(scores[i] for i in ids) / len(ids) if ids else 0.0


def loso(pages: list[dict], off: dict[str, float], on: dict[str, dict[str, float]]) -> list[dict]:
    """One row per held-out source: the setting tuned on the other sources and both F1 on the held-out one."""
    by_source: dict[str, list[str]] = defaultdict(list)
    for p in pages:
        by_source[p["source"]].append(p["id"])
    rows = []
    for held, ids in sorted(by_source.items()):
        rest = [i for s, other in by_source.items() if s != held for i in other]
        label = max(on, key=lambda name: _mean(on[name], rest))
        rows.append(
            {
                "held_out": held,
                "pages": len(ids),
                "tuned": label,
                "off": _mean(off, ids),
                "on": _mean(on[label], ids),
                "pages_better": sum(on[label][i] - off[i] >= 0.003 for i in ids),
                "pages_worse": sum(off[i] - on[label][i] >= 0.003 for i in ids),
            }
        )
    every = [p["id"] for p in pages]
    best = max(on, key=lambda name: _mean(on[name], every))
    rows.append(
        {
            "held_out": "(all, tuned on all)",
            "pages": len(every),
            "tuned": best,
            "off": _mean(off, every),
            "on": _mean(on[best], every),
            "pages_better": sum(on[best][i] - off[i] >= 0.003 for i in every),
            "pages_worse": sum(off[i] - on[best][i] >= 0.003 for i in every),
        }
    )
    return rows


def verdict(rows: list[dict]) -> str:
    """``keep`` when no held-out source loses and the total gains, else why not."""
    losers = [r["held_out"] for r in rows[:-1] if r["on"] < r["off"]]  # any loss on a held-out source vetoes
    if losers:
        return "drop: loses on held-out " + ", ".join(losers)
    if rows[-1]["on"] <= rows[-1]["off"]:
        return "drop: no gain in total"
    return "keep"


def format_rows(rule: str, rows: list[dict], markdown: bool) -> str:
    header = ["held-out source", "pages", "tuned on the others", "F1 off", "F1 on", "change", "better", "worse"]
    cells = [
        [
            r["held_out"],
            str(r["pages"]),
            r["tuned"],
            f"{r['off']:.4f}",
            f"{r['on']:.4f}",
            f"{r['on'] - r['off']:+.4f}",
            str(r["pages_better"]),
            str(r["pages_worse"]),
        ]
        for r in rows
    ]
    out = [f"rule {rule}: {verdict(rows)}"]
    if markdown:
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(c) + " |" for c in cells]
    else:
        widths = [max(len(x) for x in col) for col in zip(header, *cells, strict=True)]
        for row in [header, *cells]:
            out.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dev_dir", type=Path, help="a folder with pages.jsonl, truth/extraction.jsonl, provenance")
    parser.add_argument("--rules", default=",".join(RULES), help=f"comma-separated subset of {list(RULES)}")
    parser.add_argument("--pages", type=int, default=None, help="the first N pages with a gold text (default: all)")
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    args = parser.parse_args(argv)
    rules = [r.strip() for r in args.rules.split(",") if r.strip()]
    unknown = [r for r in rules if r not in RULES]
    if unknown or not rules:
        parser.error(f"unknown rule(s) {unknown}; choose from {list(RULES)}")
    pages = load_pages(args.dev_dir, args.pages)
    if not pages:
        parser.error(f"no page with a gold text in {args.dev_dir}")
    htmls = {}
    for page in pages:
        html = decode_html(page["path"].read_bytes(), max_bytes=MAX_BYTES)
        htmls[page["id"]] = "" if isinstance(html, Rejection) else html
    cache: dict[str, tuple[dict, dict]] = {}  # one run per distinct setting (the defaults are shared)

    def scores_of(setting: list) -> dict[str, float]:
        key = repr(setting)
        if key not in cache:
            start = time.process_time()
            cache[key] = run_setting(pages, htmls, setting)
            print(f"  ran {setting or 'the defaults'}: {time.process_time() - start:.0f} s, paths {cache[key][1]}")
        return cache[key][0]

    for rule in rules:
        off, on = RULES[rule]
        rows = loso(pages, scores_of(off), {label: scores_of(s) for label, s in on.items()})
        print(format_rows(rule, rows, args.markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
