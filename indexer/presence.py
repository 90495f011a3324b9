"""The band keys' presence filter in Redis: one Bloom filter per concrete index (``plugin.fold.presence``).

Each index has one Redis string, ``newsfold:presence:<index>``, of
``NEWSFOLD_PRESENCE_SIZE`` bytes: a 64-byte header, then the filter's bits.
A key sets :data:`HASHES` bits, at positions drawn from one 128-bit BLAKE2b
hash of the key string (double hashing). A batch's reads are one Lua script
over every index searched, its adds one script per index written (``SETBIT``
/``GETBIT`` run inside Redis, the positions sent packed).

Validity lives inside the string: the header holds the Redis server's
``run_id`` and the filter's geometry, written by :meth:`RedisPresence.mark`
when newsfold creates the index. So a key that is lost (flushed, evicted,
expired) reads as not valid, and so does every filter after a restart of
Redis (its ``run_id`` changes: the last second of adds may be missing from
an append-only file) or after a change of ``NEWSFOLD_PRESENCE_SIZE``. An add
that finds a header of another run or size blanks it: the filter stays not
valid for good, and its index is searched for every key (until it leaves
the lookup window; the next rollover starts a valid filter).

Beside each filter, a recurrence filter (``newsfold:presence:<index>:recur``,
a quarter of the size, its own header) holds the keys added more than once:
an add sets each key's bits with ``BITFIELD``, which answers each bit's value
before, and a key whose bits were all set already (another page holds it, or
a false positive) is set in the recurrence filter too. An add that finds the
filter not valid blanks the recurrence filter's header: a recurrence filter
is valid only if every add since the mark could check against a valid
filter. The reconcile lookup reads it (``plugin.fold.presence.RecurringPresence``).

Each add (and the mark) keeps the key alive for ``NEWSFOLD_LOOKUP_WINDOW``
plus a day after the last write into its index, the time its index stays in
the lookup window; with a window of ``0`` keys never expire.

Sizing (docs/scaling.md, "Redis sizing"): the optimal filter is
``-ln(p) / ln(2)^2`` bits per key, 128 keys a page: 9.6 bits (1,227 Mbit,
153 MB per million pages) for p = 1%, 6.2 bits (100 MB) for 5%.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from redis.exceptions import RedisError

from newsfold.plugin.fold.presence import PresenceUnavailable
from newsfold.plugin.settings import Settings, seconds, size_bytes
from newsfold.state import redis_down_errors

log = logging.getLogger(__name__)

#: bits set per key
HASHES = 5
#: bytes before the filter's bits: ``nfp1:<run_id>:<bits>:<hashes>``, space-padded
HEADER = 64
#: the time a filter outlives its index's last write beyond the lookup window
TTL_MARGIN = 86_400.0
#: the recurrence filter's share of NEWSFOLD_PRESENCE_SIZE (it holds only the keys of copies)
RECUR_SHARE = 4

_HEADER_LUA = f"""
local function header(cfg)
  local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  local h = 'nfp1:' .. run .. ':' .. cfg
  return h .. string.rep(' ', {HEADER} - #h)
end
-- one BITFIELD operation per position, CHUNK positions a call (Lua's unpack takes at most about 8,000 values):
-- 'GET' reads each bit, 'SET' sets it to 1; either way the answer is each bit's value before, as 0/1, in order
local CHUNK = 1500
local function bitfield(key, op, positions)
  local out = {{}}
  for s = 1, #positions, CHUNK do
    local args = {{}}
    for i = s, math.min(#positions, s + CHUNK - 1) do
      args[#args + 1] = op
      args[#args + 1] = 'u1'
      args[#args + 1] = positions[i]
      if op == 'SET' then args[#args + 1] = 1 end
    end
    for _, v in ipairs(redis.call('BITFIELD', key, unpack(args))) do out[#out + 1] = v end
  end
  return out
end
-- per key (k packed uint32 positions each, little-endian): whether all its bits are set. Each key's first bit is
-- read first, the others only for keys whose first bit is set (most keys asked of a filter are absent)
local function all_set(key, packed, k)
  local n = #packed / (4 * k)
  local first = {{}}
  for i = 0, n - 1 do first[#first + 1] = struct.unpack('<I4', packed, 4 * k * i + 1) end
  local out = bitfield(key, 'GET', first)
  local rest, owner = {{}}, {{}}
  for i = 1, n do
    if out[i] == 1 then
      for j = 2, k do
        rest[#rest + 1] = struct.unpack('<I4', packed, 4 * (k * (i - 1) + j - 1) + 1)
        owner[#owner + 1] = i
      end
    end
  end
  for m, v in ipairs(bitfield(key, 'GET', rest)) do
    if v == 0 then out[owner[m]] = 0 end
  end
  return out
end
"""
#: KEYS[1] the filter, KEYS[2] its recurrence filter; ARGV: their geometries, the TTL in ms (0: none)
_MARK = (
    _HEADER_LUA
    + """
redis.call('SETRANGE', KEYS[1], 0, header(ARGV[1]))
redis.call('SETRANGE', KEYS[2], 0, header(ARGV[2]))
if tonumber(ARGV[3]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
return 1
"""
)
#: KEYS[1] the filter, KEYS[2] its recurrence filter; ARGV: their geometries, the bits per key, the TTL in ms, the
#: distinct keys' bit positions in each (uint32, little-endian), one byte per key ('1': given more than once in
#: this add). A key whose bits were all set before this add (another add brought it, or a false positive) recurs
_ADD = (
    _HEADER_LUA
    + f"""
local want = header(ARGV[1])
local have = redis.call('GETRANGE', KEYS[1], 0, {HEADER - 1})
if have ~= want then
  if have ~= '' then redis.call('SETRANGE', KEYS[1], 0, string.rep('\\0', {HEADER})) end
  -- unchecked adds would leave recurring keys out: the recurrence filter is not valid from now on
  redis.call('SETRANGE', KEYS[2], 0, string.rep('\\0', {HEADER}))
end
local have2 = redis.call('GETRANGE', KEYS[2], 0, {HEADER - 1})
if have2 ~= '' and have2 ~= header(ARGV[2]) then
  redis.call('SETRANGE', KEYS[2], 0, string.rep('\\0', {HEADER}))
end
local k = tonumber(ARGV[3])
local bits, again, twice = ARGV[5], ARGV[6], ARGV[7]
local set = {{}}
for at = 1, #bits, 4 do set[#set + 1] = struct.unpack('<I4', bits, at) end
-- one BITFIELD SET per bit answers the bit's value before: a key whose bits were all set already recurs
local before = bitfield(KEYS[1], 'SET', set)
local recur = {{}}
for key = 0, #twice - 1 do
  local seen = string.byte(twice, key + 1) == 49
  if not seen then
    seen = true
    for j = 1, k do
      if before[key * k + j] == 0 then
        seen = false
        break
      end
    end
  end
  if seen then
    for j = 1, k do recur[#recur + 1] = struct.unpack('<I4', again, 4 * (key * k + j - 1) + 1) end
  end
end
bitfield(KEYS[2], 'SET', recur)
if tonumber(ARGV[4]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[2], ARGV[4])
end
return 1
"""
)
#: KEYS the filters; ARGV: the geometry, the bits per key, the positions. Per filter: '' when it is not valid,
#: else one byte per key, '1' when every bit of the key is set
_READ = (
    _HEADER_LUA
    + f"""
local want = header(ARGV[1])
local k = tonumber(ARGV[2])
local out = {{}}
for n, key in ipairs(KEYS) do
  if redis.call('GETRANGE', key, 0, {HEADER - 1}) ~= want then
    out[n] = ''
  else
    local flags = {{}}
    for i, v in ipairs(all_set(key, ARGV[3], k)) do flags[i] = v == 1 and '1' or '0' end
    out[n] = table.concat(flags)
  end
end
return out
"""
)


def _hashes(keys: Sequence[str]) -> np.ndarray:
    """One 128-bit BLAKE2b hash per key, as two uint64 (the double hashing's two halves)."""
    digests = b"".join(hashlib.blake2b(k.encode("utf-8"), digest_size=16).digest() for k in keys)
    return np.frombuffer(digests, dtype="<u8").reshape(-1, 2)


class PresenceDown(PresenceUnavailable, *redis_down_errors()[:1]):  # type: ignore[misc]
    """Redis could not record a batch's band keys: nothing was written. A Redis connection error too, so a
    worker waits for Redis and tries the batch again (``newsfold.state.patiently``)."""


class RedisPresence:
    """:class:`newsfold.plugin.fold.presence.RecurringPresence` over Redis bitmaps, two per concrete index."""

    def __init__(self, redis: Any, *, size: str = "128mb", window: str = "90d") -> None:
        self.redis = redis
        self.bits = size_bytes(size) * 8 - HEADER * 8
        self.geometry = f"{self.bits}:{HASHES}"
        self.recur_bits = size_bytes(size) // RECUR_SHARE * 8 - HEADER * 8
        self.recur_geometry = f"{self.recur_bits}:{HASHES}:recur"
        window_s = seconds(window)
        self.ttl_ms = int((window_s + TTL_MARGIN) * 1000) if window_s else 0
        self._mark = redis.register_script(_MARK)
        self._add = redis.register_script(_ADD)
        self._read = redis.register_script(_READ)

    @classmethod
    def for_settings(cls, redis: Any, settings: Settings) -> RedisPresence:
        return cls(redis, size=settings.presence_size, window=settings.lookup_window)

    @staticmethod
    def key(index: str) -> str:
        return f"newsfold:presence:{index}"

    @classmethod
    def recur_key(cls, index: str) -> str:
        return cls.key(index) + ":recur"  # an index name holds no ':'

    def positions(self, keys: Sequence[str], bits: int | None = None) -> bytes:
        """The :data:`HASHES` bit positions of each key in a filter of ``bits`` (default: the presence filter's),
        packed as little-endian uint32."""
        return self._spots(_hashes(keys), bits or self.bits)

    @staticmethod
    def _spots(h: np.ndarray, bits: int) -> bytes:
        steps = np.arange(HASHES, dtype=np.uint64)
        with np.errstate(over="ignore"):
            spots = (h[:, :1] + steps * (h[:, 1:] | np.uint64(1))) % np.uint64(bits)
        return (spots + np.uint64(HEADER * 8)).astype("<u4").tobytes()

    def mark(self, index: str) -> None:
        try:
            self._mark(keys=[self.key(index), self.recur_key(index)],
                       args=[self.geometry, self.recur_geometry, self.ttl_ms])  # fmt: skip
        except RedisError as exc:  # no valid filter: its index is searched in full
            log.warning("presence filter of %s not started (Redis unavailable: %s)", index, exc)

    def add(self, index: str, keys: Sequence[str]) -> None:
        if not keys:
            return
        counts = Counter(keys)  # a key given twice (two pages of a batch share it) recurs
        distinct = list(counts)
        twice = bytes(ord("1") if counts[k] > 1 else ord("0") for k in distinct)
        h = _hashes(distinct)  # hashed once, placed in both filters
        try:
            self._add(
                keys=[self.key(index), self.recur_key(index)],
                args=[self.geometry, self.recur_geometry, HASHES, self.ttl_ms, self._spots(h, self.bits),
                      self._spots(h, self.recur_bits), twice],
            )  # fmt: skip
        except RedisError as exc:  # unreachable, or refusing (out of memory): the batch must not write
            raise PresenceDown(
                f"Redis is unavailable, so the presence filter of {index} cannot record the batch's band keys; "
                f"nothing was written, the batch waits and is tried again ({type(exc).__name__}: {exc})"
            ) from exc

    def may_contain(self, indices: Sequence[str], keys: Sequence[str]) -> Mapping[str, Sequence[bool]]:
        return self._flags([self.key(i) for i in indices], indices, keys, self.geometry, self.bits)

    def may_recur(self, indices: Sequence[str], keys: Sequence[str]) -> Mapping[str, Sequence[bool]]:
        return self._flags([self.recur_key(i) for i in indices], indices, keys, self.recur_geometry, self.recur_bits)

    def _flags(
        self, names: list[str], indices: Sequence[str], keys: Sequence[str], geometry: str, bits: int
    ) -> Mapping[str, Sequence[bool]]:
        if not indices or not keys:
            return {}
        try:
            got = self._read(keys=names, args=[geometry, HASHES, self.positions(keys, bits)])
        except RedisError as exc:  # fail open
            log.warning("presence filter unreadable (%s: %s): looking up every key", type(exc).__name__, exc)
            return {}
        return {i: [c == ord("1") for c in bytes(flags)] for i, flags in zip(indices, got, strict=True) if flags}
