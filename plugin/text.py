"""Text normalisation and tokenisation that also work without spaces.

Chinese and Japanese are written without spaces between words, so a
whitespace tokenizer would turn a whole sentence into one "word". Here every
Han, Hiragana and Katakana character is a token of its own; words of other
scripts (Latin, Cyrillic, Hangul, ...) are runs of letters and digits.
"""

from __future__ import annotations

import re
import unicodedata

# Han (incl. extension A and compatibility ideographs), Hiragana, Katakana.
_CJK_CLASS = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u309f\u30a0-\u30ff"
_TOKEN = re.compile(rf"[{_CJK_CLASS}]|[^\W{_CJK_CLASS}]+")
_CJK = re.compile(rf"[{_CJK_CLASS}]")
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Unicode NFKC, case-folded, whitespace collapsed to single spaces."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", text).strip()


def tokenize(text: str) -> list[str]:
    """Tokens of normalised text: words, and single CJK characters.

    The same tokens as those of :func:`normalize`'s output: white space never
    belongs to a token, so it is not collapsed first (that pass costs half
    as much as finding the tokens).
    """
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


#: characters of a text's opening that are tokenised to check its length and tell its script
SAMPLE_CHARS = 2000


def opening_tokens(text: str, at_least: int) -> list[str]:
    """The tokens of a text's opening (its first :data:`SAMPLE_CHARS` characters), or of the whole text
    when the opening holds fewer than ``at_least``.

    Enough to check a length of ``at_least`` tokens and to tell the script,
    without tokenising a long text once more than signing does.
    """
    tokens = tokenize(text[:SAMPLE_CHARS])
    if len(tokens) < at_least and len(text) > SAMPLE_CHARS:
        return tokenize(text)
    return tokens


def cjk_share(tokens: list[str]) -> float:
    """The share of tokens that are CJK characters (0 for no tokens); ``tokens`` as :func:`tokenize` makes them."""
    if not tokens:
        return 0.0
    # a CJK character is always a token of its own, and never part of another token: counting the
    # characters of the joined tokens (one C-level scan) counts the CJK tokens
    return len(_CJK.findall("".join(tokens))) / len(tokens)


def is_cjk_text(tokens: list[str]) -> bool:
    """Whether a token list is mostly CJK characters (shingled by characters)."""
    return cjk_share(tokens) >= 0.5


_CJK_STOP = re.compile(r"[。！？]")


def cjk_sentences(text: str, *, min_chars: int = 4) -> list[str]:
    """Sentences that end with a CJK full stop, exclamation or question mark.

    Navigation, link lists, captions and ads in Chinese pages almost never end
    with 。 (An & Cheng); article prose does. Keeping only such sentences is a
    strong boilerplate filter for CJK text. A sentence runs from the previous
    stop (or the start of its line) to its stop; one pass over each line, so
    a long line without a stop costs as little as a short one.
    """
    out = []
    for line in text.split("\n"):
        start = 0
        for stop in _CJK_STOP.finditer(line):
            s = line[start : stop.end()].strip()
            start = stop.end()
            if len(_CJK.findall(s)) >= min_chars:
                out.append(s)
    return out
