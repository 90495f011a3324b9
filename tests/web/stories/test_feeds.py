"""Atom feeds (web.stories.feeds), read back with a real feed parser."""

from __future__ import annotations

import feedparser

from newsfold.web.stories.feeds import FeedEntry, atom_feed, rfc3339, story_id

SELF = "http://news.test/feed?window=24h"
PAGE = "http://news.test/?window=24h"


def entry(cluster_id: str, **changes) -> FeedEntry:
    values = dict(id=story_id(cluster_id), title=f"Story {cluster_id}", link=f"http://news.test/stories/{cluster_id}",
                  updated="2015-03-10T08:00:00Z", published="2015-03-09", summary="4 sites, 4 pages", author="a.test")
    values.update(changes)
    return FeedEntry(**values)


def parse(document: bytes):
    parsed = feedparser.parse(document)
    assert not parsed.bozo, parsed.get("bozo_exception")
    assert parsed.version == "atom10"
    return parsed


def test_one_entry_per_story_with_stable_ids_links_and_times():
    parsed = parse(atom_feed(title="Top stories", self_url=SELF, page_url=PAGE, subtitle="Last 24 hours",
                             entries=[entry("ferry-a"), entry("museum/a b", updated="2015-03-10T13:30:00+01:00")]))
    feed = parsed.feed
    assert (feed.id, feed.title, feed.subtitle) == (SELF, "Top stories", "Last 24 hours")
    assert {(link.rel, link.href) for link in feed.links} == {("self", SELF), ("alternate", PAGE)}
    assert feed.updated == "2015-03-10T12:30:00Z"  # the newest entry's time
    first, second = parsed.entries
    assert (first.id, first.link, first.title) == ("urn:newsfold:story:ferry-a", "http://news.test/stories/ferry-a",
                                                   "Story ferry-a")  # fmt: skip
    assert (first.updated, first.published) == ("2015-03-10T08:00:00Z", "2015-03-09T00:00:00Z")
    assert (first.author, first.summary) == ("a.test", "4 sites, 4 pages")
    assert second.id == "urn:newsfold:story:museum%2Fa%20b"
    assert second.updated == "2015-03-10T12:30:00Z"


def test_hostile_text_stays_text_and_the_feed_stays_valid():
    hostile = '<script>alert(1)</script> & "quotes" \x00\x07 \ufffe end'
    parsed = parse(atom_feed(title=hostile, self_url=SELF, page_url=PAGE,
                             entries=[entry("x", title=hostile, summary=hostile, author=hostile)]))
    assert parsed.feed.title == '<script>alert(1)</script> & "quotes"   end'
    (item,) = parsed.entries
    assert item.title == parsed.feed.title and "<script>" in item.summary


def test_empty_feed_and_unknown_times():
    parsed = parse(atom_feed(title="Nothing", self_url=SELF, page_url=PAGE, entries=[],
                             updated_fallback="2024-05-01T10:00:00Z"))
    assert parsed.entries == [] and parsed.feed.updated == "2024-05-01T10:00:00Z"
    parsed = parse(atom_feed(title="Undated", self_url=SELF, page_url=PAGE, entries=[entry("u", updated=None,
                                                                                          published="not a date")]))
    (item,) = parsed.entries
    assert item.updated == "1970-01-01T00:00:00Z" and "published" not in item
    assert rfc3339("garbage") is None and rfc3339(None) is None
