"""A labelled provenance set: who first published each story, and which agency each page credits, in what style.

Stories come from the sample generator's writers (English and Chinese); pages
are small article pages of the sample sites, each with the site's own title
affix, so the set also measures headline cleaning. Two kinds of story:

- **wire stories**: an agency's text carried by three to six sites; each copy
  credits the agency in one style (:data:`STYLES`: dateline, byline, JSON-LD
  author or source organisation, meta author, a credit line, a copyright
  line, a "source" line in Chinese) or not at all (an uncredited copy). The
  origin is the agency.
- **own stories**: one site publishes first, later copies on other sites
  credit nothing; some pages (of either kind) only *mention* an agency in
  their text ("Reuters reported that…"), which is no credit.
- **forged credits** (``forged``, after the others, so they change none of
  them): an own story whose original and a copy 2 hours later credit
  nothing, and whose copy on a third site 5 hours later credits an agency in
  one style. The page does credit the agency (its ``wire``); the story is the
  first site's (``kind``: ``forged``).

``truth.jsonl`` holds per page ``id``, ``cluster``, ``wire`` (the credited
agency's canonical name or null), ``style``, ``origin`` (``wire:<agency>`` or
``site:<domain>``) and ``headline`` (the title without the site's affix).
Agencies are a mix of real names (checked against the known list) and
made-up agency-shaped ones.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from dataclasses import dataclass
from pathlib import Path
from random import Random

from newsfold.samples.chinese import chinese_story
from newsfold.samples.english import Names, Story, english_story, slug
from newsfold.samples.sites import SITES, Site
from newsfold.samples.vocab import TOPICS, ZH

#: (credited name, canonical name) of the English agencies the set uses
AGENCIES_EN = (("Reuters", "Reuters"), ("The Associated Press", "AP"), ("AFP", "AFP"), ("PA Media", "PA"),
               ("dpa", "dpa"), ("Northwind Wire", "Northwind Wire"),
               ("Eastport News Agency", "Eastport News Agency"))  # fmt: skip
AGENCIES_ZH = (("新华社", "Xinhua"), ("中新社", "China News Service"), ("路透社", "Reuters"),
               ("北风通讯社", "北风通讯社"))  # fmt: skip
STYLES = ("dateline", "byline", "jsonld-author", "jsonld-source", "meta-author", "credit-line", "copyright", "none")
STYLES_ZH = ("dateline", "byline", "source-line", "none")
#: how each site wraps its titles (the affix headline cleaning must learn)
_TITLE_FORMS = ("{site} | {headline}", "{headline} - {site}", "{headline} | {site}", "{headline}_{site}",
                "{headline}", "{site}: {headline}", "{headline} — {site}", "{headline}-{site}")  # fmt: skip
_MENTIONS_EN = ("{agency} reported that the plans had been discussed for months.",
                "Figures published by {agency} earlier this year showed a similar trend.",
                "The council said it had not seen the {agency} report before Tuesday.")  # fmt: skip
_MENTIONS_ZH = ("此前{agency}曾报道过类似情况。", "据了解，{agency}上月发布的数据也显示了这一趋势。")


def _page(title: str, paragraphs: list[str], *, lang: str, head: str = "", byline: str = "") -> str:
    body = "\n".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f'{head}</head>\n<body><header><a href="/">Home</a></header><main><article><h1>{html.escape(title)}</h1>'
            f"{byline}\n{body}\n</article></main><footer><p>About us. Contact. Privacy.</p></footer>"
            "</body></html>\n")  # fmt: skip


def _jsonld(key: str, name: str) -> str:
    data = {"@context": "https://schema.org", "@type": "NewsArticle", key: {"@type": "Organization", "name": name}}
    return f'<script type="application/ld+json">{json.dumps(data, ensure_ascii=False)}</script>'


def _credit(style: str, agency: str, paras: list[str], story, rng: Random) -> tuple[list[str], str, str]:
    """The paragraphs, head and byline of a copy crediting ``agency`` in ``style``."""
    paras, head, byline = list(paras), "", ""
    zh = story.lang == "zh"
    reporter = story.ctx.get("reporter") or "Jane Doe"
    if style == "dateline":
        if zh:
            paras[0] = (
                f"{agency}{story.ctx.get('place', '临江')}{story.published.month}月{story.published.day}日电（记者{reporter}）{paras[0]}"  # noqa: E501
            )
        else:
            place = story.ctx.get("place", "London").upper()
            paras[0] = f"{place}, {story.published:%B} {story.published.day} ({agency}) — {paras[0]}"
    elif style == "byline":
        by = rng.choice(("By ", ""))
        byline = (f'<p class="author">{html.escape(agency)}记者 {html.escape(reporter)}</p>' if zh else
                  f'<p class="byline">{by}{html.escape(reporter)}, {html.escape(agency)}</p>')  # fmt: skip
    elif style == "jsonld-author":
        head = _jsonld("author", agency)
    elif style == "jsonld-source":
        head = _jsonld("sourceOrganization", agency)
    elif style == "meta-author":
        head = f'<meta name="author" content="{html.escape(agency, quote=True)}">'
    elif style == "credit-line":
        paras.append(rng.choice((f"— {agency}", f"Source: {agency}", f"Additional reporting by {agency}.",
                                 f"This is an abridged version of a {agency} report.")))  # fmt: skip
    elif style == "copyright":
        paras.append(f"Copyright {story.published.year} {agency}. All rights reserved.")
    elif style == "source-line":
        paras.append(f"（来源：{agency}）")
    return paras, head, byline


def generate_provenance(out_dir: Path, *, seed: int = 11, stories: int = 40, forged: int = 0) -> Path:
    """Write the labelled provenance set under ``out_dir``; returns the path of ``pages.jsonl``.

    ``forged`` more stories carry one late copy with a forged credit (written after the others).

    Raises:
        ValueError: fewer than 4 stories.
    """
    if stories < 4:
        raise ValueError(f"stories must be >= 4, got {stories}")
    rng = Random(seed)
    out_dir = Path(out_dir)
    (out_dir / "html").mkdir(parents=True, exist_ok=True)
    writer = _SetWriter(out_dir, rng)
    start = dt.date(2025, 2, 3)
    for number in range(1, stories + 1):
        date = start + dt.timedelta(days=rng.randint(0, 200))
        writer.publish(*writer.story(number, date), date)
    for number in range(stories + 1, stories + forged + 1):
        date = start + dt.timedelta(days=rng.randint(0, 200))
        topic = TOPICS[number % len(TOPICS)]
        story = english_story(number, topic, number // len(TOPICS), writer.names, writer.usage, rng, date)
        writer.forge(story, date)
    pages = out_dir / "pages.jsonl"
    pages.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in writer.rows), "utf-8")
    (out_dir / "truth.jsonl").write_text(
        "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in writer.truths), "utf-8"
    )
    return pages


@dataclass(frozen=True)
class _Agency:
    """The agency behind a story and how its copies name it."""

    credited: str  # the name a credit shows
    canonical: str  # the name the truth records
    mentioned: str  # an agency a page may name in its text without crediting it
    wire: bool  # a wire story (the agency's text) rather than a site's own
    origin: str  # who published first: wire:<agency> or site:<domain>


class _SetWriter:
    """Writes the set one story at a time: each copy's page under ``out_dir``, its row and its truth."""

    def __init__(self, out_dir: Path, rng: Random) -> None:
        self.out_dir = out_dir
        self.rng = rng
        self.names = Names(rng)
        self.usage: dict[str, int] = {}
        self.forms = {s.domain: _TITLE_FORMS[k % len(_TITLE_FORMS)] for k, s in enumerate(SITES)}
        self.rows: list[dict] = []
        self.truths: list[dict] = []

    def story(self, number: int, date: dt.date) -> tuple[Story, bool]:
        """Story ``number`` and whether it is Chinese."""
        zh_topics = ZH["topics"]
        # one Chinese story per topic: two stories written from one Chinese topic are near-duplicates
        zh = number % 8 == 0 and number // 8 <= len(zh_topics)
        if zh:
            return chinese_story(number, zh_topics[number // 8 - 1], self.rng, date), True
        topic = TOPICS[number % len(TOPICS)]
        return english_story(number, topic, number // len(TOPICS), self.names, self.usage, self.rng, date), False

    def publish(self, story: Story, zh: bool, date: dt.date) -> None:
        """Carry ``story`` on a few sites of its language, each copy crediting the agency in a style or not."""
        rng = self.rng
        wire_story = rng.random() < 0.5
        pool = [s for s in SITES if s.lang == ("zh" if zh else "en")]
        sites = rng.sample(pool, min(len(pool), rng.randint(2, 2 if zh else 5)))
        agency_name, agency_canonical = rng.choice(AGENCIES_ZH if zh else AGENCIES_EN)
        mention_name, _ = rng.choice(AGENCIES_ZH if zh else AGENCIES_EN)
        times = sorted(dt.datetime.combine(date, dt.time(6)) + dt.timedelta(minutes=rng.randint(0, 2000))
                       for _ in sites)  # fmt: skip
        origin = f"wire:{agency_canonical}" if wire_story else f"site:{sites[0].domain}"
        agency = _Agency(agency_name, agency_canonical, mention_name, wire_story, origin)
        credited = rng.randrange(len(sites))
        for n, (site, when) in enumerate(zip(sites, times, strict=True)):
            styles: tuple[str, ...] = STYLES_ZH if zh else STYLES
            if n == credited:  # one copy at least credits the agency: the pages must be able to tell
                styles = styles[:-1]
            style = rng.choice(styles) if wire_story else "none"
            self.copy(story, n, site, when, style, agency)

    def forge(self, story: Story, date: dt.date) -> None:
        """An own story on three English sites: the original, an uncredited copy 2 h later, a forged credit at 5 h."""
        rng = self.rng
        sites = rng.sample([s for s in SITES if s.lang == "en"], 3)
        agency_name, agency_canonical = rng.choice(AGENCIES_EN)
        mention_name, _ = rng.choice(AGENCIES_EN)
        agency = _Agency(agency_name, agency_canonical, mention_name, False, f"site:{sites[0].domain}")
        first = dt.datetime.combine(date, dt.time(6)) + dt.timedelta(minutes=rng.randint(0, 600))
        for n, (site, hours) in enumerate(zip(sites, (0, 2, 5), strict=True)):
            style = rng.choice(STYLES[:-1]) if n == 2 else "none"
            self.copy(story, n, site, first + dt.timedelta(hours=hours), style, agency)
            self.truths[-1]["kind"] = "forged"

    def copy(self, story: Story, n: int, site: Site, when: dt.datetime, style: str, agency: _Agency) -> None:
        """Write copy ``n`` of ``story`` on ``site``, credited in ``style``, and record its row and truth."""
        rng, zh = self.rng, story.lang == "zh"
        headline = story.headlines[n % len(story.headlines)]
        title = self.forms[site.domain].format(site=site.name, headline=headline)
        paras = list(story.paragraphs)
        head = byline = ""
        if style != "none":
            paras, head, byline = _credit(style, agency.credited, paras, story, rng)
        if rng.random() < 0.25:  # an agency named in the text only: no credit
            template = rng.choice(_MENTIONS_ZH if zh else _MENTIONS_EN)
            paras.insert(rng.randint(1, len(paras) - 1), template.format(agency=agency.mentioned))
            style = style if style != "none" else "mention"
        page_id = f"p{story.number:03d}-{n}"
        rel = f"html/{page_id}.html"
        (self.out_dir / rel).write_text(_page(title, paras, lang=site.lang, head=head, byline=byline), "utf-8")
        name = story.slug if zh else slug(headline)
        self.rows.append({"id": page_id, "url": f"https://www.{site.domain}/news/{name}-{page_id}",
                          "site": site.domain, "lang": site.lang, "html": rel,
                          "published": when.isoformat() + "Z"})  # fmt: skip
        self.truths.append({"id": page_id, "cluster": story.cluster,
                            "wire": agency.canonical if style not in ("none", "mention") else None,
                            "style": style, "origin": agency.origin, "headline": headline})  # fmt: skip
