"""The commands that run pages through local workers: ``cluster``, ``ingest``, ``reindex`` and ``demo``.

Each starts the servers (embedded ones when no URL is set) and local Celery
workers, then hands the work to the indexer (``indexer.jobs.ingest``,
``indexer.jobs.reindex``, ``indexer.jobs.dispatch``): the commands only read
arguments, show progress and print summaries.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from newsfold.plugin.settings import Settings

if TYPE_CHECKING:
    from newsfold.state.jobs import Job
    from newsfold.web.config import WebSettings


@contextlib.contextmanager
def _pipeline(settings: Settings, workers: int, *, real_elasticsearch: bool = False):
    """Servers (embedded when no URL is set) and local Celery workers."""
    from newsfold.embedded import services
    from newsfold.errors import check_servers
    from newsfold.indexer.celery_app import make_celery
    from newsfold.workers import LocalWorkers

    say = lambda m: print(m, file=sys.stderr)  # noqa: E731
    with services(settings, announce=say, real_elasticsearch=real_elasticsearch) as live:
        check_servers(live)
        app = make_celery(live)
        with LocalWorkers(live, workers) as pool:
            pool.wait_ready(app)
            yield live, app


def _ingest(app, live: Settings, payloads: list[dict], *, index: str, quiet: bool) -> list[dict]:
    from newsfold.indexer.jobs.dispatch import BatchRun, in_flight_batches, run_batches

    bar = tqdm(total=len(payloads), desc="ingest", unit="page", disable=quiet)
    try:
        run = BatchRun(index=index, on_done=lambda got: bar.update(len(got)),
                       max_in_flight=in_flight_batches(live.batch_size))  # fmt: skip
        return run_batches(app, _chunks(payloads, live.batch_size), run)
    finally:
        bar.close()


def _read_roots(settings: Settings, pages: Path, payloads: list[dict]) -> str:
    """The folders the local workers may read: the page list's own, those of paths allowed outside it, and any set."""
    roots = {str(pages.resolve().parent)}
    roots.update(str(Path(p["html_path"]).resolve().parent) for p in payloads if p.get("html_path"))
    if settings.read_roots:
        roots.update(r for r in settings.read_roots.split(os.pathsep) if r)
    return os.pathsep.join(sorted(roots))


def cmd_cluster(args) -> int:
    from newsfold.indexer.resources import presence_for
    from newsfold.indexer.sources.jsonl import iter_jsonl
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import drop_index, ensure_index
    from newsfold.plugin.fold.store import current_labels

    settings = load_settings(args)
    index = args.index or f"newsfold-cluster-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    rows = list(iter_jsonl(Path(args.pages), read_html=False, allow_outside=args.allow_outside_paths,
                           max_bytes=settings.max_page_bytes))  # fmt: skip
    payloads = [r.path_payload() for r in rows if not r.error]
    settings = settings.replace(read_roots=_read_roots(settings, Path(args.pages), payloads))
    started = time.perf_counter()
    with _pipeline(settings, args.workers) as (live, app):
        live = live.replace(index=index)
        client = build_client(live)
        drop_index(client, live)  # a fresh index every run
        ensure_index(client, live, presence=presence_for(live))
        outcomes = _ingest(app, live, payloads, index=index, quiet=args.quiet)
        by_id = {o["page_id"]: o for o in outcomes}
        final = {}
        for chunk in _chunks([r.id for r in rows if not r.error], 1000):
            final.update(current_labels(chunk, client=client, settings=live))
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


def _job_store(live: Settings):
    from newsfold.state import build_redis
    from newsfold.state.jobs import JobStore

    return JobStore(build_redis(live.redis_url))


def _resumable(store, job_id: str, kind: str):
    """The job ``--resume`` names, or a readable exit."""
    from newsfold.indexer.jobs.ingest import JobError, resumable

    try:
        return resumable(store, job_id, kind)
    except JobError as exc:
        raise SystemExit(f"newsfold: {exc}") from None


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def cmd_ingest(args) -> int:
    """Stream a JSONL page list, a directory tree or WARC files into the index through the workers.

    The run is a job (``indexer.jobs.ingest``): the workers count every batch
    into it once, and ``--resume JOB`` reads the same sources again, skipping
    the batches the job has counted (batches are numbered in input order).
    """
    from newsfold.indexer.jobs.ingest import JobLost, mark_stopped

    settings = load_settings(args)
    if not args.sources and not args.resume:
        raise SystemExit("newsfold: name the sources to ingest, or --resume JOB")
    report = _IngestReport(args.out, quiet=args.quiet)
    job = store = None
    try:
        with _pipeline(settings, args.workers) as (live, app):
            store = _job_store(live)
            job = _ingest_job(args, settings, live, store)
            _run_ingest_job(job, app=app, store=store, live=live, report=report)
    except KeyboardInterrupt:
        if job is not None and store is not None:
            message = f"interrupted; `newsfold ingest --resume {job.id}` continues from the checkpoint"
            store.finish(job.id, "cancelled", message=message)
            _stderr(f"newsfold: {message}")
        raise
    except JobLost:
        raise  # nothing to mark: the job is gone (its message says how to run it again)
    except BaseException as exc:
        if job is not None and store is not None and not isinstance(exc, SystemExit):
            mark_stopped(store, job.id, exc, announce=_stderr)
        raise
    finally:
        report.close()
    report.print_summary()
    return 0


def _ingest_job(args, settings: Settings, live: Settings, store):
    """The job to run: the one ``--resume`` names (over the same sources), or a new one over the sources given."""
    from newsfold.indexer.jobs.ingest import create_ingest

    sources = [str(Path(p).resolve()) for p in args.sources]
    if args.resume:
        job = _resumable(store, args.resume, "ingest")
        if sources and sources != job.params.get("sources"):
            raise SystemExit(f"newsfold: job {job.id} ingests {job.params.get('sources')}; resume it alone")
        return job
    index = args.index or live.index
    archive = args.archive or settings.archive_dir
    return create_ingest(store, sources, index=index, batch_size=live.batch_size, archive=archive, announce=_stderr)


def _run_ingest_job(job, *, app, store, live: Settings, report: _IngestReport) -> None:
    """Run ``job`` through the workers, skipping the batches it has already counted, into ``report``."""
    from newsfold.indexer.jobs.ingest import IngestRun

    done = store.recorded(job.id)
    report.resumed = bool(done)
    report.bar.reset(total=job.total)
    _stderr(f"ingest job {job.id}" + (f"; resuming: {len(done)} batches already done" if done else ""))
    run = IngestRun(
        job,
        app=app,
        store=store,
        settings=live,
        on_outcome=report.record,
        on_skip=report.bar.update,
        on_wait=lambda state: report.bar.set_description(state or "ingest"),
    )
    report.final = run.run()
    report.skipped = run.stats.skipped_total


class _IngestReport:
    """What an ingest run shows: a progress bar, each outcome in ``--out``, and the counts at the end."""

    def __init__(self, out_path: str | None, *, quiet: bool) -> None:
        from collections import Counter

        self.totals: Counter = Counter()
        self.reasons: Counter = Counter()
        self.out = open(out_path, "w", encoding="utf-8") if out_path else None  # noqa: SIM115 (closed by close())
        self.started = time.perf_counter()
        self.bar = tqdm(desc="ingest", unit="page", disable=quiet)
        self.resumed = False  # the job had batches done before this run
        self.final: Job | None = None  # the job as it ended
        self.skipped = 0  # non-page records of the sources

    def record(self, outcome: dict) -> None:
        self.totals[outcome["status"]] += 1
        if outcome["status"] == "rejected":
            self.reasons[outcome.get("reason") or "unknown"] += 1
        if self.out:
            self.out.write(json.dumps(outcome, ensure_ascii=False) + "\n")
            self.out.flush()  # each line as soon as it is known: a crash loses no outcome already reported
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()
        if self.out:
            self.out.close()

    def print_summary(self) -> None:
        """This run's pages, speed and counts; and the whole job's counts when it was resumed."""
        from newsfold.indexer.jobs.ingest import counts_text

        elapsed = time.perf_counter() - self.started
        pages = sum(self.totals.values())
        skipped = self.skipped
        _stderr(
            f"{pages} pages in {elapsed:.1f} s ({pages / max(elapsed, 1e-9):.1f} pages/s): "
            f"{counts_text(self.totals, self.reasons)}" + (f"; skipped {skipped} non-page records" if skipped else "")
        )
        if self.resumed and self.final is not None:
            _stderr(f"job {self.final.id} in all: {counts_text(self.final.counts, self.final.rejected)}")


def cmd_reindex(args) -> int:
    """Build a new index behind the alias (from the stored text or the raw-page archive) and swap it in."""
    import getpass

    from newsfold.indexer.jobs.reindex import Reindex, ReindexError
    from newsfold.indexer.pages import chunk_context

    settings = load_settings(args)
    started = time.perf_counter()
    with _pipeline(settings, args.workers) as (live, app):
        store = _job_store(live)
        if args.resume:
            job = _resumable(store, args.resume, "reindex")
        else:
            running = store.active("reindex", index=live.index)
            if running is not None:
                raise SystemExit(
                    f"newsfold: a reindex of {live.index} is already {running.status} (job {running.id}); "
                    f"if its coordinator died, continue it with `newsfold reindex --resume {running.id}`"
                )
            params = {"source": args.source, "user": getpass.getuser(), "index": live.index}
            job = store.create("reindex", params=params)
        print(f"reindex job {job.id}: {job.params.get('source')} -> new indices behind {live.index}", file=sys.stderr)
        bar = tqdm(desc="reindex", unit="page", disable=args.quiet)

        def progress(current, phase: str) -> None:
            if current.total is not None and bar.total != current.total:
                bar.total = current.total
            if current.done > bar.n:
                bar.update(current.done - bar.n)
            bar.set_postfix_str(f"{phase}, {reindex.period}" if reindex.period else phase)

        try:
            ctx = chunk_context(live.replace(index=job.params.get("index") or live.index))
            job = (reindex := Reindex(job.id, app=app, store=store, ctx=ctx, progress=progress)).run()
        except ReindexError as exc:
            bar.close()
            print(f"newsfold: reindex job {job.id} failed: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            bar.close()
            print(f"newsfold: `newsfold reindex --resume {job.id}` continues from the checkpoint", file=sys.stderr)
            raise
        finally:
            bar.close()
    elapsed = time.perf_counter() - started
    print(
        f"reindex job {job.id} {job.status} in {elapsed:.1f} s ({job.done / max(elapsed, 1e-9):.1f} pages/s): "
        f"{job.message}",
        file=sys.stderr,
    )
    return 0 if job.status == "done" else 1


def cmd_demo(args) -> int:
    from newsfold.indexer.sources.jsonl import iter_jsonl
    from newsfold.samples import generate
    from newsfold.web import create_app
    from newsfold.web.config import WebSettings

    settings = load_settings(args)
    with tempfile.TemporaryDirectory(prefix="newsfold-demo-") as tmp:
        pages_file = generate(Path(tmp), seed=args.seed, stories=args.stories)
        payloads = [r.path_payload() for r in iter_jsonl(pages_file, read_html=False) if not r.error]
        print(f"sample corpus: {len(payloads)} generated pages in {tmp}", file=sys.stderr)
        settings = settings.replace(read_roots=_read_roots(settings, pages_file, payloads))
        with _pipeline(settings, args.workers, real_elasticsearch=args.elasticsearch) as (live, app):
            from newsfold.indexer.resources import presence_for
            from newsfold.plugin.client import build_client
            from newsfold.plugin.fold.index import ensure_index

            ensure_index(build_client(live), live, presence=presence_for(live))
            job = _demo_ingest(pages_file, app=app, live=live, quiet=args.quiet)
            print(f"ingested: {job.message} (job {job.id}, on the admin's Jobs page)", file=sys.stderr)
            web_settings, password = _demo_web_settings(WebSettings.from_env())
            # the sample sites' pictures, served by the demo itself (web.demo_media)
            web_settings = web_settings.replace(demo_media=str(Path(tmp) / "media"))
            web = create_app(settings=live, web=web_settings)
            print(f"newsfold is serving on http://{args.host}:{args.port}/  (Ctrl-C to stop)", file=sys.stderr)
            if password:
                print(
                    f"admin login: http://{args.host}:{args.port}/login  user {web_settings.admin_user}  "
                    f"password {password}  (made for this run)",
                    file=sys.stderr,
                )
            from werkzeug.serving import run_simple

            with contextlib.suppress(KeyboardInterrupt):
                run_simple(args.host, args.port, web, threaded=True, use_reloader=False)
    return 0


def _demo_ingest(pages_file: Path, *, app, live: Settings, quiet: bool):
    """The demo's pages through the workers as an ingest job (editors find it on the Jobs page); the job at its end."""
    from newsfold.indexer.jobs.ingest import create_ingest

    store = _job_store(live)
    job = create_ingest(store, [str(pages_file)], index=live.index, batch_size=live.batch_size, announce=_stderr)
    report = _IngestReport(None, quiet=quiet)
    try:
        _run_ingest_job(job, app=app, store=store, live=live, report=report)
    finally:
        report.close()
    assert report.final is not None
    return report.final


def _demo_web_settings(settings: WebSettings) -> tuple[WebSettings, str | None]:
    """The demo web's settings and the admin password made for this run (None when one is configured).

    The demo serves plain http, so the session cookie may not be HTTPS-only;
    a development secret key is replaced by a random one so sessions cannot be forged.
    """
    import secrets

    from werkzeug.security import generate_password_hash

    from newsfold.web.auth import MIN_SECRET_KEY_CHARS
    from newsfold.web.config import DEV_SECRET_KEY

    changes: dict = {"cookie_secure": False}
    if settings.secret_key == DEV_SECRET_KEY or len(settings.secret_key) < MIN_SECRET_KEY_CHARS:
        changes["secret_key"] = secrets.token_hex(32)
    password = None
    if not settings.admin_password_hash:
        password = secrets.token_urlsafe(12)
        changes["admin_password_hash"] = generate_password_hash(password)
    return settings.replace(**changes), password


def _summary(outcomes: list[dict]) -> str:
    from collections import Counter

    from newsfold.indexer.jobs.ingest import counts_text

    status = Counter(o["status"] for o in outcomes)
    return counts_text(status, Counter(o.get("reason") for o in outcomes if o["status"] == "rejected"))


def load_settings(args) -> Settings:
    """The settings from the environment, or a readable exit."""
    try:
        return Settings.from_env()
    except ValueError as exc:
        raise SystemExit(f"newsfold: configuration error: {exc}") from None


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i : i + size]
