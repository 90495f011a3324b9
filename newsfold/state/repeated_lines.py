"""Collection statistics kept incrementally in Redis: lines repeated across a site's stories.

Media Cloud's observation: sentences a site repeats across its stories in the
same week (subscription pitches, cookie notices, disclaimers, bylines of the
template) are not the story. newsfold keeps, per index, site and ISO week, how
many distinct pages carried each normalised line and which page carried it
first, and signs a page without the lines other pages of its site already
carried this week or last. A story republished under a second URL keeps the
lines its first copy carried first (its own text) and loses the same
furniture as that copy did, so both copies are signed alike. The counts
live in Redis (shared by every worker, persistent with Redis' AOF in
production) and are updated once per page id, so re-ingesting changes nothing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import unicodedata

from newsfold.plugin.fold.origin_rule import plausible, utc
from newsfold.plugin.text import tokenize

MIN_LINE_CHARS = 20  # shorter lines ("Reply", "Share") carry little weight either way
KEEP_AT_LEAST = 0.5  # never strip more than half a text: that is a same-site copy, not boilerplate
TTL_SECONDS = 21 * 24 * 3600

# One round trip per page: add the page to this week's set; read each line's count this week and last week, and
# the page that first carried it; count the lines this week (and note this page as their first carrier where no
# page is yet) if the page is new to the set, so re-ingesting a page changes nothing.
_RECORD_SCRIPT = """
local is_new = redis.call('SADD', KEYS[1], ARGV[1])
local now, last, first = {}, {}, {}
for i = 3, #ARGV do
  now[#now + 1] = redis.call('HGET', KEYS[2], ARGV[i])
  last[#last + 1] = redis.call('HGET', KEYS[3], ARGV[i])
  local f = redis.call('HGET', KEYS[4], ARGV[i]) or redis.call('HGET', KEYS[5], ARGV[i])
  first[#first + 1] = f or ''
  if is_new == 1 then
    redis.call('HINCRBY', KEYS[2], ARGV[i], 1)
    redis.call('HSETNX', KEYS[4], ARGV[i], ARGV[1])
  end
end
if is_new == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  redis.call('EXPIRE', KEYS[2], ARGV[2])
  redis.call('EXPIRE', KEYS[4], ARGV[2])
end
return {is_new, now, last, first}
"""


def _week(date: str | None) -> tuple[str, str]:
    """This week and last of a page's date; a date that is not believed (before 1990, more than a day ahead,
    unreadable) is no date: the current week."""
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


class RepeatedLines:
    """Per-site repeated-line counts in Redis (see the module docstring)."""

    def __init__(self, redis_client, namespace: str) -> None:
        self.redis = redis_client
        self.namespace = namespace
        self._record = redis_client.register_script(_RECORD_SCRIPT)

    def _key(self, site: str, week: str, kind: str) -> str:
        return f"newsfold:{self.namespace}:{kind}:{site}:{week}"

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
        this, last = _week(date)
        keys_used = [
            self._key(site, this, "pages"),
            self._key(site, this, "lines"),
            self._key(site, last, "lines"),
            self._key(site, this, "first"),
            self._key(site, last, "first"),
        ]
        is_new, now_counts, last_counts, firsts = self._record(keys=keys_used, args=[page_id, TTL_SECONDS, *wanted])
        own = 0 if is_new == 1 else 1
        others = {k: int(a or 0) - own + int(b or 0) for k, a, b in zip(wanted, now_counts, last_counts, strict=True)}
        first = {k: _text(f) for k, f in zip(wanted, firsts, strict=True)}
        repeated = [k is not None and others.get(k, 0) > 0 for k in keys]
        # An earlier copy of this story on the site (a second URL: AMP, a section path, an update) first carried
        # most of this page's text, by the same measure as KEEP_AT_LEAST. Its lines are the story's own: they
        # stay, and the lines other pages carried first (the site's furniture) go, as they went from that copy.
        if line_tokens is None:
            counts = [len(tokenize(line)) for line in lines]  # tokens never span lines: each line is counted once
        else:
            given = iter(line_tokens)
            counts = [next(given) if line.strip() else 0 for line in lines]
        tokens = sum(counts)
        carried: dict[str, int] = {}
        for k, rep, n in zip(keys, repeated, counts, strict=True):
            if rep and k is not None and (holder := first.get(k)) and holder != page_id:
                carried[holder] = carried.get(holder, 0) + n
        copy_of = next((p for p, n in carried.items() if n > KEEP_AT_LEAST * tokens), None)
        keep = [
            not rep or (copy_of is not None and k is not None and first.get(k) == copy_of)
            for k, rep in zip(keys, repeated, strict=True)
        ]
        if all(keep):
            return text
        if sum(n for n, ok in zip(counts, keep, strict=True) if ok) < KEEP_AT_LEAST * tokens:
            return text
        return "\n".join(line for line, ok in zip(lines, keep, strict=True) if ok)


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value or "")
