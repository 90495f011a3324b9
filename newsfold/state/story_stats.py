"""Collection statistics for shingle weights: story frequencies in a count-min sketch in Redis.

CEDAR drops the collection's most frequent shingles; Alonso, Fetterly and
Manasse weight a phrase by the document frequency of its first word and zero
it when the phrase itself is common. Both need frequencies over the whole
collection, kept incrementally and shared by every worker, so they live in
Redis (the broker newsfold already runs) and survive worker restarts.

What is counted is *stories*, not pages: a page adds its shingles and words
only when it starts a new cluster. Counting every copy would make the phrases
of a story syndicated to fifty sites look like boilerplate and switch them off
exactly where they matter; boilerplate (a site's footer, a wire credit, legal
text) still recurs across many different stories.

The counters form a count-min sketch (``depth`` rows of ``width`` 32-bit
counters in one Redis string, updated and read with ``BITFIELD``): memory is
fixed (16 MiB by default) whatever the collection size, and a count is never
under-estimated, only over-estimated by about (total increments / width).
"""

from __future__ import annotations

import numpy as np

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray, salt: int) -> np.ndarray:
    """splitmix64 finaliser of ``x ^ salt``: independent hash functions per row."""
    with np.errstate(over="ignore"):
        z = (x ^ np.uint64(salt)) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


class StoryStats:
    """Story frequencies of hashed features, shared by all workers through Redis.

    Args:
        redis: a ``redis.Redis`` client.
        namespace: usually the index alias; one sketch per namespace.
        width: counters per row (a power of two).
        depth: rows (independent hash functions).
    """

    def __init__(self, redis, namespace: str, *, width: int = 1 << 20, depth: int = 4) -> None:
        if width & (width - 1) or width < 1024:
            raise ValueError(f"width must be a power of two >= 1024, got {width}")
        if not 1 <= depth <= 8:
            raise ValueError(f"depth must be in [1, 8], got {depth}")
        self.redis = redis
        self.width = width
        self.depth = depth
        self.sketch_key = f"newsfold:stories:{namespace}:cms"
        self.count_key = f"newsfold:stories:{namespace}:count"

    def _offsets(self, hashes: np.ndarray) -> bytes:
        """Counter numbers of each hash, feature-major (``depth`` per hash), packed little-endian uint32."""
        rows = [
            (_mix(hashes, 0x51ED27 + r) & np.uint64(self.width - 1)) + np.uint64(r * self.width)
            for r in range(self.depth)
        ]
        return np.stack(rows, axis=1).astype("<u4").tobytes()

    def stories(self) -> int:
        """How many stories have been added."""
        return int(self.redis.get(self.count_key) or 0)

    def frequencies(self, hashes: np.ndarray) -> tuple[np.ndarray, int]:
        """Estimated story frequency of each hash (in the given order), and the number of stories.

        One round trip: a server-side script reads the counters with
        ``BITFIELD GET`` and returns each hash's minimum over the rows.
        """
        hashes = np.asarray(hashes, dtype=np.uint64)
        unique, inverse = np.unique(hashes, return_inverse=True)
        if len(unique) == 0:
            return np.zeros(0, dtype=np.int64), self.stories()
        packed, count = self._script()(
            keys=[self.sketch_key, self.count_key], args=["get", self.depth, self._offsets(unique)]
        )
        counts = np.frombuffer(packed, dtype="<u4").astype(np.int64)
        return counts[inverse.reshape(-1)], int(count or 0)

    def lookup(self, hashes: np.ndarray) -> tuple[dict[int, int], int]:
        """Like :meth:`frequencies`, as a dict keyed by hash."""
        unique = np.unique(np.asarray(hashes, dtype=np.uint64))
        counts, stories = self.frequencies(unique)  # unique: already in order
        return dict(zip(unique.tolist(), counts.tolist(), strict=True)), stories

    def add(self, hashes: np.ndarray) -> None:
        """Count one story holding these features (each counted once)."""
        unique = np.unique(np.asarray(hashes, dtype=np.uint64))
        self._script()(keys=[self.sketch_key, self.count_key], args=["add", self.depth, self._offsets(unique)])

    def _script(self):
        script = getattr(self, "_registered", None)
        if script is None:
            script = self._registered = self.redis.register_script(_SKETCH_SCRIPT)
        return script

    def clear(self) -> None:
        """Forget everything (tests, a fresh collection)."""
        self.redis.delete(self.sketch_key, self.count_key)


# KEYS: sketch, story count. ARGV: "get" | "add", depth, packed uint32 counter numbers.
# Counters are read/incremented with BITFIELD in chunks (Lua's unpack has a stack limit);
# "get" returns the per-feature minimum packed as uint32 and the story count.
_SKETCH_SCRIPT = """
local op, depth, blob = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local n = #blob / 4
local chunk = 1000
local values = {}
for start = 0, n - 1, chunk do
  local args = {}
  if op == "add" then
    args[1] = "OVERFLOW"; args[2] = "SAT"
  end
  for i = start, math.min(n, start + chunk) - 1 do
    local off = struct.unpack("<I4", blob, i * 4 + 1)
    if op == "add" then
      args[#args + 1] = "INCRBY"; args[#args + 1] = "u32"; args[#args + 1] = "#" .. off; args[#args + 1] = 1
    else
      args[#args + 1] = "GET"; args[#args + 1] = "u32"; args[#args + 1] = "#" .. off
    end
  end
  local got = redis.call("BITFIELD", KEYS[1], unpack(args))
  if op == "get" then
    for _, v in ipairs(got) do values[#values + 1] = v end
  end
end
if op == "add" then
  return redis.call("INCR", KEYS[2])
end
local out = {}
for f = 0, n / depth - 1 do
  local m = values[f * depth + 1]
  for r = 2, depth do
    local v = values[f * depth + r]
    if v < m then m = v end
  end
  out[#out + 1] = struct.pack("<I4", m)
end
return {table.concat(out), redis.call("GET", KEYS[2]) or "0"}
"""
