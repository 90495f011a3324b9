"""Screenshots of newsfold's main pages, at desktop and phone widths, into docs/screenshots/.

The same live setup as the browser tests (tests/system/browser/live.py): the sample
corpus (newsfold/samples/) is signed and ingested with ``plugin.fold.batch``
directly, as one recorded ingest job; the real Flask app is served on a free
local port; headless Chromium (Debian's ``chromium`` + ``chromedriver``) visits
each page. Servers come from ``ELASTICSEARCH_URL`` / ``REDIS_URL`` when set,
else the embedded stand-ins.

    python benchmarks/screenshots.py [--out docs/screenshots] [--stories 40] [--seed 7]
"""

from __future__ import annotations

import argparse
import base64
import getpass
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the browser helpers live in tests/system/browser
    sys.path.insert(0, str(ROOT))


from newsfold.embedded import services  # noqa: E402
from newsfold.plugin.client import build_client  # noqa: E402
from newsfold.plugin.extract.article import Rejection  # noqa: E402
from newsfold.plugin.fold.batch import ingest  # noqa: E402
from newsfold.plugin.fold.document import Outcome, Page  # noqa: E402
from newsfold.plugin.fold.index import drop_index, ensure_index  # noqa: E402
from newsfold.plugin.fold.rejections import record_rejections  # noqa: E402
from newsfold.plugin.settings import Settings  # noqa: E402
from newsfold.plugin.sign.signing import sign_page  # noqa: E402
from newsfold.samples import generate  # noqa: E402
from newsfold.samples.provenance import generate_provenance  # noqa: E402
from newsfold.state import build_redis  # noqa: E402
from newsfold.state.jobs import JobStore  # noqa: E402
from tests.system.browser.live import (  # noqa: E402
    DESKTOP,
    PHONE,
    LiveServer,
    browser,
    browser_missing,
    live_settings,
    live_web,
    log_in,
    resize_viewport,
)

BATCH = 10
#: full-page captures stop at this height (CSS pixels)
MAX_HEIGHT = 2400


def ingest_sample_corpus(settings: Settings, *, stories: int, seed: int) -> dict:
    """Generate the sample corpus and ingest it in batches as one ingest job; counts by outcome."""
    client = build_client(settings)
    ensure_index(client, settings)
    store = JobStore(build_redis(settings.redis_url))
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="newsfold-shots-") as tmp:
        pages_file = generate(Path(tmp), seed=seed, stories=stories)
        rows = [json.loads(line) for line in pages_file.read_text(encoding="utf-8").splitlines()]
        # the labelled provenance set adds stories of other agencies and forged credits to the sample corpus's
        # own and wire stories, so the origin badges show every kind
        extra = generate_provenance(Path(tmp) / "provenance", seed=seed, stories=24)
        for line in extra.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            rows.append({**row, "html": f"provenance/{row['html']}"})
        params = {"sources": ["sample corpus"], "index": settings.index, "archive": None, "batch_size": BATCH,
                  "user": getpass.getuser()}  # fmt: skip
        job = store.create("ingest", params=params, total=len(rows))
        store.start(job.id)
        for start in range(0, len(rows), BATCH):
            signed, outcomes = [], []
            for row in rows[start : start + BATCH]:
                page = Page(
                    html=(Path(tmp) / row["html"]).read_bytes(),
                    url=row.get("url"),
                    id=row["id"],
                    site=row.get("site"),
                    lang=row.get("lang"),
                    published=row.get("published"),
                )
                result = sign_page(page, settings)
                if isinstance(result, Rejection):
                    outcomes.append(Outcome(row["id"], "rejected", reason=result.reason, detail=result.detail))
                else:
                    signed.append(result)
            outcomes += ingest(signed, client=client, settings=settings)
            got = [o.as_dict() for o in outcomes]
            record_rejections(got, client=client, settings=settings, job_id=job.id)
            store.record(job.id, f"batch-{start // BATCH}", got)
            for o in got:
                counts[o["status"]] = counts.get(o["status"], 0) + 1
        store.finish(job.id, "done", message=f"{len(rows)} sample pages")
    client.close()
    return counts


def capture(driver, path: Path, *, full: bool = True) -> None:
    """Save the page as a PNG: the viewport, or the whole page up to ``MAX_HEIGHT`` pixels."""
    clip = None
    if full:
        width, height = driver.execute_script(
            "return [document.documentElement.clientWidth, document.documentElement.scrollHeight]"
        )
        clip = {"x": 0, "y": 0, "width": width, "height": min(height, MAX_HEIGHT), "scale": 1}
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": full, **({"clip": clip} if clip else {})}
    )
    path.write_bytes(base64.b64decode(shot["data"]))


#: draws a stand-in for each thumbnail: this machine is offline, so the news sites' pictures cannot load; the
#: stand-in is a data: URL (allowed by the content security policy), its colours derived from the picture's URL
_STAND_IN_PICTURES = """
for (const img of document.querySelectorAll('img.thumb')) {
  let h = 0;
  for (const c of img.src) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  const canvas = document.createElement('canvas');
  canvas.width = 224; canvas.height = 144;
  const g = canvas.getContext('2d');
  const sky = g.createLinearGradient(0, 0, 0, 144);
  sky.addColorStop(0, `hsl(${h % 360}, 55%, 72%)`); sky.addColorStop(1, `hsl(${(h >> 8) % 360}, 45%, 88%)`);
  g.fillStyle = sky; g.fillRect(0, 0, 224, 144);
  g.fillStyle = `hsl(${(h >> 4) % 360}, 35%, 38%)`;
  g.beginPath(); g.moveTo(0, 110); g.lineTo(60, 70 + h % 20); g.lineTo(120, 100); g.lineTo(180, 60 + (h >> 3) % 25);
  g.lineTo(224, 95); g.lineTo(224, 144); g.lineTo(0, 144); g.fill();
  img.loading = 'eager';
  img.src = canvas.toDataURL('image/png');
}
"""


def stand_in_pictures(driver) -> None:
    """Replace each thumbnail by a drawn stand-in (see :data:`_STAND_IN_PICTURES`) and wait until they are drawn."""
    driver.execute_script(_STAND_IN_PICTURES)
    driver.execute_script("return Promise.all([...document.images].map(i => i.decode().catch(() => null)))")


def largest_cluster(driver, base_url: str) -> str:
    """The id of the first (largest) cluster of the admin list."""
    from selenium.webdriver.common.by import By

    driver.get(base_url + "/admin/clusters")
    return driver.find_element(By.CSS_SELECTOR, '[data-testid="cluster-row"]').get_attribute("data-cluster-id")


def open_first_versions(driver) -> None:
    """Open the first story's "other versions" and bring it into view."""
    from selenium.webdriver.common.by import By

    summary = driver.find_element(By.CSS_SELECTOR, '[data-testid="versions-toggle"]')
    summary.click()
    driver.execute_script("arguments[0].closest('article').scrollIntoView({block: 'start'})", summary)


def story_with_additions(base_url: str) -> tuple[str, str | None]:
    """The first top story with a version that adds material, and that version (else the first story, None)."""
    import urllib.request

    def get(path: str) -> dict:
        with urllib.request.urlopen(base_url + path, timeout=30) as res:
            return json.loads(res.read())

    clusters = [s["cluster_id"] for s in get("/api/stories?window=all")["results"]]
    for cluster in clusters:
        versions = get(f"/api/stories/{cluster}")["versions"]
        adding = [v["id"] for v in versions if (v.get("relation") or {}).get("kind") in ("adds", "shorter_adds")]
        if adding:
            return cluster, adding[0]
    return clusters[0], None


def originals_site(base_url: str) -> str:
    """The site with the most stories of its own (the originals filter's screenshot)."""
    import urllib.request

    with urllib.request.urlopen(base_url + "/api/syndication?window=all", timeout=30) as res:
        rows = json.loads(res.read())["sites"]
    return max(rows, key=lambda r: (r["own_stories"], r["site"]))["site"]


def take_screenshots(base_url: str, out: Path) -> list[Path]:
    """Visit the main pages at each width and save one PNG per page and width."""
    saved: list[Path] = []
    with browser(DESKTOP) as driver:
        for width_name, size in (("desktop", DESKTOP), ("phone", PHONE)):
            resize_viewport(driver, size)
            driver.execute_cdp_cmd("Network.clearBrowserCookies", {})

            def shot(name: str, url: str | None = None, *, full: bool = True, width_name=width_name) -> None:
                if url is not None:
                    driver.get(base_url + url)
                stand_in_pictures(driver)
                path = out / f"{name}-{width_name}.png"
                capture(driver, path, full=full)
                saved.append(path)

            shot("top-stories", "/")  # the home page: the window that fills a page (web/home.py)
            shot("originals", f"/?window=all&site={originals_site(base_url)}&originals=1")
            cluster, adding = story_with_additions(base_url)
            shot("story", f"/stories/{cluster}")
            if adding:
                shot("version", f"/stories/{cluster}/versions/{adding}")
            shot("search", "/?sort=date")
            driver.get(base_url + "/?sort=date")
            open_first_versions(driver)
            shot("versions", full=False)
            shot("login", "/login", full=False)
            log_in(driver, base_url, next_path="/admin")
            shot("admin", "/admin")
            cluster = largest_cluster(driver, base_url)
            shot("queue", "/admin/clusters?sort=weakest")
            shot("cluster", f"/admin/clusters/{cluster}")
            shot("compare", f"/admin/clusters/{cluster}/compare")
            shot("stats", "/admin/stats")
            shot("jobs", "/admin/jobs")
    return saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--stories", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    missing = browser_missing()
    if missing:
        print(f"screenshots: {missing}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    base = Settings.from_env().replace(index=f"newsfold-shots-{uuid.uuid4().hex[:8]}")
    with services(base, announce=lambda m: print(m, file=sys.stderr)) as settings:
        began = time.perf_counter()
        counts = ingest_sample_corpus(settings, stories=args.stories, seed=args.seed)
        print(f"ingested the sample corpus in {time.perf_counter() - began:.1f} s: {counts}", file=sys.stderr)
        # the originals screenshot picks its site from /api/syndication, which needs a login unless opened
        server = LiveServer(live_settings(settings, settings.redis_url), live_web(public_syndication=True))
        try:
            began = time.perf_counter()
            saved = take_screenshots(server.url, args.out)
        finally:
            server.close()
            client = build_client(settings)
            drop_index(client, settings)
            client.close()
    print(f"{len(saved)} screenshots in {time.perf_counter() - began:.1f} s:", file=sys.stderr)
    for path in saved:
        print(f"  {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {path.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
