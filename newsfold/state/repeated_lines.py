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
of page ids is needed. A site-week is one Redis string. It starts exact: 10
bytes a line (its 8-byte key and its state), so a small site costs what it
carries. Past ``EXACT_LINES`` lines (30,000 bytes) it becomes a fixed table of
``BUCKETS`` buckets of ``SLOTS`` 24-bit slots (a 12-bit tag of the line and its
state; 30,720 bytes, the one length that means a table).
A line lives in the first free slot of one of its two buckets (as in a cuckoo
filter, without moves). When both are full, it takes the place of a line only
one page has carried so far; lines several pages carried (the site's furniture,
a story's copies) stay. So a line another page carried is missed only when its
first sighting was pushed out before the second came (at 28 lines a page, a
table holds the lines of about 350 pages), and a new line is taken for another
(a false positive) only when its tag matches one of the 8 slots it looks at:
at most 8 / 4095 (0.2%) whatever the volume. Every update is one Lua script,
atomic under concurrent workers.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import unicodedata
from collections import Counter

from newsfold.plugin.fold.origin_rule import plausible
from newsfold.plugin.text import tokenize
from newsfold.plugin.times import utc

MIN_LINE_CHARS = 20  # shorter lines ("Reply", "Share") carry little weight either way
KEEP_AT_LEAST = 0.5  # never strip more than half a text: that is a same-site copy, not boilerplate
TTL_SECONDS = 21 * 24 * 3600
BUCKETS = 2560  # x SLOTS slots of 24 bits: 30,720 bytes per site-week, 10,240 lines
SLOTS = 4  # as the script's `slots`
EXACT_LINES = 3000  # lines a site-week keeps exactly (10 bytes each) before it becomes the table
KIND = f"lines{BUCKETS}x{SLOTS}"  # in the key: a table of another shape is never misread
OLD_KINDS = ("pages", "lines", "first")  # keys of the unbounded format before the table, dropped when seen
_FINGERPRINTS = 2047  # 11 bits, never 0 (an empty cell)

# KEYS: this week, last week, then this week's keys of the old format (deleted when this week starts).
# ARGV: the page's fingerprint, TTL, EXACT_LINES, BUCKETS, then the line keys (8 bytes each).
# Returns each line's state this week and last week, as they were before this page (0: not known).
# Exact: entries of the 8-byte key and the state (2 bytes, big-endian). Table: slots of tag * 4096 + state, 3 bytes;
# a line's key gives its two buckets (24 bits each), its tag (16 bits) and where eviction starts.
_RECORD_SCRIPT = """
local me, ttl, limit, buckets = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local lines, slots = #ARGV - 4, 4
local table_bytes = buckets * slots * 3
local function parse(h)
  local x1, x2, x3, x4, x5, x6, x7, x8 = string.byte(h, 1, 8)
  return ((x1 * 256 + x2) * 256 + x3) % buckets, ((x4 * 256 + x5) * 256 + x6) % buckets,
    1 + (x7 * 256 + x8) % 4095, x3
end
local function merge(v, w)
  if v == 0 then return w end
  if w == 0 or v % 2 == 1 then return v end
  if math.floor(v / 2) ~= math.floor(w / 2) or w % 2 == 1 then return v + 1 end
  return v
end
local function slot(blob, i)
  local a, b, c = string.byte(blob, 3 * i + 1, 3 * i + 3)
  return (a * 256 + b) * 256 + c
end
local function find(blob, h)
  if #blob ~= table_bytes then
    local from = 1
    while true do
      local at = string.find(blob, h, from, true)
      if not at then return 0 end
      if (at - 1) % 10 == 0 then
        local a, b = string.byte(blob, at + 8, at + 9)
        return a * 256 + b, at
      end
      from = at + 1
    end
  end
  local b1, b2, tag = parse(h)
  for _, b in ipairs({b1, b2}) do
    for s = 0, slots - 1 do
      local v = slot(blob, b * slots + s)
      if math.floor(v / 4096) == tag then return v % 4096 end
    end
  end
  return 0
end
local function put(blob, cur, h, w)
  local b1, b2, tag, start = parse(h)
  local free, once = nil, {}
  for _, b in ipairs({b1, b2}) do
    for s = 0, slots - 1 do
      local i = b * slots + s
      local v = cur[i] or slot(blob, i)
      if math.floor(v / 4096) == tag then
        cur[i] = tag * 4096 + merge(v % 4096, w)
        return
      end
      if v == 0 then free = free or i elseif v % 2 == 0 then once[#once + 1] = i end
    end
  end
  if free then cur[free] = tag * 4096 + w elseif #once > 0 then cur[once[start % #once + 1]] = tag * 4096 + w end
end
local function write(key, cur)
  local args = {}
  for i, v in pairs(cur) do
    args[#args + 1] = 'SET'; args[#args + 1] = 'u24'; args[#args + 1] = '#' .. i; args[#args + 1] = v
    if #args >= 400 then redis.call('BITFIELD', key, unpack(args)); args = {} end
  end
  if #args > 0 then redis.call('BITFIELD', key, unpack(args)) end
end
local function to_table(key, blob)
  local cur, empty = {}, string.rep('\\0', table_bytes)
  for at = 1, #blob, 10 do
    local a, b = string.byte(blob, at + 8, at + 9)
    put(empty, cur, string.sub(blob, at, at + 7), a * 256 + b)
  end
  redis.call('DEL', key)
  redis.call('SETRANGE', key, table_bytes - 1, '\\0')
  write(key, cur)
end
local function exact(key, pos, now)
  local added = {}
  for i = 1, lines do
    local h, v = ARGV[4 + i], now[i]
    local w = merge(v, me * 2)
    if v == 0 then added[#added + 1] = h .. string.char(math.floor(w / 256), w % 256)
    elseif w ~= v then redis.call('SETRANGE', key, pos[i] + 7, string.char(math.floor(w / 256), w % 256)) end
  end
  if #added == 0 then return end
  local all = (redis.call('GET', key) or '') .. table.concat(added)
  if #all / 10 > limit then to_table(key, all) else redis.call('SET', key, all) end
end
local function read(key)
  local blob, out, at = redis.call('GET', key), {}, {}
  for i = 1, lines do
    if blob then out[i], at[i] = find(blob, ARGV[4 + i]) else out[i] = 0 end
  end
  return out, blob, at
end
local now, blob, at = read(KEYS[1])
local last = read(KEYS[2])
if not blob then redis.call('UNLINK', KEYS[3], KEYS[4], KEYS[5]) end
if blob and #blob == table_bytes then
  local cur = {}
  for i = 1, lines do put(blob, cur, ARGV[4 + i], me * 2) end
  write(KEYS[1], cur)
else
  exact(KEYS[1], at, now)
end
redis.call('EXPIRE', KEYS[1], ttl)
return {now, last}
"""


def iso_weeks(date: str | None) -> tuple[str, str]:
    """The ISO week of a page's date and the week before, as ``2025-10``; a date that is not believed (before
    1990, more than a day ahead, unreadable) is no date: the current week."""
    now = dt.datetime.now(dt.UTC)
    when = utc((date or "")[:10])
    day = when.date() if plausible(when, seen=now) and when is not None else now.date()
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


def _carried_by_others(state: int, me: int) -> bool:
    """The line's first carrier is another page, or a second page carried it."""
    return bool(state) and ((state >> 1) != me or bool(state & 1))


def _first_carrier(state: int, me: int) -> set[int]:
    """The fingerprint of the line's first carrier when that is another page."""
    return {state >> 1} if state and state >> 1 != me else set()


class RepeatedLines:
    """Per-site repeated-line state in Redis, bounded per site and week (see the module docstring)."""

    def __init__(self, redis_client, namespace: str) -> None:
        self.redis = redis_client
        self.namespace = namespace
        self._record = redis_client.register_script(_RECORD_SCRIPT)

    def _key(self, site: str, week: str, kind: str = KIND) -> str:
        return f"newsfold:{self.namespace}:{kind}:{site}:{week}"

    def _call(self, site: str, page_id: str, date: str | None, wanted: list[str], client=None):
        this, last = iso_weeks(date)
        keys = [self._key(site, this), self._key(site, last), *(self._key(site, this, k) for k in OLD_KINDS)]
        args = [fingerprint(page_id), TTL_SECONDS, EXACT_LINES, BUCKETS, *(bytes.fromhex(k) for k in wanted)]
        return self._record(keys=keys, args=args, client=client)

    def send(self, pipeline, site: str, page_id: str, date: str | None, wanted: list[str]) -> None:
        """Record a page's line keys through a pipeline, answer unread (bulk loads, benchmarks/redis_bench.py)."""
        self._call(site, page_id, date, wanted, client=pipeline)

    def record(self, site: str, page_id: str, date: str | None, wanted: list[str]) -> tuple[list[bool], list[set]]:
        """Record the page's lines; for each, whether other pages carried it and its first carriers' fingerprints.

        ``wanted``: the page's distinct line keys (:func:`line_keys`).
        """
        me = fingerprint(page_id)
        now, before = self._call(site, page_id, date, wanted)
        repeated = [_carried_by_others(a, me) or _carried_by_others(b, me) for a, b in zip(now, before, strict=True)]
        firsts = [_first_carrier(a, me) | _first_carrier(b, me) for a, b in zip(now, before, strict=True)]
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
