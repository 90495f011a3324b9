"""Bulk jobs (ingest, reindex) whose state lives in Redis, the broker newsfold already runs.

Several workers update one job at once, and a job outlives the process that
started it, so nothing is kept in memory: every change is one atomic Redis
operation. The keys of a job, under ``<namespace>:job:<id>``:

- the hash itself: ``kind``, ``status``, times, ``total``, ``done``, ``params``
  (JSON), ``message``, and the counters ``n:<outcome>`` and ``r:<reason>``;
- ``:keys``: the units of work already counted (batch or chunk keys). They are
  the checkpoint a resumed job skips, and what makes counting idempotent: a
  batch delivered twice (a worker died after writing but before the
  acknowledgement) is counted once;
- ``:failures`` (item -> JSON) and ``:failure_order`` (items in order):
  the pages that failed, with reason, detail and whether a retry can help;
- ``:retry`` (item -> task payload): what a retry re-queues;
- ``:state``: coordinator bookkeeping (a reindex keeps its target index here);
- ``:alive:<key>``: a heartbeat with a short expiry while a worker runs a unit
  (:mod:`newsfold.state.heartbeats`).

``<namespace>:jobs`` (a sorted set by creation time) lists every job and
``<namespace>:jobs:active`` the queued and running ones. Finished jobs expire
after ``RETENTION_SECONDS``.
"""

from __future__ import annotations

import builtins
import datetime as dt
import json
import secrets
from collections.abc import Iterable

from newsfold.state.heartbeats import HEARTBEAT_TTL, Heartbeats
from newsfold.state.job_records import (
    ACTIVE,
    KINDS,
    OUTCOMES,
    RETENTION_SECONDS,
    STATUSES,
    Job,
    failures_of,
    now_iso,
    text_of,
)

#: a failed page's task payload is kept for a retry only up to this size (raw HTML travels inline
#: when there is no archive; a whole outage must not copy the corpus into Redis)
MAX_RETRY_PAYLOAD = 512 * 1024
#: what a job keeps of each page's outcome (for redeliveries and resumed runs)
OUTCOME_FIELDS = ("page_id", "origin", "status", "cluster_id", "similarity", "matched_id", "reason", "detail")

# Count one unit of work once: mark its key, add its counters, keep its failures.
_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if ARGV[1] ~= '' and redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return 0 end
for name, n in pairs(cjson.decode(ARGV[3])) do redis.call('HINCRBY', KEYS[1], name, n) end
for _, f in ipairs(cjson.decode(ARGV[4])) do
  if redis.call('HSET', KEYS[3], f[1], f[2]) == 1 then redis.call('RPUSH', KEYS[4], f[1]) end
end
for item, payload in pairs(cjson.decode(ARGV[5])) do redis.call('HSET', KEYS[5], item, payload) end
if ARGV[1] ~= '' then redis.call('HSET', KEYS[6], ARGV[1], ARGV[6]) end
redis.call('HSET', KEYS[1], 'updated', ARGV[2])
return 1
"""

# Take the retryable failures out of the job (their counts too): a retry counts them again.
_TAKE_RETRYABLE = """
local out = {}
for _, item in ipairs(redis.call('HKEYS', KEYS[4])) do
  local f = redis.call('HGET', KEYS[2], item)
  if f then
    local reason = cjson.decode(f)['reason']
    redis.call('HINCRBY', KEYS[1], 'n:rejected', -1)
    redis.call('HINCRBY', KEYS[1], 'r:' .. reason, -1)
    redis.call('HINCRBY', KEYS[1], 'done', -1)
    redis.call('HDEL', KEYS[2], item)
    redis.call('LREM', KEYS[3], 1, item)
  end
  table.insert(out, redis.call('HGET', KEYS[4], item))
end
redis.call('DEL', KEYS[4])
return out
"""


class JobStore(Heartbeats):
    """Jobs in Redis (see the module docstring for the keys)."""

    def __init__(self, redis_client, namespace: str = "newsfold", *, heartbeat_ttl: float = HEARTBEAT_TTL) -> None:
        self.redis = redis_client
        self.namespace = namespace
        self.heartbeat_ttl = heartbeat_ttl  # a worker's setting (NEWSFOLD_HEARTBEAT_TTL); a coordinator only reads
        self._record = redis_client.register_script(_RECORD)
        self._take = redis_client.register_script(_TAKE_RETRYABLE)

    # ------------------------------------------------------------------ keys
    def _key(self, job_id: str, part: str = "") -> str:
        return f"{self.namespace}:job:{job_id}{':' + part if part else ''}"

    @property
    def _index(self) -> str:
        return f"{self.namespace}:jobs"

    @property
    def _active(self) -> str:
        return f"{self.namespace}:jobs:active"

    # ------------------------------------------------------------------ life cycle
    def create(self, kind: str, *, params: dict, total: int | None = None) -> Job:
        """Create a queued job and return it.

        Args:
            kind: ``"ingest"`` or ``"reindex"``.
            params: what the job works on (JSON-serialisable), shown as is.
            total: pages to process when known.

        Raises:
            ValueError: an unknown kind.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        stamp = dt.datetime.now(dt.UTC)
        job_id = f"{kind}-{stamp.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
        created = stamp.isoformat(timespec="milliseconds")
        fields = {
            "id": job_id,
            "kind": kind,
            "status": "queued",
            "created": created,
            "updated": created,
            "done": 0,
            "params": json.dumps(params, ensure_ascii=False),
        }
        if total is not None:
            fields["total"] = int(total)
        pipe = self.redis.pipeline()
        pipe.hset(self._key(job_id), mapping=fields)
        pipe.zadd(self._index, {job_id: stamp.timestamp()})
        pipe.sadd(self._active, job_id)
        pipe.execute()
        return self.require(job_id)

    def require(self, job_id: str) -> Job:
        """The job, which its caller knows exists (it created or is running it).

        Raises:
            LookupError: the job is gone (it expired, or Redis lost it).
        """
        job = self.get(job_id)
        if job is None:
            raise LookupError(f"job {job_id} is gone (expired, or Redis lost it)")
        return job

    def get(self, job_id: str) -> Job | None:
        """The job, or None when there is no such job (or it expired)."""
        raw = self.redis.hgetall(self._key(job_id))
        if not raw:
            return None
        data = {text_of(k): text_of(v) for k, v in raw.items()}
        counts = {k: 0 for k in OUTCOMES}
        rejected: dict[str, int] = {}
        for name, value in data.items():
            if name.startswith("n:"):
                counts[name[2:]] = int(value)
            elif name.startswith("r:") and int(value) > 0:
                rejected[name[2:]] = int(value)
        try:
            params = json.loads(data.get("params") or "{}")
        except json.JSONDecodeError:
            params = {}
        total = data.get("total")
        return Job(
            id=data.get("id") or job_id,
            kind=data.get("kind") or "",
            status=data.get("status") or "queued",
            created=data.get("created") or "",
            updated=data.get("updated") or data.get("created") or "",
            finished=data.get("finished"),
            total=int(total) if total not in (None, "") else None,
            done=int(data.get("done") or 0),
            counts=counts,
            rejected=dict(sorted(rejected.items(), key=lambda kv: (-kv[1], kv[0]))),
            params=params,
            message=data.get("message") or None,
            started=data.get("started"),
        )

    def list(self, *, offset: int = 0, limit: int = 50) -> tuple[int, list[Job]]:
        """``(total, jobs)``: one page of jobs, newest first."""
        total = self.redis.zcard(self._index)
        ids = [text_of(i) for i in self.redis.zrevrange(self._index, offset, offset + max(0, limit) - 1)]
        jobs = []
        for job_id in ids:
            job = self.get(job_id)
            if job is None:  # expired: drop it from the index
                self.redis.zrem(self._index, job_id)
                total -= 1
                continue
            jobs.append(job)
        return total, jobs

    def active(self, kind: str, *, index: str | None = None) -> Job | None:
        """A queued or running job of ``kind`` (the oldest), optionally only one working on ``index``."""
        found = []
        for job_id in (text_of(member) for member in self.redis.smembers(self._active)):
            job = self.get(job_id)
            if job is None or job.status not in ACTIVE:
                self.redis.srem(self._active, job_id)
                continue
            if job.kind == kind and (index is None or job.params.get("index") == index):
                found.append(job)
        return min(found, key=lambda j: j.created) if found else None

    def start(self, job_id: str, *, message: str | None = None) -> None:
        """Mark a job running (again, when resumed); ``started`` keeps the first start."""
        now = now_iso()
        pipe = self.redis.pipeline()
        pipe.hset(self._key(job_id), mapping={"status": "running", "updated": now, "message": message or ""})
        pipe.hsetnx(self._key(job_id), "started", now)
        pipe.hdel(self._key(job_id), "finished")
        pipe.sadd(self._active, job_id)
        for part in ("", "keys", "failures", "failure_order", "retry", "state", "outcomes"):
            pipe.persist(self._key(job_id, part))
        pipe.execute()

    def finish(self, job_id: str, status: str, *, message: str | None = None) -> None:
        """End a job (``done``, ``failed`` or ``cancelled``); its keys expire after ``RETENTION_SECONDS``."""
        if status in ACTIVE or status not in STATUSES:
            raise ValueError(f"a job finishes as done, failed or cancelled, not {status!r}")
        now = now_iso()
        pipe = self.redis.pipeline()
        pipe.hset(self._key(job_id), mapping={"status": status, "updated": now, "finished": now})
        if message is not None:
            pipe.hset(self._key(job_id), "message", message)
        pipe.srem(self._active, job_id)
        for part in ("", "keys", "failures", "failure_order", "retry", "state", "outcomes"):
            pipe.expire(self._key(job_id, part), RETENTION_SECONDS)
        pipe.execute()

    def update(self, job_id: str, *, total: int | None = None, message: str | None = None) -> None:
        """Set the total or the message (and the ``updated`` time)."""
        fields: dict = {"updated": now_iso()}
        if total is not None:
            fields["total"] = int(total)
        if message is not None:
            fields["message"] = message
        self.redis.hset(self._key(job_id), mapping=fields)

    def reset_progress(self, job_id: str) -> None:
        """Forget every checkpoint, counter and failure (a job that must start over)."""
        key = self._key(job_id)
        counters = [text_of(k) for k in self.redis.hkeys(key) if text_of(k).startswith(("n:", "r:"))]
        pipe = self.redis.pipeline()
        if counters:
            pipe.hdel(key, *counters)
        pipe.hset(key, "done", 0)
        pipe.delete(*(self._key(job_id, p) for p in ("keys", "failures", "failure_order", "retry", "outcomes")))
        pipe.execute()

    # ------------------------------------------------------------------ progress
    def record(
        self,
        job_id: str,
        key: str | None,
        outcomes: Iterable[dict],
        *,
        payloads: dict[str, dict] | None = None,
        add_total: int = 0,
    ) -> bool:
        """Count one unit of work's outcomes, once.

        Args:
            job_id: the job.
            key: the unit's checkpoint key (a batch or chunk); a key already
                recorded changes nothing. None counts without a checkpoint.
            outcomes: outcome dicts (``page_id``, ``status``, ``reason``, ``detail``).
            payloads: task payloads by page id, kept for a retry of the
                retryable failures (up to ``MAX_RETRY_PAYLOAD`` bytes each).
            add_total: pages to add to the job's total (work found on the way).

        Returns:
            True when counted, False when the key was already recorded or the job is gone.
        """
        outcomes = list(outcomes)
        counters: dict[str, int] = {}
        for o in outcomes:
            status = o.get("status") or "rejected"
            counters[f"n:{status}"] = counters.get(f"n:{status}", 0) + 1
            if status == "rejected":
                reason = f"r:{o.get('reason') or 'unknown'}"
                counters[reason] = counters.get(reason, 0) + 1
        if outcomes:
            counters["done"] = len(outcomes)
        if add_total:
            counters["total"] = add_total
        at = now_iso()
        failures, kept = [], {}
        for f in failures_of(outcomes, payloads):
            payload = json.dumps(f.payload, ensure_ascii=False) if f.payload is not None else None
            if payload is not None and len(payload) > MAX_RETRY_PAYLOAD:
                payload = None
            entry = {"item": f.item, "reason": f.reason, "detail": f.detail, "at": at, "retryable": payload is not None}
            failures.append([f.item, json.dumps(entry, ensure_ascii=False)])
            if payload is not None:
                kept[f.item] = payload
        keys = [self._key(job_id, p) for p in ("", "keys", "failures", "failure_order", "retry", "outcomes")]
        # each unit's outcomes, small: what a late redelivery or a resumed run reports for it
        brief = [{k: o[k] for k in OUTCOME_FIELDS if o.get(k) is not None} for o in outcomes]
        args = [key or "", at, json.dumps(counters), json.dumps(failures), json.dumps(kept), json.dumps(brief)]
        return self._record(keys=keys, args=args) == 1

    def outcomes(self, job_id: str, key: str) -> builtins.list[dict] | None:
        """The outcomes recorded for unit ``key`` (page id, status, cluster, reason), or None when none are."""
        raw = self.redis.hget(self._key(job_id, "outcomes"), key)
        return json.loads(raw) if raw else None

    def is_recorded(self, job_id: str, key: str) -> bool:
        """Whether the unit of work ``key`` has been counted."""
        return bool(self.redis.sismember(self._key(job_id, "keys"), key))

    def recorded(self, job_id: str) -> set[str]:
        """Every counted unit of work (the checkpoint of a resumed job)."""
        return {text_of(k) for k in self.redis.smembers(self._key(job_id, "keys"))}

    def failures(self, job_id: str, *, offset: int = 0, limit: int = 50) -> tuple[int, builtins.list[dict]]:
        """``(total, entries)``: failed pages in the order they failed, ``{item, reason, detail, at, retryable}``."""
        total = self.redis.llen(self._key(job_id, "failure_order"))
        items = self.redis.lrange(self._key(job_id, "failure_order"), offset, offset + max(0, limit) - 1)
        if not items:
            return total, []
        raw = self.redis.hmget(self._key(job_id, "failures"), items)
        return total, [json.loads(r) for r in raw if r is not None]

    def retryable_count(self, job_id: str) -> int:
        """How many failed pages a retry would re-queue."""
        return self.redis.hlen(self._key(job_id, "retry"))

    def take_retryable(self, job_id: str) -> builtins.list[dict]:
        """Remove the retryable failures (and their counts) from the job; returns their task payloads."""
        keys = [self._key(job_id, p) for p in ("", "failures", "failure_order", "retry")]
        return [json.loads(p) for p in self._take(keys=keys, args=[]) if p]

    # ------------------------------------------------------------------ coordinator state
    def state(self, job_id: str) -> dict[str, str]:
        """The coordinator's bookkeeping of a job (strings)."""
        return {text_of(k): text_of(v) for k, v in self.redis.hgetall(self._key(job_id, "state")).items()}

    def set_state(self, job_id: str, **values) -> None:
        """Set coordinator bookkeeping fields (None deletes a field)."""
        gone = [k for k, v in values.items() if v is None]
        kept = {k: str(v) for k, v in values.items() if v is not None}
        pipe = self.redis.pipeline()
        if kept:
            pipe.hset(self._key(job_id, "state"), mapping=kept)
        if gone:
            pipe.hdel(self._key(job_id, "state"), *gone)
        pipe.hset(self._key(job_id), "updated", now_iso())
        pipe.execute()

    def touch(self, job_id: str) -> None:
        """Refresh the ``updated`` time (the coordinator is alive)."""
        self.redis.hset(self._key(job_id), "updated", now_iso())
