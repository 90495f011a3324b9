"""sign_text takes its article's metadata as one TextMeta; the keywords of newsfold 0.1 still work, warned."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from newsfold.plugin import InputError, InputTypeError, Settings, SignedPage, TextMeta, sign_text
from tests.pages import story

S = Settings()
TEXT = "\n".join(story(5, 12))
META = TextMeta(title="Harbour deal", url="https://a.example/news/1", lang="en", page_id="a-1", site="a.example",
                published="2024-03-05T10:00:00Z")  # fmt: skip


def test_text_meta_is_what_the_signed_page_carries():
    signed = sign_text(TEXT, META, settings=S)
    assert isinstance(signed, SignedPage)
    assert (signed.page_id, signed.url, signed.site, signed.published) == ("a-1", META.url, "a.example", META.published)
    assert signed.article.title == "Harbour deal" and signed.article.lang == "en"


def test_the_old_keywords_sign_the_same_page_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="pass meta=TextMeta"):
        old = sign_text(TEXT, title="Harbour deal", url=META.url, lang="en", page_id="a-1", site="a.example",
                        published=META.published, settings=S)  # fmt: skip
    new = sign_text(TEXT, META, settings=S)
    assert isinstance(old, SignedPage) and isinstance(new, SignedPage)
    assert old.page_id == new.page_id and old.band_keys == new.band_keys and old.passages == new.passages
    assert np.array_equal(old.signature.hashvalues, new.signature.hashvalues)
    assert (old.url, old.site, old.published, old.article) == (new.url, new.site, new.published, new.article)


def test_no_warning_without_the_old_keywords():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(sign_text(TEXT, settings=S), SignedPage)


def test_bad_meta_and_keywords_are_refused_by_name():
    with pytest.raises(InputError, match="unexpected keyword arguments: colour"):
        sign_text(TEXT, settings=S, colour="red")
    with pytest.raises(InputError, match="title in meta"):
        sign_text(TEXT, META, settings=S, title="again")
    with pytest.raises(InputTypeError, match="meta"):
        sign_text(TEXT, {"title": "x"}, settings=S)  # type: ignore[arg-type]
    with pytest.raises(InputTypeError, match="title"):
        sign_text(TEXT, TextMeta(title=3), settings=S)  # type: ignore[arg-type]
