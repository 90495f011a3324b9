"""Test harness: Elasticsearch's near-real-time search in front of the osmem stand-in (test-only).

The stand-in shows a write to searches at once; Elasticsearch only after a
refresh. This proxy gives the stand-in Elasticsearch's behaviour so the race
``docs/concurrency.md`` guards against can happen in tests:

- two stand-in servers sit behind it: the **primary** takes every write and
  answers GET/mget (realtime, as in Elasticsearch); the **searchable copy**
  answers ``_search``, ``_msearch`` and ``_count``;
- a write that succeeded on the primary is queued, and the queue is replayed
  into the copy at each **refresh**: every ``refresh_interval`` (1 s, as
  Elasticsearch's default; ``auto = False`` stops them so a test can call
  :meth:`NrtProxy.refresh` itself), on ``_refresh``, and for a write sent
  with ``refresh=true``; a write with ``refresh=wait_for`` is answered after
  the next refresh, as Elasticsearch does;
- index management (indices, mappings, aliases, templates) goes to both at once.

Replayed bulk requests carry only the items that succeeded on the primary,
without ``if_seq_no``/``if_primary_term`` (the primary already decided), so
the copy ends identical to the primary at every refresh.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlencode, urlsplit

from newsfold.embedded import EmbeddedElasticsearch

SEARCHES = ("_search", "_msearch", "_count")
DOC_WRITES = ("_doc", "_create", "_update")
MANAGEMENT = ("_alias", "_aliases", "_mapping", "_settings", "_component_template", "_index_template", "_template")
DROPPED_PARAMS = {"if_seq_no", "if_primary_term", "refresh"}


class NrtProxy:
    """An HTTP server on a free loopback port giving the stand-in near-real-time search."""

    def __init__(self, *, refresh_interval: float = 1.0) -> None:
        self.primary = EmbeddedElasticsearch()
        self.copy = EmbeddedElasticsearch()
        self.refresh_interval = refresh_interval
        self.queue: list[tuple[str, str, bytes, str]] = []
        self.lock = threading.Condition()
        self.refreshes = 0
        self.auto = True
        self.serving: dict[int, float] = {}  # request -> when it came in (see oldest_request)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                ticket = object()
                proxy.serving[id(ticket)] = time.monotonic()
                try:
                    status, headers, data = proxy.handle(
                        self.command, self.path, body, self.headers.get("Content-Type")
                    )
                finally:
                    proxy.serving.pop(id(ticket), None)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self._stop = threading.Event()
        threading.Thread(target=self.server.serve_forever, name="nrt-proxy", daemon=True).start()
        threading.Thread(target=self._refresher, name="nrt-refresh", daemon=True).start()

    # ------------------------------------------------------------ plumbing
    def close(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()
        self.primary.close()
        self.copy.close()

    def _refresher(self) -> None:
        while not self._stop.wait(self.refresh_interval):
            if self.auto:
                self.refresh()

    @staticmethod
    def _send(base: str, method: str, path: str, body: bytes, content_type: str | None):
        request = urllib.request.Request(base + path, data=body or None, method=method)
        request.add_header("Content-Type", content_type or "application/json")
        request.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=120) as res:
                return res.status, _headers(res.headers), res.read()
        except urllib.error.HTTPError as exc:
            return exc.code, _headers(exc.headers), exc.read()

    # ------------------------------------------------------------ refresh
    def refresh(self) -> None:
        """Replay the queued writes into the searchable copy: everything written so far becomes searchable."""
        with self.lock:
            self.refresh_locked()
            self.refreshes += 1
            self.lock.notify_all()

    def wait_for_refresh(self, timeout: float = 120.0) -> None:
        """Block until the next refresh has happened (``refresh=wait_for``)."""
        with self.lock:
            target = self.refreshes + 1
            self.lock.wait_for(lambda: self.refreshes >= target, timeout=timeout)

    def oldest_request(self) -> float:
        """Seconds the oldest request still being answered has waited (0 when none): a paused server's mark."""
        started = list(self.serving.values())
        return time.monotonic() - min(started) if started else 0.0

    def pending(self) -> int:
        """Writes not searchable yet."""
        with self.lock:
            return len(self.queue)

    # ------------------------------------------------------------ routing
    def handle(self, method: str, raw_path: str, body: bytes, content_type: str | None):
        parts = urlsplit(raw_path)
        segments = [s for s in parts.path.split("/") if s]
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        if any(s in SEARCHES for s in segments):
            return self._send(self.copy.url, method, raw_path, body, content_type)
        if segments and segments[-1] == "_refresh":
            self.refresh()
            return self._send(self.primary.url, method, raw_path, body, content_type)
        is_bulk = bool(segments) and segments[-1] == "_bulk"
        is_doc_write = method in ("PUT", "POST", "DELETE") and len(segments) >= 2 and segments[1] in DOC_WRITES
        if is_bulk or is_doc_write:
            status, headers, data = self._send(self.primary.url, method, raw_path, body, content_type)
            replay_path = parts.path + ("?" + urlencode({k: v for k, v in params.items() if k not in DROPPED_PARAMS})
                                        if any(k not in DROPPED_PARAMS for k in params) else "")
            with self.lock:
                if is_bulk:
                    kept = _succeeded_bulk(body, data)
                    if kept:
                        self.queue.append(("POST", replay_path, kept, "application/x-ndjson"))
                elif 200 <= status < 300:
                    self.queue.append((method, replay_path, body, content_type or "application/json"))
            if params.get("refresh") in ("true", ""):
                self.refresh()
            elif params.get("refresh") == "wait_for":
                self.wait_for_refresh()
            return status, headers, data
        management = method in ("PUT", "POST", "DELETE") and (
            len(segments) == 1 and not segments[0].startswith("_") or any(s in MANAGEMENT for s in segments)
        )
        status, headers, data = self._send(self.primary.url, method, raw_path, body, content_type)
        if management:
            with self.lock:  # after the writes queued before it, as Elasticsearch applies them in order
                self.refresh_locked()
                self._send(self.copy.url, method, raw_path, body, content_type)
        return status, headers, data

    def refresh_locked(self) -> None:
        queued, self.queue = self.queue, []
        for method, path, body, content_type in queued:
            self._send(self.copy.url, method, path, body, content_type)


def _headers(message) -> dict[str, str]:
    """The response headers worth passing on (the client checks ``X-Elastic-Product``)."""
    keep = ("content-type", "x-elastic-product", "warning")
    return {k: v for k, v in message.items() if k.lower() in keep}


def _succeeded_bulk(request: bytes, response: bytes) -> bytes:
    """The bulk body holding only the actions that succeeded on the primary, without optimistic-concurrency checks."""
    try:
        items = json.loads(response).get("items", [])
    except ValueError:
        return b""
    lines = [line for line in request.split(b"\n") if line.strip()]
    out: list[bytes] = []
    i = 0
    for item in items:
        if i >= len(lines):
            break
        action = json.loads(lines[i])
        (op, meta), = action.items()
        has_source = op != "delete"
        result = next(iter(item.values()))
        if 200 <= int(result.get("status", 500)) < 300:
            meta = {k: v for k, v in meta.items() if k not in ("if_seq_no", "if_primary_term")}
            out.append(json.dumps({op: meta}).encode())
            if has_source:
                out.append(lines[i + 1])
        i += 2 if has_source else 1
    return b"\n".join(out) + b"\n" if out else b""


def wait_until(predicate, timeout: float = 10.0, step: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()
