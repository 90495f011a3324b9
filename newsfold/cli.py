"""The ``newsfold`` command line: demo, extract, cluster, ingest, reindex, evaluate, worker, web, init-index."""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm import tqdm

from newsfold.cli_elasticsearch import cmd_elasticsearch
from newsfold.cli_index import cmd_maintain
from newsfold.cli_run import cmd_cluster, cmd_demo, cmd_ingest, cmd_reindex, load_settings
from newsfold.plugin.settings import Settings
from newsfold.settings_registry import warn_unknown_env

log = logging.getLogger("newsfold")


# ---------------------------------------------------------------- extract
def _extract_one(payload: dict) -> dict:
    from newsfold.indexer.guard import PageTimeout, time_limit
    from newsfold.indexer.records import PageFileError, read_page_file
    from newsfold.plugin.extract.article import Rejection, extract_article

    settings = Settings.from_env()
    try:
        data = read_page_file(payload["html_path"], max_bytes=settings.max_page_bytes)
    except PageFileError as exc:
        return {"id": payload["id"], "error": f"{exc.reason}: {exc.detail}"}
    try:
        with time_limit(settings.page_timeout):  # the workers' limit: one page cannot hold the run
            art = extract_article(
                data,
                url=payload.get("url"),
                lang=payload.get("lang"),
                min_tokens=1,
                max_bytes=settings.max_page_bytes,
                cleanup=settings.cleanup,
                limits=settings.markup_limits,
            )
    except PageTimeout as exc:
        return {"id": payload["id"], "error": f"timeout: extraction {exc} (NEWSFOLD_PAGE_TIMEOUT)"}
    except Exception as exc:  # per-page boundary
        return {"id": payload["id"], "error": f"internal_error: {type(exc).__name__}: {exc}"}
    if isinstance(art, Rejection):
        return {"id": payload["id"], "error": art.message()}
    return {"id": payload["id"], "title": art.title, "text": art.text, "lang": art.lang}


def cmd_extract(args) -> int:
    from newsfold.indexer.sources.jsonl import iter_jsonl

    max_bytes = load_settings(args).max_page_bytes  # a page list's line is read up to the page limit, no further
    rows = list(iter_jsonl(Path(args.pages), read_html=False, allow_outside=args.allow_outside_paths,
                           max_bytes=max_bytes))  # fmt: skip
    jobs = [r.path_payload() for r in rows if not r.error]
    # forked from a fork server, never from this process, whose other threads may hold a lock at the fork
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("forkserver")) as pool:
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
                rec = next(results) if not row.error else {"id": row.id, "error": row.error}
                errors += "error" in rec
                out.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"extracted {len(rows) - errors} of {len(rows)} pages ({errors} errors) -> {args.out}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------- credentials
MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 1024  # the login form refuses longer ones


def cmd_hash_password(args) -> int:
    """Print the hash of a password (asked for twice on a terminal, else the first line of stdin)."""
    import getpass

    from werkzeug.security import generate_password_hash

    if sys.stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Password again: ") != password:
            raise SystemExit("newsfold: the two passwords differ; nothing was printed")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not MIN_PASSWORD_CHARS <= len(password) <= MAX_PASSWORD_CHARS:
        raise SystemExit(
            f"newsfold: the password must have {MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters, "
            f"got {len(password)}"
        )
    print(generate_password_hash(password))
    print("set NEWSFOLD_ADMIN_PASSWORD_HASH to the line above", file=sys.stderr)
    return 0


def cmd_api_token(args) -> int:
    """Print a new random API token and its NEWSFOLD_API_TOKEN_HASHES entry."""
    from newsfold.web.auth import new_api_token
    from newsfold.web.config import scopes_of

    try:
        scopes_of(args.scopes)
    except ValueError as exc:
        raise SystemExit(f"newsfold: --scopes: {exc}") from None
    try:
        token, entry = new_api_token(args.name, args.scopes)
    except ValueError:
        raise SystemExit(
            f"newsfold: a token name is 1-64 letters, digits, '.', '_' or '-'; got {args.name!r}"
        ) from None
    print(f"token: {token}")
    print(f"entry: {entry}")
    print(
        "Give the token to the client (Authorization: Bearer <token>); it is shown only now. "
        "Add the entry to NEWSFOLD_API_TOKEN_HASHES (comma-separated).",
        file=sys.stderr,
    )
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
    from newsfold.indexer.celery_app import app

    argv = ["worker", f"--loglevel={args.loglevel}", f"--concurrency={args.concurrency}"]
    app.worker_main(argv)
    return 0


def cmd_web(args) -> int:
    from werkzeug.serving import run_simple

    from newsfold.web import create_app

    run_simple(args.host, args.port, create_app(), threaded=True)
    return 0


def cmd_init_index(args) -> int:
    from newsfold.indexer.resources import presence_for
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.index import ensure_index

    settings = load_settings(args)
    name = ensure_index(build_client(settings), settings, presence=presence_for(settings))
    print(f"index {name} behind alias {settings.index} is ready")
    return 0


def cmd_unfolded(args) -> int:
    """Name the documents that lost their fold fields (a full index request after ingest); rc 1 when any did."""
    from newsfold.plugin.client import build_client
    from newsfold.plugin.fold.lifecycle import unfolded_documents

    settings = load_settings(args)
    index = args.index or settings.index
    found = unfolded_documents(client=build_client(settings), index=index, size=args.show)
    if args.json:
        print(json.dumps({"index": index, **found}))
    elif found["count"]:
        print(f"{found['count']:,} document(s) of {index} have no fold fields and show alone in folded searches; "
              "ingest them again (docs/embedding.md, Updates and deletes). Some of them:")  # fmt: skip
        for page_id in found["ids"]:
            print(f"  {page_id}")
    else:
        print(f"every document of {index} has its fold fields")
    return 1 if found["count"] else 0


def _show_count(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = -1
    if not 0 <= n <= 1_000:
        raise argparse.ArgumentTypeError(f"must be a whole number 0-1000, not {value!r}")
    return n


OUTSIDE_HELP = "read html paths that lead outside the page list's folder (refused by default)"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="newsfold", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log more")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_demo_commands(sub)
    _add_page_list_commands(sub)
    _add_job_commands(sub)
    _add_evaluate_command(sub)
    _add_server_commands(sub)
    _add_credential_commands(sub)
    _add_index_commands(sub)
    return parser


def _add_demo_commands(sub) -> None:
    """The commands to try newsfold on one machine: ``demo`` and ``elasticsearch``."""
    p = sub.add_parser("demo", help="embedded servers + workers + sample corpus + UI")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--workers", type=int, default=2, help="Celery worker processes to start (default 2)")
    p.add_argument("--stories", type=int, default=40, help="stories in the generated sample corpus")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--elasticsearch",
        action="store_true",
        help="run on a real local Elasticsearch node (./run elasticsearch's) instead of the in-memory stand-in",
    )
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("elasticsearch", help="run a real local Elasticsearch node in the foreground (Ctrl-C stops it)")
    p.add_argument("--port", type=int, default=9200, help="HTTP port on 127.0.0.1 (default 9200; 0: a free one)")
    p.add_argument("--data", help="folder for the indices, kept across restarts (default: a temporary folder)")
    p.add_argument("--heap", default=None, help="JVM heap, for example 1g (default 2g; 1g each with --nodes)")
    p.add_argument("--nodes", type=int, default=1, help="nodes of a local cluster, 1-5 (default 1: a single node)")
    p.add_argument(
        "--secure",
        action="store_true",
        help="security on: user elastic with a password made at start and printed once (one node)",
    )
    p.set_defaults(func=cmd_elasticsearch)


def _add_page_list_commands(sub) -> None:
    """The commands that run a page list outside the index: ``extract`` and ``cluster``."""
    p = sub.add_parser("extract", help="extract the article of every page of PAGES.jsonl")
    p.add_argument("pages")
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="processes (default: CPU count)")
    p.add_argument("--allow-outside-paths", action="store_true", help=OUTSIDE_HELP)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_extract)

    p = sub.add_parser("cluster", help="ingest PAGES.jsonl into a fresh index and write each page's cluster")
    p.add_argument("pages")
    p.add_argument("--out", required=True)
    p.add_argument("--index", help="alias of the fresh index (default: a new timestamped name)")
    p.add_argument("--workers", type=int, default=2, help="local Celery worker processes (default 2)")
    p.add_argument("--allow-outside-paths", action="store_true", help=OUTSIDE_HELP)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_cluster)


def _add_job_commands(sub) -> None:
    """The resumable jobs that write the index: ``ingest`` and ``reindex``."""
    p = sub.add_parser("ingest", help="stream JSONL page lists, directory trees or WARC files into the index")
    p.add_argument("sources", nargs="*", help="PAGES.jsonl, a folder of .html/.html.gz files, or .warc/.warc.gz files")
    p.add_argument("--resume", metavar="JOB", help="continue an interrupted ingest job (its done batches are skipped)")
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

    p = sub.add_parser(
        "reindex", help="rebuild each index behind the alias, one period at a time (zero downtime, resumable)"
    )
    p.add_argument(
        "--source",
        choices=("text", "archive"),
        default="text",
        help="text: re-sign the stored article text (default); archive: re-extract the raw pages of the archive",
    )
    p.add_argument("--resume", metavar="JOB", help="continue an interrupted reindex job from its checkpoint")
    p.add_argument(
        "--workers", type=int, default=2, help="local Celery worker processes (0: only workers already running)"
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_reindex)


def _add_evaluate_command(sub) -> None:
    """``evaluate``: score the output of ``extract`` and ``cluster`` against a truth set."""
    p = sub.add_parser("evaluate", help="score predictions against a truth set (dev-set layout)")
    p.add_argument("--truth", required=True, help="folder with pages.jsonl and truth/")
    p.add_argument("--pred", help="OUT.jsonl of newsfold cluster")
    p.add_argument("--extraction", help="OUT.jsonl of newsfold extract")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_evaluate)


def _add_server_commands(sub) -> None:
    """The long-running processes of a deployment: ``worker`` and ``web``."""
    p = sub.add_parser("worker", help="run a Celery worker (production)")
    p.add_argument("--concurrency", type=int, default=os.cpu_count() or 2)
    p.add_argument("--loglevel", default="INFO")
    p.set_defaults(func=cmd_worker)

    p = sub.add_parser("web", help="serve the web UI (development server; use gunicorn in production)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.set_defaults(func=cmd_web)


def _add_credential_commands(sub) -> None:
    """The commands that make credentials: ``hash-password`` and ``api-token``."""
    p = sub.add_parser("hash-password", help="print the hash of an admin password (read from the terminal or stdin)")
    p.set_defaults(func=cmd_hash_password)

    p = sub.add_parser("api-token", help="make an API token and print it with its NEWSFOLD_API_TOKEN_HASHES entry")
    p.add_argument("name", help="a name for the token, logged with the changes made with it")
    p.add_argument(
        "--scopes",
        default="read,ingest",
        help="what the token may do, comma-separated: read, ingest, edit (corrections and their undo), "
        "admin (reindex, retry, the admin pages, undoing others' corrections); default: read,ingest",
    )
    p.set_defaults(func=cmd_api_token)


def _add_index_commands(sub) -> None:
    """The index commands: ``init-index``, ``unfolded`` and ``maintain``."""
    p = sub.add_parser("init-index", help="create the index and alias if missing")
    p.set_defaults(func=cmd_init_index)

    p = sub.add_parser("unfolded", help="name the documents without fold fields (rc 1 when there are any)")
    p.add_argument("--index", help="the index or alias to check (default NEWSFOLD_INDEX)")
    p.add_argument("--show", type=_show_count, default=20, help="how many ids to name (0-1000, default 20)")
    p.add_argument("--json", action="store_true", help="print {index, count, ids} as JSON")
    p.set_defaults(func=cmd_unfolded)

    p = sub.add_parser("maintain", help="roll the write index over when due, force-merge older indices, list them")
    p.add_argument("--list-only", action="store_true", help="only list the indices (no rollover, no merge)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=cmd_maintain)


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
    warn_unknown_env()
    try:
        return args.func(args) or 0
    except (KeyboardInterrupt, Exception) as exc:
        from newsfold.errors import exit_code

        return exit_code(exc, "newsfold")


if __name__ == "__main__":
    sys.exit(main())
