"""The ``newsfold`` command line: demo, extract, cluster, evaluate, worker, web, init-index."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm import tqdm

from plugin.settings import Settings

log = logging.getLogger("newsfold")


def _settings(args) -> Settings:
    try:
        return Settings.from_env()
    except ValueError as exc:
        raise SystemExit(f"newsfold: configuration error: {exc}") from None


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]


# ---------------------------------------------------------------- extract
def _extract_one(payload: dict) -> dict:
    from plugin.extract import Rejection, extract_article

    settings = Settings.from_env()
    try:
        with open(payload["html_path"], "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return {"id": payload["id"], "error": f"unreadable: cannot read {payload['html_path']}: {exc.strerror}"}
    try:
        art = extract_article(
            data,
            url=payload.get("url"),
            lang=payload.get("lang"),
            min_tokens=1,
            max_bytes=settings.max_page_bytes,
            cleanup=settings.cleanup,
        )
    except Exception as exc:  # per-page boundary
        return {"id": payload["id"], "error": f"internal_error: {type(exc).__name__}: {exc}"}
    if isinstance(art, Rejection):
        return {"id": payload["id"], "error": art.message()}
    return {"id": payload["id"], "title": art.title, "text": art.text, "lang": art.lang}


def cmd_extract(args) -> int:
    from newsfold.pages import read_pages

    rows = list(read_pages(Path(args.pages)))
    jobs = [r.payload for r in rows if r.payload]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        results = iter(
            tqdm(
                pool.map(_extract_one, jobs, chunksize=4),
                total=len(jobs),
                desc="extract",
                unit="page",
                disable=args.quiet,
            )
        )
        errors = 0
        with open(args.out, "w", encoding="utf-8") as out:
            for row in rows:
                rec = next(results) if row.payload else {"id": row.id, "error": row.error}
                errors += "error" in rec
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"extracted {len(rows) - errors} of {len(rows)} pages ({errors} errors) -> {args.out}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- ingest through workers
@contextlib.contextmanager
def _pipeline(settings: Settings, workers: int):
    """Servers (embedded when no URL is set) and local Celery workers."""
    from indexer.celery_app import make_celery
    from newsfold.embedded import services
    from newsfold.errors import check_servers
    from newsfold.workers import LocalWorkers

    with services(settings, announce=lambda m: print(m, file=sys.stderr)) as live:
        check_servers(live)
        app = make_celery(live)
        with LocalWorkers(live, workers) as pool:
            pool.wait_ready(app)
            yield live, app


def _ingest(app, live: Settings, payloads: list[dict], *, index: str, quiet: bool) -> list[dict]:
    from newsfold.workers import run_batches

    bar = tqdm(total=len(payloads), desc="ingest", unit="page", disable=quiet)
    try:
        return run_batches(
            app, _chunks(payloads, live.batch_size), index=index, on_done=lambda got: bar.update(len(got))
        )
    finally:
        bar.close()


def _summary(outcomes: list[dict]) -> str:
    from collections import Counter

    status = Counter(o["status"] for o in outcomes)
    reasons = Counter(o.get("reason") for o in outcomes if o["status"] == "rejected")
    parts = [f"{status.get(k, 0)} {k}" for k in ("new", "duplicate", "unchanged", "rejected")]
    text = ", ".join(parts)
    if reasons:
        text += " (" + ", ".join(f"{r}: {n}" for r, n in reasons.most_common()) + ")"
    return text


def cmd_cluster(args) -> int:
    from newsfold.pages import read_pages
    from plugin.client import build_client
    from plugin.dedup import current_clusters
    from plugin.index import drop_index, ensure_index

    settings = _settings(args)
    index = args.index or f"newsfold-cluster-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    rows = list(read_pages(Path(args.pages)))
    payloads = [r.payload for r in rows if r.payload]
    started = time.perf_counter()
    with _pipeline(settings, args.workers) as (live, app):
        live = live.replace(index=index)
        client = build_client(live)
        drop_index(client, live)  # a fresh index every run
        ensure_index(client, live)
        outcomes = _ingest(app, live, payloads, index=index, quiet=args.quiet)
        by_id = {o["page_id"]: o for o in outcomes}
        final = {}
        for chunk in _chunks([r.id for r in rows if r.payload], 1000):
            final.update(current_clusters(chunk, client=client, settings=live))
    elapsed = time.perf_counter() - started
    with open(args.out, "w", encoding="utf-8") as out:
        for row in rows:
            rec: dict = {"id": row.id, "cluster": None}
            if row.error:
                rec["error"] = row.error
            elif final.get(row.id):
                rec["cluster"] = final[row.id]
            else:
                o = by_id.get(row.id, {})
                rec["error"] = f"{o.get('reason', 'missing')}: {o.get('detail', 'no outcome recorded')}"
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(
        f"{len(rows)} pages in {elapsed:.1f} s ({len(rows) / max(elapsed, 1e-9):.1f} pages/s): "
        f"{_summary(outcomes)}; index {index}",
        file=sys.stderr,
    )
    return 0


# ---------------------------------------------------------------- ingest
def cmd_ingest(args) -> int:
    """Stream a JSONL page list, a directory tree or WARC files into the index through the workers."""
    import base64
    from collections import Counter

    from indexer.archive import WarcArchive
    from indexer.sources import SourceStats, count_hint, iter_source
    from plugin.client import build_client
    from plugin.index import ensure_index

    settings = _settings(args)
    archive_dir = args.archive or settings.archive_dir
    totals: Counter = Counter()
    reasons: Counter = Counter()
    stats = SourceStats()
    hint = sum(count_hint(Path(p)) or 0 for p in args.sources) or None
    out = open(args.out, "w", encoding="utf-8") if args.out else None  # noqa: SIM115 (closed below)
    started = time.perf_counter()
    bar = tqdm(total=hint, desc="ingest", unit="page", disable=args.quiet)

    def record(outcome: dict) -> None:
        totals[outcome["status"]] += 1
        if outcome["status"] == "rejected":
            reasons[outcome.get("reason") or "unknown"] += 1
        if out:
            out.write(json.dumps(outcome, ensure_ascii=False) + "\n")
        bar.update(1)

    try:
        with _pipeline(settings, args.workers) as (live, app):
            index = args.index or live.index
            ensure_index(build_client(live), live.replace(index=index))
            archive = WarcArchive(Path(archive_dir)) if archive_dir else None

            def batches():
                batch: list[dict] = []
                for source in args.sources:
                    for rec in iter_source(Path(source), stats=stats):
                        if rec.error:
                            record(
                                {
                                    "page_id": rec.id,
                                    "origin": rec.origin,
                                    "status": "rejected",
                                    "reason": "unreadable",
                                    "detail": rec.error,
                                }
                            )
                            continue
                        payload = rec.meta()
                        if archive is not None:
                            payload["archive"] = archive.append(rec).as_dict()
                        else:
                            payload["html_b64"] = base64.b64encode(rec.html or b"").decode("ascii")
                        batch.append(payload)
                        if len(batch) >= live.batch_size:
                            yield batch
                            batch = []
                if batch:
                    yield batch

            from newsfold.workers import run_batches

            try:
                run_batches(app, batches(), index=index, collect=False, on_done=lambda got: [record(o) for o in got])
            finally:
                if archive is not None:
                    archive.close()
    finally:
        bar.close()
        if out:
            out.close()
    elapsed = time.perf_counter() - started
    pages = sum(totals.values())
    text = ", ".join(f"{totals.get(k, 0)} {k}" for k in ("new", "duplicate", "unchanged", "rejected"))
    if reasons:
        text += " (" + ", ".join(f"{r}: {n}" for r, n in reasons.most_common()) + ")"
    skipped = f"; skipped {stats.skipped_total} non-page records" if stats.skipped_total else ""
    print(
        f"{pages} pages in {elapsed:.1f} s ({pages / max(elapsed, 1e-9):.1f} pages/s): {text}{skipped}", file=sys.stderr
    )
    return 0


# ---------------------------------------------------------------- demo
def cmd_demo(args) -> int:
    from newsfold.pages import read_pages
    from newsfold.samples import generate
    from web import create_app

    settings = _settings(args)
    with tempfile.TemporaryDirectory(prefix="newsfold-demo-") as tmp:
        pages_file = generate(Path(tmp), seed=args.seed, stories=args.stories)
        payloads = [r.payload for r in read_pages(pages_file) if r.payload]
        print(f"sample corpus: {len(payloads)} generated pages in {tmp}", file=sys.stderr)
        with _pipeline(settings, args.workers) as (live, app):
            from plugin.client import build_client
            from plugin.index import ensure_index

            ensure_index(build_client(live), live)
            outcomes = _ingest(app, live, payloads, index=live.index, quiet=args.quiet)
            print(f"ingested: {_summary(outcomes)}", file=sys.stderr)
            web = create_app(settings=live)
            print(f"newsfold is serving on http://{args.host}:{args.port}/  (Ctrl-C to stop)", file=sys.stderr)
            from werkzeug.serving import run_simple

            with contextlib.suppress(KeyboardInterrupt):
                run_simple(args.host, args.port, web, threaded=True, use_reloader=False)
    return 0


# ---------------------------------------------------------------- others
def cmd_evaluate(args) -> int:
    from newsfold.evaluate import evaluate, format_report

    report = evaluate(
        Path(args.truth), Path(args.pred) if args.pred else None, Path(args.extraction) if args.extraction else None
    )
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(format_report(report))
    return 0


def cmd_worker(args) -> int:
    from indexer.celery_app import app

    argv = ["worker", f"--loglevel={args.loglevel}", f"--concurrency={args.concurrency}"]
    app.worker_main(argv)
    return 0


def cmd_web(args) -> int:
    from werkzeug.serving import run_simple

    from web import create_app

    run_simple(args.host, args.port, create_app(), threaded=True)
    return 0


def cmd_init_index(args) -> int:
    from plugin.client import build_client
    from plugin.index import ensure_index

    settings = _settings(args)
    name = ensure_index(build_client(settings), settings)
    print(f"index {name} behind alias {settings.index} is ready")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="newsfold", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="embedded servers + workers + sample corpus + UI")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--workers", type=int, default=2, help="Celery worker processes to start (default 2)")
    p.add_argument("--stories", type=int, default=40, help="stories in the generated sample corpus")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("extract", help="extract the article of every page of PAGES.jsonl")
    p.add_argument("pages")
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="processes (default: CPU count)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("cluster", help="ingest PAGES.jsonl into a fresh index and write each page's cluster")
    p.add_argument("pages")
    p.add_argument("--out", required=True)
    p.add_argument("--index", help="alias of the fresh index (default: a new timestamped name)")
    p.add_argument("--workers", type=int, default=2, help="local Celery worker processes (default 2)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_cluster)

    p = sub.add_parser("ingest", help="stream JSONL page lists, directory trees or WARC files into the index")
    p.add_argument("sources", nargs="+", help="PAGES.jsonl, a folder of .html/.html.gz files, or .warc/.warc.gz files")
    p.add_argument("--index", help="alias to write to (default: NEWSFOLD_INDEX)")
    p.add_argument(
        "--archive", help="folder of the raw-page WARC archive (default: NEWSFOLD_ARCHIVE_DIR; none: no archive)"
    )
    p.add_argument("--out", help="also write one outcome per page as JSONL")
    p.add_argument(
        "--workers", type=int, default=2, help="local Celery worker processes (0: only workers already running)"
    )
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("evaluate", help="score predictions against a truth set (dev-set layout)")
    p.add_argument("--truth", required=True, help="folder with pages.jsonl and truth/")
    p.add_argument("--pred", help="OUT.jsonl of newsfold cluster")
    p.add_argument("--extraction", help="OUT.jsonl of newsfold extract")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("worker", help="run a Celery worker (production)")
    p.add_argument("--concurrency", type=int, default=os.cpu_count() or 2)
    p.add_argument("--loglevel", default="INFO")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("web", help="serve the web UI (development server; use gunicorn in production)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.set_defaults(func=cmd_web)

    p = sub.add_parser("init-index", help="create the index and alias if missing")
    p.set_defaults(func=cmd_init_index)
    return parser


def _terminate(signum, frame):
    raise KeyboardInterrupt  # SIGTERM stops like Ctrl-C: workers and embedded servers are shut down


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:  # its per-page warnings are recorded as rejection reasons instead
        logging.getLogger("trafilatura").setLevel(logging.CRITICAL)
    try:
        return args.func(args) or 0
    except KeyboardInterrupt:
        print("newsfold: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        from newsfold.errors import describe

        message = describe(exc)
        if message is None:
            raise
        print(f"newsfold: {message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
