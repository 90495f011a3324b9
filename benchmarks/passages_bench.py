"""The size of the passage keys (``newsfold.passages``) in layouts 2 and 3, and that both give the same relations.

    python benchmarks/passages_bench.py DEV_DIR [--limit 300] [--cache FILE] [--json OUT]

Signs up to ``--limit`` dev pages as ingest does (``sign_page``; pages of
stories with two or more pages in ``truth/clusters.jsonl`` first, so there
are pairs to compare; ``--cache FILE`` keeps the signed pages between runs).
For each page it writes the keys in layout 3 (what ingest stores,
``Layout.stored``) and in layout 2 (the text form stored before), and
reports the mean bytes of the JSON value as Elasticsearch keeps it in
``_source`` (the client's compact separators) and as ``json.dumps`` writes it
by default (``storage_bench.py`` counts so).

Then every ordered pair of pages of one story (one the reference, the other
the version) is compared with ``novelty.relation`` from the layout 2 keys,
the layout 3 keys and both mixed: any difference is counted (it must be 0).
It also tells what 24-bit passage hashes would have given: the relations
that change when both sides keep only their hashes' top 24 bits, and the
expected number of false passage matches (a passage of one side taken for
one of the other) per comparison at 24 and at 32 bits.
Pure: no server is contacted; nothing is written into the dev folder.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
from collections import defaultdict
from itertools import permutations
from pathlib import Path

from benchlib import headline, machine, write_json

from newsfold.indexer.sources.jsonl import iter_jsonl
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.novelty import compare, relation
from newsfold.plugin.sign.passages import Layout
from newsfold.plugin.sign.signed_page import Page, SignedPage
from newsfold.plugin.sign.signing import sign_page


def v2_form(layout: Layout) -> dict:
    """The keys as layout 2 stored them (``Layout.of_stored`` still reads them)."""
    return {
        "v": 2,
        "chunks": " ".join(f"{h:08x}:{n}" for h, n in layout.chunks),
        "sentences": [" ".join(map(str, p)) for p in layout.shape],
    }


def signed_pages(dev_dir: Path, limit: int, cache: Path | None) -> tuple[list[SignedPage], dict[str, str]]:
    """Up to ``limit`` signed dev pages (stories of two or more pages first), and each page's story."""
    story = {r["id"]: r["cluster"] for r in map(json.loads, (dev_dir / "truth" / "clusters.jsonl").open())}
    if cache and cache.exists():
        return pickle.loads(cache.read_bytes()), story
    sizes: dict[str, int] = defaultdict(int)
    for cluster in story.values():
        sizes[cluster] += 1
    records = [r for r in iter_jsonl(dev_dir / "pages.jsonl") if r.html is not None]
    records.sort(key=lambda r: sizes.get(story.get(r.id, ""), 0) < 2)  # stable: file order inside each group
    settings, signed = Settings(), []
    for rec in records:
        if len(signed) >= limit:
            break
        page = Page(html=rec.html, url=rec.url, id=rec.id, site=rec.site, lang=rec.lang, published=rec.published)
        result = sign_page(page, settings)
        if isinstance(result, SignedPage) and result.passages:
            signed.append(result)
    if cache:
        cache.write_bytes(pickle.dumps(signed))
    return signed, story


def truncated(layout: Layout, bits: int) -> Layout:
    return Layout(layout.shape, tuple((h >> (32 - bits), n) for h, n in layout.chunks))


def run(dev_dir: Path, limit: int, cache: Path | None) -> dict:
    pages, story = signed_pages(dev_dir, limit, cache)
    layouts = {p.page_id: Layout.of_stored(p.passages) for p in pages}
    assert all(layouts.values()), "every signed page's keys read back"

    def size(value: dict, compact: bool) -> int:
        separators = (",", ":") if compact else None
        return len(json.dumps(value, ensure_ascii=False, separators=separators).encode("utf-8"))

    forms = {pid: {2: v2_form(lay), 3: lay.stored()} for pid, lay in layouts.items()}
    out: dict = {"pages": len(pages), "bytes": {}}
    for v in (2, 3):
        for compact in (True, False):
            sizes = [size(f[v], compact) for f in forms.values()]
            out["bytes"][f"v{v}{' compact' if compact else ''}"] = {
                "mean": statistics.fmean(sizes), "median": statistics.median(sizes), "max": max(sizes)}  # fmt: skip
    counts = [len(lay.chunks) for lay in layouts.values()]
    out["passages_per_page"] = {"mean": statistics.fmean(counts), "max": max(counts)}
    by_story: dict[str, list[str]] = defaultdict(list)
    for pid in layouts:
        by_story[story.get(pid, pid)].append(pid)
    pairs = differ = differ_24 = 0
    kinds: dict[str, int] = defaultdict(int)
    expected = {24: 0.0, 32: 0.0}
    for members in by_story.values():
        for ref, ver in permutations(members, 2):
            pairs += 1
            found = relation(forms[ref][3], forms[ver][3])
            kinds[found.kind] += 1
            others = [relation(forms[ref][a], forms[ver][b]) for a, b in ((2, 2), (2, 3), (3, 2))]
            differ += any(r != found for r in others)
            differ_24 += compare(truncated(layouts[ref], 24), truncated(layouts[ver], 24)) != found
            r_set, v_set = {h for h, _ in layouts[ref].chunks}, {h for h, _ in layouts[ver].chunks}
            # false matches: a version passage the reference lacks colliding with one it has, and the other way
            candidates = len(v_set - r_set) * len(r_set) + len(r_set - v_set) * len(v_set)
            for bits in expected:
                expected[bits] += candidates / 2**bits
    out["pairs"] = {
        "compared": pairs,
        "kinds": dict(kinds),
        "v2_v3_mixed_differ": differ,
        "differ_with_24_bit_hashes": differ_24,
        "expected_false_matches_per_comparison": {b: e / max(pairs, 1) for b, e in expected.items()},
    }
    return out


def report(result: dict) -> str:
    lines = [headline("passage keys", result["machine"]), f"{result['pages']} signed dev pages", ""]
    lines.append(f"{'JSON of newsfold.passages':28s} {'mean B':>8s} {'median B':>9s} {'max B':>8s}")
    for name, b in result["bytes"].items():
        lines.append(f"{name:28s} {b['mean']:8.0f} {b['median']:9.0f} {b['max']:8d}")
    p, q = result["passages_per_page"], result["pairs"]
    lines += [
        f"passages per page: mean {p['mean']:.0f}, max {p['max']}",
        f"{q['compared']} ordered pairs of one story compared: {q['kinds']}",
        f"relations differing between layouts 2, 3 and mixed: {q['v2_v3_mixed_differ']}",
        f"relations changed by 24-bit hashes: {q['differ_with_24_bit_hashes']}",
        "expected false passage matches per comparison: "
        + ", ".join(f"{e:.2e} at {b} bits" for b, e in q["expected_false_matches_per_comparison"].items()),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dev_dir", type=Path)
    ap.add_argument("--limit", type=int, default=300, help="pages signed at most (default 300)")
    ap.add_argument("--cache", type=Path, help="a pickle of the signed pages, written once and read after")
    ap.add_argument("--json", type=Path, help="write the result here as JSON")
    args = ap.parse_args(argv)
    result = {"machine": machine(), **run(args.dev_dir, args.limit, args.cache)}
    print(report(result))
    if args.json:
        write_json(args.json, result)
    return 1 if result["pairs"]["v2_v3_mixed_differ"] else 0


if __name__ == "__main__":
    sys.exit(main())
