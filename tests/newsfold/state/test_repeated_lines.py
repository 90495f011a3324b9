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
    from newsfold.plugin.sign.signing import sign_text

    store = _store(redis_url)
    store.strip("\n".join([*story(8), PITCH]), site="a.test", page_id="p0", date="2025-03-04")
    page = "\n\n".join([story(9)[0], PITCH, *story(9)[1:]])  # blank lines between paragraphs
    kept = "\n\n".join(story(9))  # the same paragraphs without the site's line
    signed = sign_text(page, settings=Settings(), url="https://a.test/p1", page_id="p1", published="2025-03-04",
                       repeated=store)  # fmt: skip
    plain = sign_text(kept, settings=Settings(), url="https://a.test/p1", page_id="p1")
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
