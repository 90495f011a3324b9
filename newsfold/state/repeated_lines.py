"""Collection statistics kept incrementally in Redis: lines repeated across a site's stories.

Media Cloud's observation: sentences a site repeats across its stories in the
same week (subscription pitches, cookie notices, disclaimers, bylines of the
template) are not the story. newsfold keeps, per index, site and ISO week,
which page first carried each normalised line and whether another page carried
it too, and signs a page without the lines other pages of its site already
carried this week or last. A story republished under a second URL keeps the
lines its first copy carried first (its own text) and loses the same
furniture as that copy did, so both copies are signed alike. The state lives
in Redis (shared by every worker, persistent with Redis' AOF in production).

Memory is bounded per site and week. Each line has a 12-bit state: an 11-bit
fingerprint of the first page that carried it, and one bit set once a page
with another fingerprint carried it. A page re-ingested (same id, so the same
fingerprint) finds its own fingerprint and counts as no other page, so no set
of page ids is needed. A site-week starts as an exact Redis hash (line ->
state, Redis' compact listpack encoding) and becomes a fixed sketch of
``DEPTH`` rows of ``WIDTH`` 12-bit cells (30,720 bytes, one Redis string) once
it holds more than ``EXACT_LINES`` lines. Two lines sharing a cell merge their
states, which can only make a line look repeated, never the reverse: a line
counts as carried by another page when every one of its ``DEPTH`` cells says
so (a count-min rule), so a false positive needs ``DEPTH`` collisions
(see docs/scaling.md, "Redis sizing", for the rate against the lines a week).
Every update is one Lua script, atomic under concurrent workers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import unicodedata
from collections import Counter

from newsfold.plugin.text import tokenize

MIN_LINE_CHARS = 20  # shorter lines ("Reply", "Share") carry little weight either way
KEEP_AT_LEAST = 0.5  # never strip more than half a text: that is a same-site copy, not boilerplate
TTL_SECONDS = 21 * 24 * 3600
DEPTH = 5  # cells per line; 5 x 12 bits of the line's 64-bit hash pick them
WIDTH = 4096  # cells per row (12 bits): 5 x 4096 x 12 bits = 30,720 bytes per site-week
EXACT_LINES = 100  # lines a site-week keeps exactly (a listpack hash, ~2 KB) before it becomes the sketch
KIND = f"lines{DEPTH}x{WIDTH}"  # in the key: a sketch of another shape is never misread
OLD_KINDS = ("pages", "lines", "first")  # keys of the unbounded format before the sketch, dropped when seen
_FINGERPRINTS = 2047  # 11 bits, never 0 (an empty cell)

# KEYS: this week, last week, then this week's keys of the old format (deleted when this week starts).
# ARGV: the page's fingerprint, TTL, EXACT_LINES, WIDTH, DEPTH, then the line keys (16 hex digits each).
# Returns each line's DEPTH cell states this week and last week (as they were before this page), flat.
_RECORD_SCRIPT = """
local me, ttl, limit, width, depth = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local lines = #ARGV - 5
local function cells(line)
  local h, out = ARGV[5 + line], {}
  for r = 0, depth - 1 do out[r + 1] = r * width + tonumber(string.sub(h, 1 + 3 * r, 3 + 3 * r), 16) % width end
  return out
end
local function merge(v, w)
  if v == 0 then return w end
  if w == 0 or v % 2 == 1 then return v end
  if math.floor(v / 2) ~= math.floor(w / 2) or w % 2 == 1 then return v + 1 end
  return v
end
local function bitfield(key, op, nums, vals)
  local got = {}
  for s = 1, #nums, 400 do
    local args = {}
    for i = s, math.min(#nums, s + 399) do
      args[#args + 1] = op; args[#args + 1] = 'u12'; args[#args + 1] = '#' .. nums[i]
      if op == 'SET' then args[#args + 1] = vals[i] end
    end
    for _, v in ipairs(redis.call('BITFIELD', key, unpack(args))) do got[#got + 1] = v end
  end
  return got
end
local function all_cells()
  local nums = {}
  for i = 1, lines do for _, c in ipairs(cells(i)) do nums[#nums + 1] = c end end
  return nums
end
local function read(key, kind)
  if kind == 'string' then return bitfield(key, 'GET', all_cells()) end
  local out = {}
  for i = 1, lines do
    local v = 0
    if kind == 'hash' then v = tonumber(redis.call('HGET', key, ARGV[5 + i]) or '0') end
    for r = 1, depth do out[#out + 1] = v end
  end
  return out
end
local function to_sketch(key)
  local flat, merged, nums, vals = redis.call('HGETALL', key), {}, {}, {}
  for i = 1, #flat, 2 do
    local h, v = flat[i], tonumber(flat[i + 1])
    for r = 0, depth - 1 do
      local c = r * width + tonumber(string.sub(h, 1 + 3 * r, 3 + 3 * r), 16) % width
      merged[c] = merge(merged[c] or 0, v)
    end
  end
  for c, v in pairs(merged) do nums[#nums + 1] = c; vals[#vals + 1] = v end
  redis.call('DEL', key)
  redis.call('SETRANGE', key, depth * width * 3 / 2 - 1, '\\0')
  bitfield(key, 'SET', nums, vals)
end
local kind = redis.call('TYPE', KEYS[1])['ok']
local now, last = read(KEYS[1], kind), read(KEYS[2], redis.call('TYPE', KEYS[2])['ok'])
if kind == 'string' then
  local nums, vals, all = {}, {}, all_cells()
  for i, v in ipairs(now) do
    local w = merge(v, me * 2)
    if w ~= v then nums[#nums + 1] = all[i]; vals[#vals + 1] = w end
  end
  bitfield(KEYS[1], 'SET', nums, vals)
else
  if kind == 'none' then redis.call('UNLINK', KEYS[3], KEYS[4], KEYS[5]) end
  for i = 1, lines do
    local v = now[(i - 1) * depth + 1]
    local w = merge(v, me * 2)
    if w ~= v then redis.call('HSET', KEYS[1], ARGV[5 + i], w) end
  end
  if redis.call('HLEN', KEYS[1]) > limit then to_sketch(KEYS[1]) end
end
redis.call('EXPIRE', KEYS[1], ttl)
return {now, last}
"""


def _week(date: str | None) -> tuple[str, str]:
    try:
        day = dt.date.fromisoformat((date or "")[:10])
    except ValueError:
        day = dt.datetime.now(dt.UTC).date()
    this = day.isocalendar()
    last = (day - dt.timedelta(days=7)).isocalendar()
    return f"{this.year}-{this.week:02d}", f"{last.year}-{last.week:02d}"


def line_keys(text: str) -> list[str | None]:
    """For each line of a text, the hash of the line normalised (``plugin.text.normalize``), or None when short.

    The text is normalised once: NFKC and case folding never move a line break.
    """
    out: list[str | None] = []
    for line in unicodedata.normalize("NFKC", text).casefold().split("\n"):
        norm = " ".join(line.split())
        long_enough = len(norm) >= MIN_LINE_CHARS
        out.append(hashlib.blake2b(norm.encode("utf-8"), digest_size=8).hexdigest() if long_enough else None)
    return out


def fingerprint(page_id: str) -> int:
    """The page's 11-bit fingerprint (1-2047), the same on every worker: it tells a page's own lines from others'."""
    digest = hashlib.blake2b(page_id.encode("utf-8"), digest_size=4).digest()
    return 1 + int.from_bytes(digest, "big") % _FINGERPRINTS


def _carried_by_others(states: list[int], me: int) -> bool:
    """Every cell of the line says another page carried it (its first carrier is not me, or a second one came)."""
    return all(v and ((v >> 1) != me or v & 1) for v in states)


def _first_carriers(states: list[int], me: int) -> set[int]:
    """Fingerprints of the line's first carrier other than me: those found in two cells or more."""
    votes = Counter(v >> 1 for v in states if v)
    return {h for h, n in votes.items() if n >= 2 and h != me}


class RepeatedLines:
    """Per-site repeated-line state in Redis, bounded per site and week (see the module docstring)."""

    def __init__(self, redis_client, namespace: str) -> None:
        self.redis = redis_client
        self.namespace = namespace
        self._record = redis_client.register_script(_RECORD_SCRIPT)

    def _key(self, site: str, week: str, kind: str = KIND) -> str:
        return f"newsfold:{self.namespace}:{kind}:{site}:{week}"

    def record(self, site: str, page_id: str, date: str | None, wanted: list[str]) -> tuple[list[bool], list[set]]:
        """Record the page's lines; for each, whether other pages carried it and its first carriers' fingerprints."""
        this, last = _week(date)
        keys = [self._key(site, this), self._key(site, last), *(self._key(site, this, k) for k in OLD_KINDS)]
        me = fingerprint(page_id)
        now, before = self._record(keys=keys, args=[me, TTL_SECONDS, EXACT_LINES, WIDTH, DEPTH, *wanted])
        repeated, firsts = [], []
        for i in range(len(wanted)):
            a, b = now[i * DEPTH : (i + 1) * DEPTH], before[i * DEPTH : (i + 1) * DEPTH]
            repeated.append(_carried_by_others(a, me) or _carried_by_others(b, me))
            firsts.append(_first_carriers(a, me) | _first_carriers(b, me))
        return repeated, firsts

    def strip(
        self, text: str, *, site: str | None, page_id: str, date: str | None, line_tokens: list[int] | None = None
    ) -> str:
        """Record the page's lines and return its text without lines repeated on its site.

        ``line_tokens``: the token count of each non-blank line, when the caller has tokenised the text.
        """
        if not site:
            return text
        lines = text.split("\n")
        keys = line_keys(text)
        wanted = sorted({k for k in keys if k})
        if not wanted:
            return text
        flags, holders = self.record(site, page_id, date, wanted)
        others = dict(zip(wanted, flags, strict=True))
        first = dict(zip(wanted, holders, strict=True))
        repeated = [k is not None and others[k] for k in keys]
        if line_tokens is None:
            counts = [len(tokenize(line)) for line in lines]  # tokens never span lines: each line is counted once
        else:
            given = iter(line_tokens)
            counts = [next(given) if line.strip() else 0 for line in lines]
        tokens = sum(counts)
        # An earlier copy of this story on the site (a second URL: AMP, a section path, an update) first carried
        # most of this page's text, by the same measure as KEEP_AT_LEAST. Its lines are the story's own: they
        # stay, and the lines other pages carried first (the site's furniture) go, as they went from that copy.
        carried: Counter[int] = Counter()
        for k, rep, n in zip(keys, repeated, counts, strict=True):
            if rep and k is not None:
                carried.update(dict.fromkeys(first[k], n))
        best = min(carried.items(), key=lambda c: (-c[1], c[0]), default=None)  # most tokens; ties: smallest
        copy_of = best[0] if best is not None and best[1] > KEEP_AT_LEAST * tokens else None
        keep = [not rep or (k is not None and copy_of in first[k]) for k, rep in zip(keys, repeated, strict=True)]
        if all(keep):
            return text
        if sum(n for n, ok in zip(counts, keep, strict=True) if ok) < KEEP_AT_LEAST * tokens:
            return text
        return "\n".join(line for line, ok in zip(lines, keep, strict=True) if ok)
