"""Hostile input: every bad request gets a 400 with a message, and no search can pin the server."""

from __future__ import annotations

import os
import random
import time
import warnings
from pathlib import Path

import pytest

from newsfold.plugin.search import public_query, queries
from newsfold.web import create_app
from newsfold.web.config import WebSettings
from newsfold.web.resources import get_resources
from tests.backends import REAL_ES  # noqa: E402
from tests.pages import page, story


def _standin_cpu() -> float:
    """CPU seconds used so far by the osmem stand-in this test session started."""
    total = 0.0
    found = False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)
            name = fields[0].split("(", 1)[1]
            rest = fields[1].split()
        except (OSError, IndexError):
            continue
        if name.startswith("osmem-server") and int(rest[1]) == os.getpid():
            total += (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
            found = True
    assert found, "the session's osmem stand-in is not a child of this process"
    return total


@pytest.fixture
def app(settings, es):
    from newsfold.plugin import Page, TextMeta, ingest, sign_page, sign_text

    pages = [sign_page(Page(html=page("Harbour strike ends", story(31)), url=f"https://s{n}.example/a"), settings)
             for n in range(3)]
    # many pages where "the" is everywhere: what makes a sloppy phrase of repeated words explode
    rng = random.Random(7)
    vocab = "the of and a to in harbour ship port strike workers union".split()
    for n in range(200):
        text = " ".join(rng.choice(vocab) for _ in range(400))
        pages.append(sign_text(text, TextMeta(page_id=f"dense-{n}"), settings=settings))
    ingest(pages, client=es, settings=settings)
    made = create_app({"TESTING": True}, settings=settings, web=WebSettings(page_size=5))
    yield made
    get_resources(made).close()


HOSTILE = [
    '"the the the the the the the the the the the"~100',
    "the~2 the~2 the~2 the~2 the~2 the~2 the~2 the~2",
    "t* th* the* a* b* c* d* e* f* g* h* i* j* k*",
]


def _searches_running(es) -> int:
    """Search tasks still running on a real node (the tasks API, which the client calls a technical preview)."""
    from elasticsearch.exceptions import GeneralAvailabilityWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GeneralAvailabilityWarning)
        tasks = es.tasks.list(actions="indices:data/read/search*", detailed=False)
    return sum(len(node.get("tasks", {})) for node in tasks.get("nodes", {}).values())


def test_a_hostile_query_answers_fast_and_leaves_the_server_idle(app, es):
    client = app.test_client()
    for q in HOSTILE:
        started = time.monotonic()
        res = client.get("/api/search", query_string={"q": q})
        took = time.monotonic() - started
        assert res.status_code in (200, 400), res.get_data(as_text=True)
        assert took < 2.0, f"{q!r} took {took:.1f} s"
        if REAL_ES:  # the search was not left running after its answer (the search timeout cancels it)
            time.sleep(0.5)
            assert _searches_running(es) == 0, f"the search server kept computing after {q!r} was answered"
        else:
            before = _standin_cpu()
            time.sleep(1.0)
            assert _standin_cpu() - before < 0.3, f"the search server kept computing after {q!r} was answered"


def test_public_queries_allow_only_cheap_operators():
    body = public_query.text_query('"storm surge" -flood harbour|port')
    sqs = body["simple_query_string"]
    allowed = set(sqs["flags"].split("|"))
    assert allowed == {"AND", "OR", "NOT", "PHRASE", "PRECEDENCE", "WHITESPACE", "ESCAPE"}
    with pytest.raises(ValueError, match="at most 32 words"):
        public_query.text_query(" ".join(["word"] * 33))
    with pytest.raises(ValueError, match="characters; the limit is 500"):
        public_query.text_query("x" * 501)
    assert queries.collapsed_search("storm")["timeout"] == queries.SEARCH_TIMEOUT


@pytest.mark.parametrize("path", ["/", "/api/search"])
@pytest.mark.parametrize("args", [{"to": "9999-12-31"}, {"from": "0001-01-01", "to": "9999-12-31"}])
def test_extreme_dates_are_answered_not_500(app, path, args):
    res = app.test_client().get(path, query_string={"q": "harbour", **args})
    assert res.status_code == 200, res.get_data(as_text=True)[:300]


def _deep(levels: int) -> bytes:
    return b"[" * levels + b"]" * levels


@pytest.mark.parametrize(
    "path",
    ["/api/pages", "/api/jobs/reindex", "/api/clusters/c1/split", "/api/pairs/not-duplicates"],
)
def test_json_nested_too_deep_is_a_400(settings, es, path):
    from newsfold.web.auth import new_api_token

    token, entry = new_api_token("tests")
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(api_token_hashes=entry))
    res = app.test_client().post(
        path, data=_deep(100_000), content_type="application/json", headers={"Authorization": f"Bearer {token}"}
    )
    assert res.status_code == 400, res.get_data(as_text=True)[:300]
    assert "JSON" in res.get_json()["error"]
    get_resources(app).close()


def test_a_huge_offset_is_a_400(settings, redis_url):
    from newsfold.web.auth import new_api_token

    token, entry = new_api_token("tests")
    app = create_app({"TESTING": True}, settings=settings.replace(redis_url=redis_url),
                     web=WebSettings(api_token_hashes=entry))
    res = app.test_client().get("/api/jobs?offset=99999999999999999999999",
                                headers={"Authorization": f"Bearer {token}"})
    assert res.status_code == 400 and "offset" in res.get_json()["error"]
    get_resources(app).close()


# ---------------------------------------------------------------- files named by page lists and task messages


def test_page_files_are_read_safely(tmp_path):
    from newsfold.indexer.records import PageFileError, read_page_file

    good = tmp_path / "a.html"
    good.write_bytes(b"<html>" + b"x" * 100 + b"</html>")
    assert read_page_file(good, max_bytes=1024, roots=[str(tmp_path)]).startswith(b"<html>")
    with pytest.raises(PageFileError) as big:
        read_page_file(good, max_bytes=50)
    assert big.value.reason == "too_large"
    with pytest.raises(PageFileError) as zero:
        read_page_file("/dev/zero", max_bytes=1024)  # a device: refused, nothing read
    assert zero.value.reason == "not_a_file"
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(PageFileError) as pipe:
        read_page_file(fifo, max_bytes=1024)  # would block forever if opened for a plain read
    assert pipe.value.reason == "not_a_file" and time.monotonic() - started < 2
    with pytest.raises(PageFileError) as outside:
        read_page_file("/etc/hostname", max_bytes=1024, roots=[str(tmp_path)])
    assert outside.value.reason == "outside_roots"
    link = tmp_path / "link.html"
    link.symlink_to("/etc/hostname")
    with pytest.raises(PageFileError) as linked:
        read_page_file(link, max_bytes=1024, roots=[str(tmp_path)])  # a link out of the root is outside too
    assert linked.value.reason == "outside_roots"


def test_a_worker_reads_only_under_its_roots(settings, tmp_path):
    from newsfold.indexer.pages import sign_batch

    inside = tmp_path / "pages"
    inside.mkdir()
    (inside / "a.html").write_text(page("Harbour strike ends", story(32)), encoding="utf-8")
    secret = tmp_path / "secret.html"
    secret.write_text(page("Secret", story(33)), encoding="utf-8")
    worker = settings.replace(read_roots=str(inside), repeated_lines=False)
    payloads = [{"id": "ok", "html_path": str(inside / "a.html")}, {"id": "evil", "html_path": str(secret)}]
    signed, rejected, _ = sign_batch(payloads, worker, stats=None)
    assert [s.page_id for s in signed] == ["ok"]
    assert [(r.page_id, r.reason) for r in rejected] == [("evil", "outside_roots")]


def test_page_lists_refuse_escapes_and_duplicate_ids(tmp_path):
    import json

    from newsfold.indexer.sources.jsonl import iter_jsonl

    (tmp_path / "a.html").write_text("<html></html>", encoding="utf-8")
    lines = [{"id": "a", "html": "a.html"}, {"id": "a", "html": "a.html"}, {"id": "b", "html": "../../etc/hostname"}]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    first, again, escape = iter_jsonl(tmp_path / "p.jsonl", read_html=False)
    assert first.error is None
    assert (again.reason, again.id) == ("duplicate_id", "a") and "line 1" in again.error
    assert escape.reason == "outside_folder" and "--allow-outside-paths" in escape.error
    allowed = list(iter_jsonl(tmp_path / "p.jsonl", read_html=False, allow_outside=True))
    assert allowed[2].error is None


def test_extract_keeps_the_good_lines_when_one_names_dev_zero(tmp_path):
    import json
    import subprocess
    import sys

    (tmp_path / "a.html").write_text(page("Harbour strike ends", story(34)), encoding="utf-8")
    (tmp_path / "zero.html").symlink_to("/dev/zero")
    lines = [{"id": "good", "html": "a.html"}, {"id": "zero", "html": "zero.html"}]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "newsfold.cli", "extract", str(tmp_path / "p.jsonl"), "--out", str(tmp_path / "x.jsonl"),
         "--jobs", "1", "--quiet", "--allow-outside-paths"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "x.jsonl").read_text().splitlines())}
    assert "Harbour" in rows["good"]["title"]
    assert rows["zero"]["error"].startswith("not_a_file")


# ---------------------------------------------------------------- outages


def test_a_redis_outage_while_signing_is_an_error_to_wait_out_not_a_rejection(settings):
    import redis

    from newsfold.indexer.pages import sign_batch

    down = settings.replace(redis_url="redis://127.0.0.1:9/0", repeated_lines=True)
    html = page("Harbour strike ends", story(35))
    with pytest.raises(redis.exceptions.ConnectionError):
        sign_batch([{"id": "p", "url": "https://a.example/x", "html": html}], down, stats=None)


def test_patiently_waits_out_a_short_outage(monkeypatch):
    import redis

    from newsfold import state

    waits: list[float] = []
    monkeypatch.setattr(state.time, "sleep", waits.append)
    calls = iter([redis.exceptions.ConnectionError("down"), redis.exceptions.TimeoutError("slow"), "done"])

    def flaky():
        got = next(calls)
        if isinstance(got, Exception):
            raise got
        return got

    assert state.patiently(flaky, what="a test") == "done"
    assert waits == [1.0, 2.0]
    with pytest.raises(redis.exceptions.ConnectionError):
        state.patiently(lambda: (_ for _ in ()).throw(redis.exceptions.ConnectionError("x")), what="t", attempts=2)


# ---------------------------------------------------------------- API bodies


def _token_app(settings, **web):
    from newsfold.web.auth import new_api_token

    token, entry = new_api_token("tests")
    app = create_app({"TESTING": True}, settings=settings, web=WebSettings(api_token_hashes=entry, **web))
    return app, {"Authorization": f"Bearer {token}"}


def test_pages_over_the_size_limit_are_refused_at_the_door(settings):
    small = settings.replace(max_page_bytes=2048, redis_url="redis://127.0.0.1:9/0")
    app, auth = _token_app(small)
    pages = [{"html": "<p>fine</p>"}, {"html": "<p>" + "x" * 5000 + "</p>"}]
    res = app.test_client().post("/api/pages", json={"pages": pages}, headers=auth)
    assert res.status_code == 413, res.get_data(as_text=True)
    assert "pages[1].html" in res.get_json()["error"] and "NEWSFOLD_MAX_PAGE_BYTES" in res.get_json()["error"]
    get_resources(app).close()


def test_corrections_api_refuses_unknown_fields(settings, es):
    app, auth = _token_app(settings)
    res = app.test_client().post("/api/clusters/c1/split", json={"page_id": "a", "pgae_id": "b"}, headers=auth)
    assert res.status_code == 400 and "unknown field(s) pgae_id" in res.get_json()["error"]
    get_resources(app).close()


def test_the_embedded_redis_wants_a_password_kept_out_of_the_process_list():
    import stat
    import subprocess

    import redis

    from newsfold.embedded import EmbeddedRedis

    server = EmbeddedRedis()
    try:
        assert server.password not in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert stat.S_IMODE(os.stat(server.config).st_mode) == 0o600
        assert server.password not in server.shown_url
        with pytest.raises(redis.exceptions.RedisError):
            redis.Redis(host="127.0.0.1", port=server.port).ping()  # no password: refused
        client = redis.Redis.from_url(server.url)
        assert client.ping() and client.config_get("appendonly")["appendonly"] == "yes"
        assert client.config_get("bind")["bind"].split() == ["127.0.0.1"]
        client.close()
    finally:
        server.close()


class _Result:
    """A finished task's result as Celery hands it to the coordinator (not a server: a value and a flag)."""

    def __init__(self, value, outage: list[int]):
        self.value, self.outage = value, outage

    def ready(self):
        if self.outage and self.outage[0] > 0:
            self.outage[0] -= 1
            import redis

            raise redis.exceptions.ConnectionError("Connection refused")
        return True

    def successful(self):
        return True

    def get(self, **_):
        return self.value

    def forget(self):
        pass


def _work(send, *, finished=lambda *a: None, alive=None, waiting=lambda message: None):
    """A ``dispatch.Work`` made of the given functions."""
    from newsfold.indexer.jobs import dispatch

    class Calls(dispatch.Work):
        def send(self, key, item):
            return send(key, item)

        def finished(self, key, item, value, error):
            finished(key, item, value, error)

        def alive(self, keys):
            return alive(keys) if alive is not None else None

        def waiting(self, message):
            waiting(message)

    return Calls()


def test_the_coordinator_waits_out_a_redis_outage_and_loses_nothing(monkeypatch):
    import redis
    from kombu.exceptions import OperationalError

    from newsfold.indexer.jobs import dispatch

    monkeypatch.setattr(dispatch.time, "sleep", lambda s: None)
    outage = [3]  # three polls fail as if Redis were restarting
    sends = iter([None, OperationalError("broker down"), None, None, None])
    sent: list[str] = []

    def send(key, item):
        failure = next(sends, None)
        if failure is not None:
            raise failure
        sent.append(key)
        return _Result([key], outage)

    got: list[str] = []
    states: list = []
    work = _work(send, finished=lambda key, item, value, error: got.extend(value), waiting=states.append)
    dispatch.drive(((str(n), n) for n in range(4)), work, timing=dispatch.Timing(max_outage=60))
    assert sorted(got) == ["0", "1", "2", "3"] and sorted(sent) == ["0", "1", "2", "3"]  # each once
    assert states[0].startswith("waiting for Redis") and states[-1] is None
    # an outage longer than allowed stops the coordinator with the error
    outage[0] = 10**6
    with pytest.raises(redis.exceptions.ConnectionError):
        work = _work(lambda k, i: _Result([k], outage))
        dispatch.drive(iter([("x", 1)]), work, timing=dispatch.Timing(max_outage=0.0))


class _RunningThroughAnOutage:
    """A unit whose worker keeps running while Redis is away: the first poll of the run fails, then it is busy."""

    def __init__(self, busy_until: float, outage: list[int]):
        self.busy_until, self.outage = busy_until, outage

    def ready(self):
        if self.outage[0] > 0:
            self.outage[0] -= 1
            import redis

            raise redis.exceptions.ConnectionError("Connection refused")
        return time.monotonic() >= self.busy_until

    def successful(self):
        return True

    def get(self, **_):
        return []

    def forget(self):
        pass


@pytest.mark.parametrize("grace, deliveries", [(2.5, 1), (0.0, 2)])
def test_after_an_outage_a_unit_still_running_is_not_sent_again(grace, deliveries):
    """Heartbeats lapse during an outage; the worker renews its own once Redis is back.

    Judging the heartbeats at once (grace 0, the old behaviour) sent the unit
    again while its first delivery still ran: two deliveries at once.
    """
    from newsfold.indexer.jobs import dispatch

    started = time.monotonic()
    sent: list[str] = []
    outage = [1]
    renewed_after = started + 2.0  # some time after the outage (one 0.5 s wait) the worker renews its heartbeat

    def send(key, item):
        sent.append(key)
        return _RunningThroughAnOutage(started + 3.0, outage)

    work = _work(send, alive=lambda keys: [time.monotonic() >= renewed_after for _ in keys])
    timing = dispatch.Timing(check_every=0.05, max_outage=10, outage_grace=grace)
    dispatch.drive(iter([("only", 1)]), work, timing=timing)
    assert len(sent) == deliveries


def test_a_job_on_a_redis_that_keeps_nothing_is_warned_about(redis_url):
    from newsfold.indexer.jobs.ingest import warn_if_not_persistent
    from newsfold.state import build_redis
    from newsfold.state.jobs import JobStore

    store = JobStore(build_redis(redis_url))
    said: list[str] = []
    aof = store.redis.config_get("appendonly")["appendonly"]
    try:
        store.redis.config_set("appendonly", "no")
        saves = store.redis.config_get("save")["save"]
        store.redis.config_set("save", "")
        warn_if_not_persistent(store, announce=said.append)
        assert said and "appendonly yes" in said[0]
        said.clear()
        store.redis.config_set("appendonly", "yes")
        warn_if_not_persistent(store, announce=said.append)
        assert said == []
    finally:
        store.redis.config_set("appendonly", aof)
        store.redis.config_set("save", saves)
        store.redis.close()
