"""What provenance and the reader's fields cost: worker CPU per page, and top-stories and search p50.

    python benchmarks/provenance_cost.py [--dev DEV_DIR] [--pages 300] [--stories 150] [--requests 60] [--json OUT]

Each figure is a ratio of two variants measured interleaved in one run (a
shared machine is noisy), "with" being the code as it is and "without" the
same code with the provenance parts replaced by no-ops:

- **extraction CPU per page** (``--dev``: the first ``--pages`` dev pages;
  else the sample corpus): ``extract_article`` with and without
  ``page_signals`` + ``wire_credit`` (the picture and the wire credit), process
  CPU time, pages alternating between the variants;
- **worker CPU per page** (the same pages into the embedded stand-in, batches
  of 20, one process, each batch through both variants into two indices):
  ``sign_page`` and ``ingest`` with and without every provenance part (the
  picture and wire credit, the stored affix candidates and lede, and
  ``refresh_origins``, whose requests also cost the server: the wall time
  printed counts them);
- **p50 of** ``GET /api/stories?window=all`` and ``GET /api/search?q=WORD``
  through the web app, with and without the headline, snippet, picture and
  origin work (``learn_affixes``, ``dress_story``, the origin lookups).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path
from unittest import mock

from benchlib import machine, percentiles

from newsfold.embedded import services
from newsfold.plugin import ingest
from newsfold.plugin.client import build_client
from newsfold.plugin.extract.article import extract_article
from newsfold.plugin.extract.credits import PageSignals
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signed_page import Page, SignedPage
from newsfold.plugin.sign.signing import sign_page
from newsfold.samples.generator import generate
from newsfold.web import create_app
from newsfold.web.config import WebSettings


@contextlib.contextmanager
def no_extraction_provenance():
    """``extract_article`` without the picture and the wire credit."""
    with (mock.patch("newsfold.plugin.extract.article.page_signals", lambda tree, url=None: PageSignals()),
          mock.patch("newsfold.plugin.extract.article.wire_credit", lambda signals, text, url=None: None)):  # fmt: skip
        yield


@contextlib.contextmanager
def no_provenance():
    """Extraction, signing and ingest without any provenance or reader's-field work."""
    with (no_extraction_provenance(), mock.patch("newsfold.plugin.fold.batch.refresh_origins", lambda *a, **k: 0),
          mock.patch("newsfold.plugin.fold.document.title_affixes", lambda title: []),
          mock.patch("newsfold.plugin.fold.document.lede", lambda text: None)):  # fmt: skip
        yield


@contextlib.contextmanager
def no_display():
    """The web's lists without learned headlines, snippets and origins (what they cost before)."""

    def plain(story, versions, affixes, *, highlights=None):
        return story

    with (mock.patch("newsfold.web.actions.search_results.learn_affixes", lambda *a: {}),
          mock.patch("newsfold.web.actions.top_stories.learn_affixes", lambda *a: {}),
          mock.patch("newsfold.web.actions.search_results.dress_story", plain),
          mock.patch("newsfold.web.actions.search_results.headline_highlight", lambda *a: None),
          mock.patch("newsfold.web.actions.top_stories.dress_story", plain),
          mock.patch("newsfold.web.actions.top_stories._origin_versions", lambda es, settings, refs: {})):  # fmt: skip
        yield


def load_pages(dev: Path | None, limit: int, sample_dir: Path) -> list[dict]:
    """Page records with their bytes: the first ``limit`` dev pages, or the sample corpus."""
    folder = dev or sample_dir
    rows = [json.loads(line) for line in (folder / "pages.jsonl").read_text("utf-8").splitlines()][:limit]
    for r in rows:
        data = (folder / r["html"]).read_bytes()
        r["bytes"] = gzip.decompress(data) if r["html"].endswith(".gz") else data
    return rows


def extraction_cpu(pages: list[dict], rounds: int = 2) -> dict:
    """CPU ms per page of ``extract_article`` with and without the picture and wire credit, alternating."""
    spent = {"with": 0.0, "without": 0.0}
    for _ in range(rounds):
        for n, r in enumerate(pages):
            for variant in ("with", "without") if n % 2 else ("without", "with"):
                ctx = no_extraction_provenance() if variant == "without" else contextlib.nullcontext()
                with ctx:
                    start = time.process_time()
                    extract_article(r["bytes"], url=r.get("url"))
                    spent[variant] += time.process_time() - start
    count = len(pages) * rounds
    return {k: v / count * 1000 for k, v in spent.items()}


def worker_cpu(live: Settings, pages: list[dict], batch: int = 20) -> tuple[dict, dict]:
    """CPU and wall ms per page of what a worker does (sign, then ingest a batch) with and without provenance.

    Each batch is processed by both variants, each into its own index, in alternating order.
    """
    client = build_client(live)
    indices = {v: live.replace(index=f"{live.index}-{v}") for v in ("with", "without")}
    for settings in indices.values():
        ensure_index(client, settings)
    cpu, wall = {"with": 0.0, "without": 0.0}, {"with": 0.0, "without": 0.0}
    for n, start in enumerate(range(0, len(pages), batch)):
        for variant in ("with", "without") if n % 2 else ("without", "with"):
            settings = indices[variant]
            ctx = no_provenance() if variant == "without" else contextlib.nullcontext()
            with ctx:
                c0, w0 = time.process_time(), time.perf_counter()
                signed = []
                for r in pages[start : start + batch]:
                    page = Page(html=r["bytes"], url=r.get("url"), id=r["id"], site=r.get("site"),
                                lang=r.get("lang"), published=r.get("published"))  # fmt: skip
                    out = sign_page(page, settings)
                    if isinstance(out, SignedPage):
                        signed.append(out)
                ingest(signed, client=client, settings=settings)
                cpu[variant] += time.process_time() - c0
                wall[variant] += time.perf_counter() - w0
    for settings in indices.values():
        drop_index(client, settings)
    client.close()
    return ({k: v / len(pages) * 1000 for k, v in cpu.items()}, {k: v / len(pages) * 1000 for k, v in wall.items()})


def request_p50(live: Settings, sample_dir: Path, requests: int, word: str) -> dict:
    client = build_client(live)
    ensure_index(client, live)
    rows = [json.loads(line) for line in (sample_dir / "pages.jsonl").read_text("utf-8").splitlines()]
    signed = [s for r in rows if isinstance(s := sign_page(Page(
        html=(sample_dir / r["html"]).read_bytes(), url=r["url"], id=r["id"], site=r["site"], lang=r["lang"],
        published=r["published"]), live), SignedPage)]  # fmt: skip
    for start in range(0, len(signed), 50):
        ingest(signed[start : start + 50], client=client, settings=live)
    client.indices.refresh(index=live.index)
    app = create_app({"TESTING": True}, settings=live, web=WebSettings(page_size=10))
    web = app.test_client()
    targets = {"top stories": "/api/stories?window=all", f"search '{word}'": f"/api/search?q={word}"}
    times: dict[str, dict[str, list[float]]] = {t: {"with": [], "without": []} for t in targets}
    for name, url in targets.items():
        for _ in range(5):  # warm-up
            web.get(url)
        for n in range(requests):
            for variant in ("with", "without") if n % 2 else ("without", "with"):
                ctx = no_display() if variant == "without" else contextlib.nullcontext()
                with ctx:
                    start = time.perf_counter()
                    res = web.get(url)
                    times[name][variant].append((time.perf_counter() - start) * 1000)
                assert res.status_code == 200, res.get_json()
    drop_index(client, live)
    client.close()
    return {name: {v: percentiles(ms)["p50"] for v, ms in by.items()} for name, by in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dev", type=Path, help="the dev set folder (extraction CPU on real pages)")
    parser.add_argument("--pages", type=int, default=300)
    parser.add_argument("--stories", type=int, default=150, help="stories of the sample corpus")
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--word", default="council")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        sample_dir = Path(tmp)
        generate(sample_dir, stories=args.stories)
        pages = load_pages(args.dev, args.pages, sample_dir)
        extraction = extraction_cpu(pages)
        base = Settings.from_env().replace(index=f"provenance-cost-{uuid.uuid4().hex[:8]}")
        with services(base, announce=lambda m: print(m, file=sys.stderr)) as live:
            cpu, wall = worker_cpu(live, pages)
            p50 = request_p50(live, sample_dir, args.requests, args.word)
    print(machine())
    print("ms per page or request; ratio = with provenance / without")
    print(f"{'target':<40}{'with':>10}{'without':>10}{'ratio':>8}")
    where = " (dev)" if args.dev else " (samples)"
    rows = {"extraction CPU per page" + where: extraction,
            "worker CPU per page: sign + ingest" + where: cpu, "worker wall per page: sign + ingest" + where: wall,
            **{f"p50 {k}": v for k, v in p50.items()}}  # fmt: skip
    for name, f in rows.items():
        print(f"{name:<40}{f['with']:>10.2f}{f['without']:>10.2f}{f['with'] / f['without']:>8.3f}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "figures": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
