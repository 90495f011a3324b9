"""Redis memory of the repeated-lines state: the bounded sketch against the unbounded hashes it replaced.

Feeds synthetic pages straight to the Redis side of the repeated-lines filter
(``newsfold.state.repeated_lines``), one variant at a time, each in a fresh Redis
server of its own (no persistence): ``after`` is ``RepeatedLines`` as shipped,
``before`` the previous format (one hash of line counts, one hash of first
carriers and one set of page ids per index, site and ISO week), whose script is
kept here only for this comparison. Pages are spread evenly over ``--sites``
sites and ``--weeks`` consecutive ISO weeks, in date order; each carries
``--furniture`` lines drawn from its site's pool of ``--pool`` template lines
and ``--article`` lines of its own. Reported per variant: ``used_memory``
(INFO memory) after minus before, the sum of ``MEMORY USAGE`` (all elements
sampled) over the keys, bytes per page and per site-week, pages/s.

Then a probe: one new page per site of the last week (its site's furniture and
fresh article lines) asks each variant which lines are repeated: the share of
furniture found, of article lines wrongly found (false positives), and of
probe pages the filter strips as intended (more than half of the lines kept,
so the ``KEEP_AT_LEAST`` guard does not return the whole text).

    nice python benchmarks/redis_bench.py --pages 1000000 --sites 500 --weeks 2 --json /tmp/redis-bench.json

With ``--dev DEV_DIR``, the pages are the dev set's instead: each page extracted
by newsfold, its line keys (``line_keys``) recorded under its site and its
article's date, in date order (no probe).

    nice python benchmarks/redis_bench.py --dev ../shared/data/dev --json /tmp/redis-bench-dev.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from newsfold.embedded import redis_binary
from newsfold.plugin.extract.article import extract_article
from newsfold.plugin.extract.result import Rejection
from newsfold.plugin.urls import site_of
from newsfold.ports import free_port
from newsfold.state.repeated_lines import TTL_SECONDS, RepeatedLines, iso_weeks, line_keys

# The previous format's script (newsfold/state/repeated_lines.py before issue 29), kept for the comparison only.
BEFORE_SCRIPT = """
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
NAMESPACE = "bench"


class Before:
    """The previous format's Redis side: which of a page's lines other pages carried (exact, unbounded)."""

    def __init__(self, client: redis.Redis) -> None:
        self.script = client.register_script(BEFORE_SCRIPT)

    def _keys(self, site: str, date: str) -> list[str]:
        this, last = iso_weeks(date)
        kinds = [("pages", this), ("lines", this), ("lines", last), ("first", this), ("first", last)]
        return [f"newsfold:{NAMESPACE}:{kind}:{site}:{week}" for kind, week in kinds]

    def send(self, pipe, site: str, page_id: str, date: str, lines: list[str]) -> None:
        self.script(keys=self._keys(site, date), args=[page_id, TTL_SECONDS, *lines], client=pipe)

    def repeated(self, site: str, page_id: str, date: str, lines: list[str]) -> list[bool]:
        is_new, now, last, _ = self.script(keys=self._keys(site, date), args=[page_id, TTL_SECONDS, *lines])
        own = 0 if is_new == 1 else 1
        return [int(a or 0) - own + int(b or 0) > 0 for a, b in zip(now, last, strict=True)]


class After:
    """``RepeatedLines`` as shipped (its record script, pipelined for the load)."""

    def __init__(self, client: redis.Redis) -> None:
        self.store = RepeatedLines(client, NAMESPACE)

    def send(self, pipe, site: str, page_id: str, date: str, lines: list[str]) -> None:
        self.store.send(pipe, site, page_id, date, lines)

    def repeated(self, site: str, page_id: str, date: str, lines: list[str]) -> list[bool]:
        return self.store.record(site, page_id, date, lines)[0]


@contextmanager
def fresh_redis() -> Iterator[redis.Redis]:
    """A Redis server of the benchmark's own on a free loopback port: no persistence, stopped at the end."""
    with tempfile.TemporaryDirectory(prefix="redis-bench-") as folder:
        port = free_port()
        password = secrets.token_urlsafe(16)
        config = Path(folder) / "redis.conf"
        config.write_text(
            f'port {port}\nbind 127.0.0.1\nrequirepass {password}\ndir {folder}\nsave ""\nappendonly no\n'
            "loglevel warning\n"
        )
        config.chmod(0o600)
        server = subprocess.Popen([redis_binary(), str(config)], stdout=subprocess.DEVNULL)
        client = redis.Redis(host="127.0.0.1", port=port, password=password)
        try:
            for _ in range(200):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
            yield client
        finally:
            client.close()
            server.terminate()
            server.wait(10)


def _hex(rng: random.Random) -> str:
    return f"{rng.getrandbits(64):016x}"


def corpus(args: argparse.Namespace) -> Iterator[tuple[str, str, str, list[str]]]:
    """(site, page id, date, line keys) of every page, week by week; the same pages for every variant."""
    rng = random.Random(args.seed)
    pools = {f"site{s}.test": [_hex(rng) for _ in range(args.pool)] for s in range(args.sites)}
    sites = list(pools)
    start = dt.date(2025, 3, 3)  # a Monday
    per_week = args.pages // args.weeks
    for week in range(args.weeks):
        for n in range(per_week):
            site = sites[rng.randrange(len(sites))]
            date = (start + dt.timedelta(days=7 * week + rng.randrange(7))).isoformat()
            lines = rng.sample(pools[site], args.furniture) + [_hex(rng) for _ in range(args.article)]
            yield site, f"w{week}-p{n}", date, sorted(set(lines))
        # the probe's week is the last one: its pages are made after the load


def dev_corpus(dev: Path) -> list[tuple[str, str, str, list[str]]]:
    """(site, page id, date, line keys) of every dev page newsfold extracts, in date order (undated last)."""
    pages = []
    for raw in (dev / "pages.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(raw)
        path = dev / rec["html"]
        html = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        article = extract_article(html, url=rec.get("url"), lang=rec.get("lang"))
        keys = [] if isinstance(article, Rejection) else sorted({k for k in line_keys(article.text) if k})
        site = rec.get("site") or site_of(rec.get("url"))
        if keys and site:
            pages.append((site, str(rec["id"]), article.published or "9999", keys))
    return sorted(pages, key=lambda page: page[2])


def load(variant, client: redis.Redis, args: argparse.Namespace, pages_in) -> dict:
    """Every page through the variant, in pipelines of ``--batch`` pages."""
    before = int(client.info("memory")["used_memory"])
    began, pages = time.perf_counter(), 0
    pipe = client.pipeline(transaction=False)
    for site, page_id, date, lines in pages_in:
        variant.send(pipe, site, page_id, date, lines)
        pages += 1
        if pages % args.batch == 0:
            pipe.execute()
            if pages % 100_000 == 0:
                print(f"  {pages:,} pages, {time.perf_counter() - began:.0f} s", file=sys.stderr, flush=True)
    pipe.execute()
    seconds = time.perf_counter() - began
    used = int(client.info("memory")["used_memory"]) - before
    keys = list(client.scan_iter(match=f"newsfold:{NAMESPACE}:*", count=1000))
    per_key = [int(client.memory_usage(k, samples=0) or 0) for k in keys]
    site_weeks = len({k.rsplit(b":", 2)[1] + b":" + k.rsplit(b":", 1)[1] for k in keys})
    return {
        "pages": pages,
        "seconds": round(seconds, 1),
        "pages_per_s": round(pages / seconds),
        "used_memory_delta": used,
        "memory_usage_sum": sum(per_key),
        "keys": len(keys),
        "site_weeks": site_weeks,
        "largest_key": max(per_key, default=0),
        "bytes_per_page": round(sum(per_key) / max(pages, 1), 1),
        "bytes_per_site_week": round(sum(per_key) / max(site_weeks, 1)),
    }


def probe(variant, args: argparse.Namespace) -> dict:
    """One new page per site in the last week: furniture found, article lines wrongly found, pages filtered."""
    rng = random.Random(args.seed)  # the same pools as the corpus
    pools = {f"site{s}.test": [_hex(rng) for _ in range(args.pool)] for s in range(args.sites)}
    probe_rng = random.Random(args.seed + 1)
    date = (dt.date(2025, 3, 3) + dt.timedelta(days=7 * (args.weeks - 1) + 3)).isoformat()
    furniture = article = found_f = found_a = filtered = 0
    for site, pool in pools.items():
        own = probe_rng.sample(pool, args.furniture)
        fresh = [_hex(probe_rng) for _ in range(args.article)]
        lines = sorted(set(own + fresh))
        flags = dict(zip(lines, variant.repeated(site, f"probe-{site}", date, lines), strict=True))
        hit_f = sum(flags[k] for k in own)
        found_f, found_a = found_f + hit_f, found_a + sum(flags[k] for k in fresh)
        furniture, article = furniture + len(own), article + len(fresh)
        filtered += hit_f > 0 and sum(flags.values()) < 0.5 * len(lines)  # the KEEP_AT_LEAST guard lets it strip
    return {
        "probe_pages": len(pools),
        "furniture_found": round(found_f / max(furniture, 1), 4),
        "article_false_positives": round(found_a / max(article, 1), 4),
        "pages_filtered": round(filtered / max(len(pools), 1), 4),
    }


def run(name: str, args: argparse.Namespace, dev_pages: list | None) -> dict:
    with fresh_redis() as client:
        variant = After(client) if name == "after" else Before(client)
        if dev_pages is not None:
            return load(variant, client, args, dev_pages)
        print(f"{name}: loading {args.pages:,} pages", file=sys.stderr, flush=True)
        return {**load(variant, client, args, corpus(args)), **probe(variant, args)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--sites", type=int, default=500)
    parser.add_argument("--weeks", type=int, default=2)
    parser.add_argument("--pool", type=int, default=40, help="template lines per site")
    parser.add_argument("--furniture", type=int, default=8, help="template lines per page")
    parser.add_argument("--article", type=int, default=20, help="lines of its own per page")
    parser.add_argument("--batch", type=int, default=200, help="pages per pipeline")
    parser.add_argument("--variants", default="before,after")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--dev", type=Path, help="the dev set's pages instead of synthetic ones")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    dev_pages = dev_corpus(args.dev) if args.dev else None
    result = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "json"},
        **{name: run(name, args, dev_pages) for name in args.variants.split(",")},
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
