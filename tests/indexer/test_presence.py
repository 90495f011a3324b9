"""The band keys' presence pre-filter (plugin.fold.presence over indexer.presence), on real Redis servers and the
test backend's Elasticsearch: the same stories with it as without, fewer lookups, and no copy lost to Redis."""

from __future__ import annotations

import pytest
import redis

from newsfold.embedded import EmbeddedRedis
from newsfold.indexer.presence import PresenceDown, RedisPresence
from newsfold.plugin import PresenceUnavailable, ingest
from newsfold.plugin.client import build_client
from newsfold.plugin.errors import InputError
from newsfold.plugin.fold.index import drop_index, ensure_index
from newsfold.plugin.fold.rollover import roll_over
from newsfold.plugin.settings import Settings
from newsfold.plugin.sign.signing import TextMeta, sign_text
from newsfold.ports import free_port
from tests.story_corpus import PAGES, body_of


@pytest.fixture(scope="module")
def redis_server():
    """A Redis of this module's own: its tests flush it, restart it and lose its data."""
    server = EmbeddedRedis()
    yield server
    server.close()


class Counting:
    """The client, counting its ``msearch`` requests and the band lookups in them (every other call passes)."""

    def __init__(self, client):
        self._client = client
        self.requests = 0
        self.lookups: list[dict] = []

    def msearch(self, *, searches, **kw):
        self.requests += 1
        self.lookups += searches[1::2]
        return self._client.msearch(searches=searches, **kw)

    def __getattr__(self, name):
        return getattr(self._client, name)


@pytest.fixture
def filtered(settings, redis_server):
    """The test's index created with a presence filter (valid from the start), and a counting client."""
    presence = RedisPresence(redis.Redis.from_url(redis_server.url), size="1mb", window=settings.lookup_window)
    client = build_client(settings)
    ensure_index(client, settings, presence=presence)
    yield Counting(client), presence
    drop_index(client, settings)
    client.close()


def _signed(settings, pids):
    rows = {row[0]: row for row in PAGES}
    return [
        sign_text(body_of(seed, variant), TextMeta(title=f"{pid} headline", url=f"https://{site}/{pid}",
                                                   page_id=pid, site=site, published=published), settings=settings)
        for pid, seed, site, published, variant in (rows[p] for p in pids)
    ]  # fmt: skip


FIRST = ["ferry-a", "museum-a", "lantern-a", "old-a", "single"]  # one page of each story
COPIES = ["ferry-b", "ferry-c", "ferry-d", "museum-b", "lantern-c", "old-b", "old-c"]


def _outcomes(client, settings, presence, batches):
    out = {}
    for pids in batches:
        for o in ingest(_signed(settings, pids), client=client, settings=settings, presence=presence):
            out[o.page_id] = (o.status, o.cluster_id, o.matched_id)
    return out


def test_pruned_lookups_find_the_same_stories_as_full_ones(filtered, settings):
    client, presence = filtered
    batches = [FIRST, *([p] for p in COPIES)]  # each copy alone: only the index can tell it is one
    with_filter = _outcomes(client, settings, presence, batches[:1])
    first_batch = len(client.lookups)
    with_filter.update(_outcomes(client, settings, presence, batches[1:]))
    unfiltered = settings.replace(index=settings.index + "-full")
    ensure_index(client._client, unfiltered)
    counted = Counting(client._client)
    try:
        full = _outcomes(counted, unfiltered, None, batches)
    finally:
        drop_index(client._client, unfiltered)
    assert with_filter == full
    assert {pid for pid, (status, _, _) in with_filter.items() if status == "new"} == set(FIRST)
    # the first batch's pages found nothing in the empty index, and nobody else added their keys: neither their
    # first lookup nor their reconcile asked anything; each copy still looked up (its story's keys are there)
    assert first_batch == 0
    assert len(COPIES) <= len(client.lookups) < len(counted.lookups) - 2 * len(FIRST) + 1


def _keys(search: dict) -> list[str]:
    query = search["query"]
    match = query["bool"]["must"][0] if "bool" in query and "must" in query["bool"] else query
    if "terms_set" in match:
        return next(iter(match["terms_set"].values()))["terms"]
    return [c["constant_score"]["filter"]["term"] for c in match["bool"]["should"]]


def test_a_page_whose_keys_no_index_holds_sends_no_lookup(filtered, settings):
    client, presence = filtered
    ingest(_signed(settings, ["museum-a"]), client=client, settings=settings, presence=presence)
    client.requests, client.lookups = 0, []
    new = _signed(settings, ["ferry-a", "lantern-a"])
    state_lookups = presence.may_contain([f"{settings.index}-000001"], new[0].band_keys)
    assert sum(next(iter(state_lookups.values()))) < settings.min_bands  # the filter says: nothing to find
    out = ingest(new, client=client, settings=settings, presence=presence)
    assert {o.status for o in out} == {"new"}
    # the first lookup sent nothing, and nor did the reconcile: the pages' keys were added once, by themselves
    assert client.requests == 0
    assert not any(presence.may_recur([f"{settings.index}-000001"], new[0].band_keys)[f"{settings.index}-000001"])


def test_a_key_recurs_once_a_second_add_brings_it(settings, redis_server):
    presence = RedisPresence(redis.Redis.from_url(redis_server.url), size="1mb", window=settings.lookup_window)
    index = f"{settings.index}-recur-000001"
    presence.mark(index)
    presence.add(index, ["a1", "b1", "c1", "c1"])  # c1 twice in one add: two pages of a batch share it
    assert presence.may_recur([index], ["a1", "b1", "c1", "zz"]) == {index: [False, False, True, False]}
    presence.add(index, ["b1", "d1"])
    assert presence.may_recur([index], ["a1", "b1", "c1", "d1"]) == {index: [False, True, True, False]}
    assert presence.may_contain([index], ["a1", "d1", "zz"]) == {index: [True, True, False]}
    # the presence filter lost (evicted) while its recurrence filter stays: the next add cannot tell what recurs,
    # so from then on the recurrence filter reads as not valid (every key asked), never as "added once"
    presence.redis.delete(presence.key(index))
    assert presence.may_recur([index], ["b1"]) == {index: [True]}
    presence.add(index, ["a1"])
    assert presence.may_recur([index], ["a1", "b1"]) == {}
    assert presence.may_contain([index], ["a1"]) == {}


def test_an_index_without_a_valid_filter_is_searched_for_every_key(settings, es, redis_server):
    presence = RedisPresence(redis.Redis.from_url(redis_server.url), size="1mb", window=settings.lookup_window)
    client = Counting(es)  # the index was made without the filter (before the feature, or by a host)
    ingest(_signed(settings, ["ferry-a"]), client=client, settings=settings, presence=presence)
    assert presence.may_contain([f"{settings.index}-000001"], ["x"]) == {}  # keys were added, but not valid
    out = ingest(_signed(settings, ["ferry-c"]), client=client, settings=settings, presence=presence)
    assert out[0].status == "duplicate"
    assert all(len(_keys(q)) == len(set(_signed(settings, ["ferry-c"])[0].band_keys)) for q in client.lookups)


@pytest.mark.parametrize("loss", ["flush", "restart", "restart-losing-data"])
def test_no_copy_is_new_after_redis_loses_the_filter(filtered, settings, redis_server, loss):
    client, presence = filtered
    first = ingest(_signed(settings, FIRST), client=client, settings=settings, presence=presence)
    assert {o.status for o in first} == {"new"}
    if loss == "flush":
        presence.redis.flushall()
    else:  # a restart keeps the append-only file, or loses it; either way the filter is no longer trusted
        redis_server.restart(lose_data=loss == "restart-losing-data")
    assert presence.may_contain([f"{settings.index}-000001"], ["x"]) == {}
    out = ingest(_signed(settings, COPIES), client=client, settings=settings, presence=presence)
    assert {o.status for o in out} == {"duplicate"}


def test_an_unreachable_redis_stops_the_writes_and_the_retry_finds_the_copies(filtered, settings):
    client, presence = filtered
    ingest(_signed(settings, FIRST), client=client, settings=settings, presence=presence)
    down = RedisPresence(redis.Redis(port=free_port(), socket_connect_timeout=1), size="1mb")
    before = client.count(index=settings.index)["count"]
    with pytest.raises(PresenceUnavailable, match="Redis is unavailable.*nothing was written") as raised:
        ingest(_signed(settings, COPIES), client=client, settings=settings, presence=down)
    assert isinstance(raised.value, PresenceDown)
    assert isinstance(raised.value, redis.exceptions.ConnectionError)  # a worker waits for Redis, then retries
    client.indices.refresh(index=settings.index)
    assert client.count(index=settings.index)["count"] == before
    assert down.may_contain([f"{settings.index}-000001"], ["x"]) == {}  # reads fail open
    out = ingest(_signed(settings, COPIES), client=client, settings=settings, presence=presence)  # the retry
    assert {o.status for o in out} == {"duplicate"}


def test_a_rollover_marks_the_new_index_and_copies_across_it_fold(filtered, settings):
    client, presence = filtered
    ingest(_signed(settings, FIRST), client=client, settings=settings, presence=presence)
    new = roll_over(client, settings, force=True, presence=presence)
    assert new == f"{settings.index}-000002"
    assert set(presence.may_contain([new], ["x"])) == {new}  # valid, empty
    out = ingest(_signed(settings, COPIES), client=client, settings=settings, presence=presence)
    assert {o.status for o in out} == {"duplicate"}
    assert {o.cluster_id for o in out} <= set(FIRST)


@pytest.mark.parametrize("size", ["0", "600mb", "1gb", "512b", "12", "128 mb"])
def test_a_filter_size_out_of_range_is_refused_naming_the_setting(size):
    with pytest.raises(InputError, match="presence_size"):
        Settings(presence_size=size)
    assert (
        RedisPresence(redis.Redis(port=free_port()), size="1kb").bits == 1024 * 8 - 64 * 8
    )  # the smallest: the header, then the bits
