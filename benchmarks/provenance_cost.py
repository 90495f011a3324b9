"""What provenance and the reader's fields cost: worker CPU per page, and top-stories and search p50.

    python benchmarks/provenance_cost.py [--dev DEV_DIR] [--pages 300] [--stories 150] [--requests 60] [--json OUT]

Each figure is a ratio of two variants measured interleaved in one run (a
shared machine is noisy), "with" being the code as it is and "without" the
same code with the provenance parts replaced by no-ops:

- **extraction CPU per page** (``--dev``: the first ``--pages`` dev pages;
  else the sample corpus): ``extract_article`` with and without
  ``page_signals`` + ``wire_credit`` (the picture and the wire credit), process
  CPU time, pages alternating between the variants;
- **ingest CPU per page** (the sample corpus into the embedded stand-in, batches
  of 20, one process): signing and ``ingest`` with and without
  ``refresh_origins`` (which also reads and writes on the server: its requests
  are counted in the wall time printed);
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
from newsfold.plugin.document import Page, SignedPage
from newsfold.plugin.extract import extract_article
from newsfold.plugin.extract_credits import PageSignals
from newsfold.plugin.index import drop_index, ensure_index
from newsfold.plugin.settings import Settings
from newsfold.plugin.signing import sign_page
from newsfold.samples.generator import generate
from newsfold.web import create_app
from newsfold.web.config import WebSettings


@contextlib.contextmanager
def no_extraction_provenance():
    """``extract_article`` without the picture and the wire credit."""
    with (mock.patch("newsfold.plugin.extract.page_signals", lambda tree, url=None: PageSignals()),
          mock.patch("newsfold.plugin.extract.wire_credit", lambda signals, text, url=None: None)):  # fmt: skip
        yield


@contextlib.contextmanager
def no_origins():
    with mock.patch("newsfold.plugin.batch.refresh_origins", lambda *a, **k: 0):
        yield


@contextlib.contextmanager
def no_display():
    """The web's lists without learned headlines, snippets and origins (what they cost before)."""

    def plain(story, versions, affixes, *, highlights=None):
        return story

    with (mock.patch("newsfold.web.stories.learn_affixes", lambda *a: {}),
          mock.patch("newsfold.web.top_stories.learn_affixes", lambda *a: {}),
          mock.patch("newsfold.web.stories.dress_story", plain),
          mock.patch("newsfold.web.stories.headline_highlight", lambda *a: None),
          mock.patch("newsfold.web.top_stories.dress_story", plain),
          mock.patch("newsfold.web.top_stories._origin_versions", lambda es, settings, refs: {})):  # fmt: skip
        yield


def load_pages(dev: Path | None, limit: int, sample_dir: Path) -> list[tuple[bytes, str | None]]:
    if dev is None:
        rows = [json.loads(line) for line in (sample_dir / "pages.jsonl").read_text("utf-8").splitlines()]
        return [((sample_dir / r["html"]).read_bytes(), r["url"]) for r in rows][:limit]
    rows = [json.loads(line) for line in (dev / "pages.jsonl").read_text("utf-8").splitlines()][:limit]
    out = []
    for r in rows:
        data = (dev / r["html"]).read_bytes()
        out.append((gzip.decompress(data) if r["html"].endswith(".gz") else data, r.get("url")))
    return out


def extraction_cpu(pages: list[tuple[bytes, str | None]], rounds: int = 2) -> dict:
    spent = {"with": 0.0, "without": 0.0}
    for _ in range(rounds):
        for n, (data, url) in enumerate(pages):
            for variant in (("with", "without") if n % 2 else ("without", "with")):
                ctx = no_extraction_provenance() if variant == "without" else contextlib.nullcontext()
                with ctx:
                    start = time.process_time()
                    extract_article(data, url=url)
                    spent[variant] += time.process_time() - start
    count = len(pages) * rounds
    return {k: v / count * 1000 for k, v in spent.items()}


def ingest_cpu(live: Settings, sample_dir: Path) -> tuple[dict, dict]:
    rows = [json.loads(line) for line in (sample_dir / "pages.jsonl").read_text("utf-8").splitlines()]
    client = build_client(live)
    cpu, wall = {"with": 0.0, "without": 0.0}, {"with": 0.0, "without": 0.0}
    for variant in ("without", "with", "without", "with"):
        settings = live.replace(index=f"{live.index}-{variant}-{uuid.uuid4().hex[:4]}")
        ensure_index(client, settings)
        ctx = no_origins() if variant == "without" else contextlib.nullcontext()
        with ctx:
            c0, w0 = time.process_time(), time.perf_counter()
            batch: list[SignedPage] = []
            for r in rows:
                page = Page(html=(sample_dir / r["html"]).read_bytes(), url=r["url"], id=r["id"], site=r["site"],
                            lang=r["lang"], published=r["published"])  # fmt: skip
                signed = sign_page(page, settings)
                if isinstance(signed, SignedPage):
                    batch.append(signed)
                if len(batch) == 20:
                    ingest(batch, client=client, settings=settings)
                    batch = []
            if batch:
                ingest(batch, client=client, settings=settings)
            cpu[variant] += time.process_time() - c0
            wall[variant] += time.perf_counter() - w0
        drop_index(client, settings)
    client.close()
    pages = len(rows) * 2
    return ({k: v / pages * 1000 for k, v in cpu.items()}, {k: v / pages * 1000 for k, v in wall.items()})


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
            for variant in (("with", "without") if n % 2 else ("without", "with")):
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
        extraction = extraction_cpu(load_pages(args.dev, args.pages, sample_dir))
        base = Settings.from_env().replace(index=f"provenance-cost-{uuid.uuid4().hex[:8]}")
        with services(base, announce=lambda m: print(m, file=sys.stderr)) as live:
            cpu, wall = ingest_cpu(live, sample_dir)
            p50 = request_p50(live, sample_dir, args.requests, args.word)
    print(machine())
    print("ms per page or request; ratio = with provenance / without")
    print(f"{'target':<40}{'with':>10}{'without':>10}{'ratio':>8}")
    rows = {"extraction CPU per page" + (" (dev)" if args.dev else " (samples)"): extraction,
            "sign + ingest CPU per page (samples)": cpu, "sign + ingest wall per page (samples)": wall,
            **{f"p50 {k}": v for k, v in p50.items()}}  # fmt: skip
    for name, f in rows.items():
        print(f"{name:<40}{f['with']:>10.2f}{f['without']:>10.2f}{f['with'] / f['without']:>8.3f}")
    if args.json:
        args.json.write_text(json.dumps({"machine": machine(), "figures": rows}, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
