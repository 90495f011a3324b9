"""Site statistics in a real Redis."""

from __future__ import annotations

import uuid

import redis

from newsfold.state.repeated_lines import RepeatedLines
from tests.pages import story

PITCH = "Subscribe to the Morning Review newsletter for the day's top headlines in your inbox"


def _store(redis_url):
    return RepeatedLines(redis.Redis.from_url(redis_url), f"t-{uuid.uuid4().hex[:8]}")


def test_lines_repeated_on_a_site_are_left_out_of_later_pages(redis_url):
    store = _store(redis_url)
    first = "\n".join([*story(1), PITCH])
    second = "\n".join([*story(2), PITCH])
    assert store.strip(first, site="a.test", page_id="p1", date="2025-03-04") == first  # nothing known yet
    assert PITCH not in store.strip(second, site="a.test", page_id="p2", date="2025-03-05")
    # another site has its own counts; last week's lines still count
    assert PITCH in store.strip(second, site="b.test", page_id="p3", date="2025-03-05")
    third = "\n".join([*story(5), PITCH])
    assert PITCH not in store.strip(third, site="a.test", page_id="p4", date="2025-03-12")


def test_reingest_does_not_count_a_page_twice(redis_url):
    store = _store(redis_url)
    text = "\n".join([*story(3), PITCH])
    assert store.strip(text, site="a.test", page_id="p1", date="2025-03-04") == text
    assert store.strip(text, site="a.test", page_id="p1", date="2025-03-04") == text  # its own lines do not count


def test_same_site_copy_keeps_its_text(redis_url):
    store = _store(redis_url)
    text = "\n".join(story(4))
    store.strip(text, site="a.test", page_id="p1", date="2025-03-04")
    # everything repeats: that is a republished story, not boilerplate
    assert store.strip(text, site="a.test", page_id="p2", date="2025-03-04") == text


def test_a_story_republished_under_a_second_url_is_signed_like_the_first(redis_url):
    store = _store(redis_url)
    other = "\n".join([*story(6), PITCH])
    store.strip(other, site="a.test", page_id="p0", date="2025-03-04")  # the pitch is the site's furniture
    page = "\n".join([*story(7), PITCH])
    first = store.strip(page, site="a.test", page_id="p1", date="2025-03-04")
    assert PITCH not in first
    # the same story again (an AMP or section URL): its own lines were carried by its first copy only,
    # so they stay; the site's furniture goes, as it did from the first copy
    again = store.strip(page, site="a.test", page_id="p2", date="2025-03-05")
    assert again == first
    third = store.strip(page, site="a.test", page_id="p3", date="2025-03-05")
    assert third == first


def test_signing_with_the_line_filter_signs_and_keys_the_text_without_the_sites_lines(redis_url):
    from newsfold.plugin.settings import Settings
    from newsfold.plugin.sign.passages import passage_keys
    from newsfold.plugin.sign.signing import TextMeta, sign_text

    store = _store(redis_url)
    store.strip("\n".join([*story(8), PITCH]), site="a.test", page_id="p0", date="2025-03-04")
    page = "\n\n".join([story(9)[0], PITCH, *story(9)[1:]])  # blank lines between paragraphs
    kept = "\n\n".join(story(9))  # the same paragraphs without the site's line
    signed = sign_text(page,
                       TextMeta(url="https://a.test/p1", page_id="p1", published="2025-03-04"),
                       settings=Settings(), repeated=store)  # fmt: skip
    plain = sign_text(kept, TextMeta(url="https://a.test/p1", page_id="p1"), settings=Settings())
    assert signed.article.text == page  # the stored text is the page's
    assert signed.passages == passage_keys(kept) == plain.passages
    assert (signed.signature.hashvalues == plain.signature.hashvalues).all()
    assert signed.signature.token_count == plain.signature.token_count


def test_an_implausible_date_counts_as_undated(redis_url):
    """``published: 0001-01-01`` made the week before it overflow, and the page a worker's ``internal_error``."""
    store = _store(redis_url)
    text = "\n".join([*story(6), PITCH])
    for date in ("0001-01-01", "1989-12-31", "9999-12-31", "not a date"):
        assert store.strip(text, site="a.test", page_id=f"p-{date}", date=date) == text


def _keys(store) -> list[bytes]:
    return list(store.redis.scan_iter(match=f"newsfold:{store.namespace}:*", count=1000))


def _memory(store) -> int:
    return sum(store.redis.memory_usage(k) or 0 for k in _keys(store))


def test_memory_of_a_site_week_stays_bounded_whatever_its_pages(redis_url):
    store = _store(redis_url)
    for n in range(1500):  # 1,500 pages of 21 lines each: about 30,000 distinct lines in one site and week
        lines = [f"Page {n} paragraph {i} tells what happened in the town hall today" for i in range(20)]
        store.strip("\n".join([*lines, PITCH]), site="a.test", page_id=f"p{n}", date="2025-03-04")
    assert _memory(store) < 32 * 1024  # the table (30,720 bytes) and Redis' own bookkeeping (before: 3.1 MB)
    assert len(_keys(store)) == 1
    # three times the lines the table holds: the site's line is still known, a new page's own lines are not
    fresh = "\n".join([*story(600), PITCH])
    assert store.strip(fresh, site="a.test", page_id="new", date="2025-03-05") == "\n".join(story(600))


def _fill(store, pages: int, seed: int = 1000) -> None:
    """Pages of a.test in week 2025-10 (7 lines of their own and PITCH each)."""
    for n in range(pages):
        store.strip("\n".join([*story(seed + n), PITCH]), site="a.test", page_id=f"f{n}", date="2025-03-04")


def test_a_site_week_past_the_exact_stage_still_strips_the_sites_lines(redis_url):
    from newsfold.state.repeated_lines import BUCKETS, EXACT_LINES, SLOTS

    store = _store(redis_url)
    early = "\n".join([*story(99), PITCH])
    store.strip(early, site="a.test", page_id="early", date="2025-03-04")
    _fill(store, EXACT_LINES // 7 + 10)  # a table from here on
    [key] = _keys(store)
    assert store.redis.strlen(key) == BUCKETS * SLOTS * 3
    fresh = "\n".join([*story(500), PITCH])
    assert store.strip(fresh, site="a.test", page_id="new", date="2025-03-05") == "\n".join(story(500))
    # a page counted while the week was exact, re-ingested: only the site's line goes, not its own
    assert store.strip(early, site="a.test", page_id="early", date="2025-03-04") == "\n".join(story(99))
    # next week still sees this week's lines
    assert store.strip(fresh, site="a.test", page_id="next", date="2025-03-11") == "\n".join(story(500))


def test_a_republished_story_is_signed_like_the_first_in_the_table_too(redis_url):
    from newsfold.state.repeated_lines import EXACT_LINES

    store = _store(redis_url)
    _fill(store, EXACT_LINES // 7 + 10)
    page = "\n".join([*story(7), PITCH])
    first = store.strip(page, site="a.test", page_id="one", date="2025-03-04")
    assert first == "\n".join(story(7))
    assert store.strip(page, site="a.test", page_id="two", date="2025-03-05") == first
    assert store.strip(page, site="a.test", page_id="three", date="2025-03-05") == first


def test_a_small_site_week_costs_what_it_carries(redis_url):
    store = _store(redis_url)
    _fill(store, 10)  # 71 distinct lines
    assert store.redis.strlen(_keys(store)[0]) == 71 * 10
    assert _memory(store) < 71 * 10 + 200  # before: 3,280 bytes in three keys


def test_keys_of_the_unbounded_format_are_ignored_and_dropped(redis_url):
    from newsfold.state.repeated_lines import line_keys

    store = _store(redis_url)
    [pitch_key] = [k for k in line_keys(PITCH) if k]
    old = {kind: f"newsfold:{store.namespace}:{kind}:a.test:2025-10" for kind in ("pages", "lines", "first")}
    store.redis.sadd(old["pages"], "x1", "x2")
    store.redis.hset(old["lines"], pitch_key, 2)
    store.redis.hset(old["first"], pitch_key, "x1")
    store.redis.hset(f"newsfold:{store.namespace}:lines:a.test:2025-09", pitch_key, 7)  # last week's, left to its TTL
    text = "\n".join([*story(11), PITCH])
    assert store.strip(text, site="a.test", page_id="p1", date="2025-03-04") == text  # the old counts are not read
    assert not any(store.redis.exists(k) for k in old.values())  # this week's old keys are gone with its start
    assert PITCH not in store.strip("\n".join([*story(12), PITCH]), site="a.test", page_id="p2", date="2025-03-04")


def test_concurrent_workers_lose_no_update(redis_url):
    from concurrent.futures import ThreadPoolExecutor

    store = _store(redis_url)
    texts = {n: "\n".join([*story(300 + n), PITCH]) for n in range(40)}

    def ingest(n):
        return store.strip(texts[n], site="a.test", page_id=f"p{n}", date="2025-03-04")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(ingest, texts))
    # every page, its own lines and the shared pitch recorded: again, each loses the pitch and only the pitch
    for n, text in texts.items():
        assert store.strip(text, site="a.test", page_id=f"p{n}", date="2025-03-04") == "\n".join(story(300 + n))
