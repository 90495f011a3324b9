"""Time-based indices behind the alias (issue 29, items 1-2): rollover, the lookup window, old indices merged."""

from __future__ import annotations

import threading
import time

from newsfold.plugin import ingest
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.by_id import Behind, behind
from newsfold.plugin.fold.rollover import (
    index_facts,
    lookup_indices,
    merge_old_indices,
    next_name,
    roll_over,
    roll_over_when_due,
)
from newsfold.plugin.fold.store import current_labels
from tests.backends import REAL_ES
from tests.pages import signed_page, story


def _copies(settings, prefix, seed, n, *, first=0):
    return [
        signed_page(settings, f"{prefix}{i}", f"Story {seed} on site {i}", story(seed), site=f"site{i}.test")
        for i in range(first, first + n)
    ]


def test_the_next_index_takes_the_trailing_number_plus_one():
    assert next_name("news-000001") == "news-000002"
    assert next_name("news-000999") == "news-001000"
    assert next_name("news") == "news-000002"


def test_the_window_holds_the_indices_with_pages_of_the_last_period():
    day = 86_400_000
    now = 100 * day
    where = Behind(("a-3", "a-2", "a-1"), "a-3", (now - 10 * day, now - 40 * day, now - 70 * day))
    assert where.within(0, now) == ("a-3", "a-2", "a-1")  # 0: every index
    assert where.within(30 * 86_400, now) == ("a-3", "a-2")  # a-2 took pages until 10 days ago
    assert where.within(5 * 86_400, now) == ("a-3",)
    assert where.recent() == ("a-3", "a-2")


def test_the_window_of_a_rebuilt_old_period_counts_back_from_its_end():
    """A reindex builds an old period's new index behind an alias of its own, with the older periods: its pages
    are looked up as when they were ingested, back from the period's end, not from today."""
    day = 86_400_000
    now = 400 * day
    where = Behind(("new-2", "a-2", "a-1"), "new-2", (now - 100 * day, now - 130 * day, now - 160 * day),
                   (now - 70 * day, 0, 0))  # fmt: skip
    assert where.within(40 * 86_400, now) == ("new-2", "a-2")  # a-2 took pages until 100 days ago, the window's start
    assert where.within(20 * 86_400, now) == ("new-2",)
    assert where.within(0, now) == ("new-2", "a-2", "a-1")


def test_a_rebuilt_index_keeps_the_period_of_the_index_it_replaces(es, settings):
    from newsfold.plugin.fold.index import index_body, with_period

    first = behind(es, settings.index)
    name = f"{settings.index}-rebuilt"
    body = with_period(index_body(settings), first.created[0] - 86_400_000, first.created[0] - 1000)
    es.indices.create(index=name, settings=body["settings"], mappings=body["mappings"])
    es.indices.update_aliases(actions=[{"add": {"index": name, "alias": settings.index, "is_write_index": False}}])
    where = behind(es, settings.index)
    assert where.indices == (first.write, name) and where.write == first.write  # older, though created later
    assert where.created == (first.created[0], first.created[0] - 86_400_000)
    assert where.ended == (0, first.created[0] - 1000)


def test_nothing_rolls_over_before_it_is_due(es, settings):
    first = behind(es, settings.index).write
    assert roll_over(es, settings) is None
    assert behind(es, settings.index).indices == (first,)
    assert roll_over(es, settings.replace(rollover="0", rollover_size="0")) is None


def test_racing_workers_that_roll_over_at_once_make_one_new_index(es, settings):
    settings = settings.replace(rollover="1s")
    first = behind(es, settings.index).write
    time.sleep(1.2)
    clients = [build_client(settings) for _ in range(4)]
    got: list = []
    start = threading.Barrier(len(clients))

    def worker(client):
        start.wait()
        got.append(roll_over(client, settings))

    threads = [threading.Thread(target=worker, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    where = behind(es, settings.index)
    assert where.indices == (next_name(first), first) and where.write == next_name(first)
    assert {g for g in got if g} == {next_name(first)}
    for c in clients:
        c.close()


def test_workers_check_at_most_once_a_minute(es, settings):
    settings = settings.replace(rollover="1s")
    time.sleep(1.2)
    now = [1000.0]
    roll_over_when_due(es, settings, clock=lambda: now[0])
    assert len(behind(es, settings.index).indices) == 2
    time.sleep(1.2)
    now[0] += 30
    roll_over_when_due(es, settings, clock=lambda: now[0])
    assert len(behind(es, settings.index).indices) == 2  # checked 30 s ago
    now[0] += 31
    roll_over_when_due(es, settings, clock=lambda: now[0])
    assert len(behind(es, settings.index).indices) == 3


def test_a_copy_after_the_lookup_window_founds_a_new_story_and_one_within_it_joins(es, settings):
    ingest(_copies(settings, "w", 411, 2) + _copies(settings, "x", 412, 2), client=es, settings=settings)
    roll_over(es, settings, force=True)
    (joined,) = ingest(_copies(settings, "x", 412, 1, first=2), client=es, settings=settings)
    assert (joined.status, joined.cluster_id) == ("duplicate", "x0")  # straddles the rollover: one story
    time.sleep(1.5)
    narrow = settings.replace(lookup_window="1s")
    assert lookup_indices(es, narrow) == (behind(es, settings.index).write,)
    (late,) = ingest(_copies(narrow, "w", 411, 1, first=2), client=es, settings=narrow)
    assert (late.status, late.cluster_id) == ("new", "w2")  # its story's copies are all older than the window
    assert set(current_labels(["w0", "w1"], client=es, settings=settings).values()) == {"w0"}


def test_old_indices_are_merged_to_one_segment_and_a_second_run_sends_nothing(es, settings):
    for n in range(3):  # three bulk requests: three segments on a real node
        ingest(_copies(settings, f"m{n}-", 420 + n, 2), client=es, settings=settings)
    first = behind(es, settings.index).write
    roll_over(es, settings, force=True)
    es.indices.refresh(index=settings.index)
    before = {f.name: f for f in index_facts(es, settings.index)}[first].segments
    said: list[str] = []
    merged = merge_old_indices(es, settings, progress=said.append)
    facts = {f.name: f for f in index_facts(es, settings.index)}
    if REAL_ES:
        assert before > settings.shards  # three bulk requests left several segments
        assert merged == [first] and facts[first].segments == settings.shards  # one segment per primary
    assert facts[first].docs == 6 and not facts[first].write and facts[next_name(first)].write
    assert any(first in line for line in said)
    assert merge_old_indices(es, settings) == []  # safe to run twice


def test_racing_writers_across_a_rollover_split_no_story_and_report_one_new_each(es, settings):
    """Three threads ingest copies of 10 stories in small batches while the alias rolls over twice."""
    import random

    pages = [p for seed in range(10) for p in _copies(settings, f"r{seed}-", 440 + seed, 4)]
    random.Random(5).shuffle(pages)
    shares = [pages[n::3] for n in range(3)]
    outcomes: list = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer(mine: list) -> None:
        try:
            while mine:
                batch, mine[:2] = mine[:2], []
                got = ingest(batch, client=es, settings=settings)
                with lock:
                    outcomes.extend(got)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(share,)) for share in shares]
    for t in threads:
        t.start()
    for _ in range(2):
        time.sleep(0.3)
        roll_over(es, settings, force=True)
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert len(behind(es, settings.index).indices) == 3
    labels = current_labels([p.page_id for p in pages], client=es, settings=settings)
    assert len(labels) == 40 and len(set(labels.values())) == 10  # nothing lost, no story split
    new = [o.cluster_id for o in outcomes if o.status == "new"]
    merged_away = {c for o in outcomes if o.status == "merged" for c in o.merged_clusters}
    assert set(new) - merged_away == set(labels.values())
    assert len(new) - len(merged_away) == 10
