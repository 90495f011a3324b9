"""The start and end of an extracted text: menus, skip links, date and weather bars and "most read" lists trimmed.

Generic rules, no site's words: a page's own link text tells a menu or a teaser
from the article's first and last lines (the runs of ``plugin.extract.blocks.text_runs``).
"""

from __future__ import annotations

import re

from newsfold.plugin.extract.blocks import TextRun, match_key

_EDGE_LINK_SHARE = 0.5  # an edge line this much covered by the page's link text is a menu or a teaser
_EDGE_LINE_CHARS = 120  # longer lines are prose whatever their links
_SKIP_LINK = re.compile(
    r"^\s*(skip|jump) to (the )?(main |page )?(content|navigation|article|menu|search)\b|^\s*zum inhalt springen|"
    r"^\s*aller au contenu|^\s*(saltar|ir) al contenido|^\s*跳(到|至)(主要)?(内容|正文)",
    re.I,
)
_MONTH_OR_DAY = (
    r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun|"
    r"janv|févr|mars|avr|mai|juin|juil|août|sept|déc|lun|mar|mer|jeu|ven|sam|dim|"
    r"jän|mär|okt|dez|mo|di|mi|do|fr|sa|so"
)
# a line that is only a date, a time, a place and a temperature: a weather or date bar
_DATE_BAR = re.compile(
    r"^[\w\s,.:/|()·•-]*?(\b\d{1,4}\s*°\s*[CF]?\b|\b(" + _MONTH_OR_DAY + r")[a-zé]*\.?\s+\d{1,2}\b|"
    r"\b\d{1,2}[./-]\d{1,2}[./-]\d{2,4}\b|\d{4}年\d{1,2}月\d{1,2}日)[\w\s,.:/|()°·•-]*$",
    re.I,
)
_DATE_BAR_WORDS = 8  # a date bar is a date and a few labels, not a sentence that mentions a date
_ENDS_SENTENCE = re.compile(r"[.!?。！？]['\"’”」』)]*$")


_MOST_READ = re.compile(
    r"^\s*(most (read|popular|viewed|shared|emailed|commented)|trending( now| stories)?|top stories|"
    r"popular (now|stories)|meistgelesen|les plus lus|lo más leído|più letti|最热|热门(文章|新闻)|排行)\s*[:：]?\s*$",
    re.I,
)


def trim_edges(text: str, runs: list[TextRun]) -> str:
    """Drop menus, skip links, date and weather bars and "most read" lists from the start and end of a text.

    Generic rules, no site's words: at either end, a short line mostly made
    of the page's link text (:data:`_EDGE_LINK_SHARE`) is a menu or a teaser;
    a line that is only a date, a time or a temperature is a date or weather
    bar; a skip link opens no article. At the
    end, a "Most read"-style heading and the short lines after it go
    together. Trimming stops at the first line that is none of these, and
    never empties the text.

    Args:
        text: the extracted text, one block per line.
        runs: the page's :func:`text_runs`, to tell link text.

    Returns:
        The text without those lines.
    """
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    link_keys = set()
    for _owner, nodes, link_chars in runs:
        run = " ".join(nodes)
        if link_chars * 2 >= len(run) and (key := match_key(run)):
            link_keys.add(key)

    def chrome(line: str, at_start: bool) -> bool:
        flat = " ".join(line.split()).strip("|-–—•· ")
        if not flat:
            return True
        if len(flat) > _EDGE_LINE_CHARS:
            return False
        if at_start and _SKIP_LINK.match(flat):
            return True
        if len(flat.split()) <= _DATE_BAR_WORDS and not _ENDS_SENTENCE.search(flat) and _DATE_BAR.match(flat):
            return True
        key = match_key(flat)
        if not key:
            return True
        covered = sum(len(k) for k in link_keys if len(k) > 1 and k in key)
        return covered >= _EDGE_LINK_SHARE * len(key)

    start = 0
    while start < len(lines) - 1 and chrome(lines[start], True):
        start += 1
    end = len(lines)
    for n in range(max(start + 1, len(lines) - 15), len(lines)):  # a "Most read" box in the last lines
        if _MOST_READ.match(lines[n]) and all(len(line) <= _EDGE_LINE_CHARS for line in lines[n + 1 :]):
            end = n
            break
    while end > start + 1 and chrome(lines[end - 1], False):
        end -= 1
    return text if (start, end) == (0, len(lines)) else "\n".join(lines[start:end])
