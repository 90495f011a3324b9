"""Which site carries which copy of which story, and the files of the corpus."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from random import Random

from newsfold.samples.chinese import WIRE_ZH, chinese_story
from newsfold.samples.english import WIRE, Names, Story, english_story, expand, slug
from newsfold.samples.sites import SITES, Site, View, render
from newsfold.samples.vocab import EN, SENTENCES, TOPICS, ZH


@dataclass
class _Copy:
    story: Story
    site_index: int
    variant: str  # "full", "truncated", "edited" or "bad-empty" / "bad-pdf"
    headline: str
    published: dt.datetime
    page_id: str = ""
    url: str = ""


def _copy_paragraphs(copy: _Copy, rng: Random) -> tuple[list[str], str | None]:
    story, site = copy.story, SITES[copy.site_index]
    sep = "" if story.lang == "zh" else " "
    paras = list(story.paragraphs)
    # a site's own story credits no agency: its dateline names the place and day only
    dateline = story.dateline if story.wire or story.lang == "zh" else story.dateline.replace(f" ({WIRE})", "")
    if copy.variant == "full":
        paras[0] = dateline + sep + paras[0]
        return paras, None
    if copy.variant == "truncated":
        keep = max(3, round(len(paras) * rng.uniform(0.4, 0.7)))
        paras = paras[:keep]
        paras[0] = dateline + sep + paras[0]
        note = None
        if story.lang == "en" and rng.random() < 0.3:
            note = expand(rng.choice(SENTENCES["abridged_notes"]), {"wire": WIRE}, rng)
        return paras, note if story.wire else None
    # edited: drop one paragraph from the later part, add a local sentence, change the dateline
    drop = rng.randrange(max(2, math.ceil(len(paras) * 0.7)), len(paras))
    del paras[drop]
    local = expand(rng.choice(story.local), {**story.ctx, "town": site.town, "site": site.name}, rng)
    where = rng.randrange(1, len(paras))
    paras[where] = paras[where] + sep + local
    paras[0] = rng.choice(story.alt_datelines) + sep + paras[0]
    return paras, None


def _comments(story: Story, rng: Random) -> list[tuple[str, str, str]]:
    out = []
    for _ in range(rng.randint(2, 6)):
        if story.lang == "zh":
            who = rng.choice(ZH["commenters"]) + str(rng.randint(1, 99))
            when = f"{rng.randint(1, 23)}小时前"
            text = expand(rng.choice(ZH["comments"]), story.ctx, rng)
        else:
            who = f"{rng.choice(EN['commenter_first'])}_{rng.choice(EN['commenter_second'])}{rng.randint(1, 99)}"
            hours = rng.randint(1, 23)
            when = f"{hours} hour{'s' if hours > 1 else ''} ago"
            text = expand(rng.choice(SENTENCES["comments"]), story.ctx, rng)
        out.append((who, when, text))
    return out


_START = dt.date(2025, 1, 6)  # the corpus's stories are published within 320 days of it


def _plan(rng: Random, stories: int) -> list[_Copy]:
    """Write the stories and decide which site carries which copy."""
    all_stories = _write_stories(rng, stories)
    copies = _place_copies(rng, all_stories)
    # the two broken pages
    en_sites = [i for i, s in enumerate(SITES) if s.lang == "en"]
    for variant in ("bad-empty", "bad-pdf"):
        site = rng.choice(en_sites)
        stamp = dt.datetime.combine(_START + dt.timedelta(days=rng.randint(0, 320)), dt.time(rng.randint(6, 20)))
        copies.append(_Copy(all_stories[0], site, variant, "", stamp))
    copies.sort(key=lambda c: (c.published, c.site_index, c.story.number))
    _name_pages(copies)
    return copies


def _write_stories(rng: Random, stories: int) -> list[Story]:
    """``stories`` stories: English ones over the topics in a random order, then two or three Chinese ones."""
    zh_topics = ZH["topics"]
    n_zh = min(len(zh_topics), 2 if stories < 30 else 3)
    n_en = stories - n_zh
    names = Names(rng)
    topic_order = list(range(len(TOPICS)))
    rng.shuffle(topic_order)
    per_topic: dict[int, int] = {}
    usage: dict[str, int] = {}
    all_stories: list[Story] = []
    for i in range(n_en):
        t = topic_order[i % len(topic_order)]
        k = per_topic.get(t, 0)
        per_topic[t] = k + 1
        date = _START + dt.timedelta(days=rng.randint(0, 320))
        all_stories.append(english_story(i + 1, TOPICS[t], k, names, usage, rng, date))
    for j in range(n_zh):
        date = _START + dt.timedelta(days=rng.randint(0, 320))
        all_stories.append(chinese_story(n_en + j + 1, zh_topics[j], rng, date))
    return all_stories


def _place_copies(rng: Random, all_stories: list[Story]) -> list[_Copy]:
    """Give each story its sites (the least loaded first) and each copy its variant, headline and time."""
    n_en = sum(story.lang == "en" for story in all_stories)
    en_sites = [i for i, s in enumerate(SITES) if s.lang == "en"]
    zh_sites = [i for i, s in enumerate(SITES) if s.lang == "zh"]
    load = dict.fromkeys(range(len(SITES)), 0)
    singles = set(rng.sample(range(n_en), max(2, n_en // 7)))
    copies: list[_Copy] = []
    for idx, story in enumerate(all_stories):
        if story.lang == "zh":
            chosen, k = zh_sites, 2
        else:
            k = 1 if idx in singles else rng.choice((2, 3, 4, 4, 5, 5))
            ranked = sorted(en_sites, key=lambda s: (load[s] + rng.random() * 2, s))
            chosen = ranked[:k]
        # every third story carried by several sites is the first site's own (no copy credits an agency);
        # the others are an agency's, credited on every copy; a story on one site is that site's own
        story.wire = k > 1 and idx % 3 != 2
        heads = list(story.headlines)
        rng.shuffle(heads)
        for n, site in enumerate(chosen[:k]):
            load[site] += 1
            variant = "full" if n == 0 else rng.choice(("full", "truncated", "truncated", "edited", "edited"))
            delay = dt.timedelta(days=0 if n == 0 else rng.randint(0, 2), hours=rng.randint(6, 20),
                                 minutes=rng.randint(0, 59))  # fmt: skip
            published = dt.datetime.combine(story.published, dt.time()) + delay
            copies.append(_Copy(story, site, variant, heads[n % len(heads)], published))
    return copies


def _name_pages(copies: list[_Copy]) -> None:
    """Give each copy, in publication order, its page id (a counter per site) and its url."""
    counters = dict.fromkeys(range(len(SITES)), 0)
    for c in copies:
        counters[c.site_index] += 1
        home = SITES[c.site_index]
        c.page_id = f"s{c.site_index + 1}-{counters[c.site_index]:03d}"
        section = _site_section(home, c.story.section)
        name = "document" if c.variant.startswith("bad") else (slug(c.headline) if home.lang == "en" else c.story.slug)
        d = c.published
        c.url = f"https://www.{home.domain}/{section}/{d.year:04d}/{d.month:02d}/{name}-{c.page_id.split('-')[1]}"


def _site_section(site: Site, section: str) -> str:
    if site.lang == "zh":
        return section if section in site.sections else site.sections[1]
    return section if section in site.sections else site.sections[0]


def _caption(story: Story, rng: Random) -> str:
    if story.lang == "zh":
        return ""
    return expand(SENTENCES["caption"], story.ctx, rng)


def _render_copy(copy: _Copy, copies: list[_Copy], rng: Random) -> str:
    site = SITES[copy.site_index]
    story = copy.story
    paragraphs, note = _copy_paragraphs(copy, rng)
    if story.lang == "zh":
        byline = f"{WIRE_ZH}记者 {story.ctx['reporter']}" if copy.variant == "full" else site.name
    elif story.wire:
        byline = f"{rng.choice(('By ', ''))}{story.ctx['reporter']}, {WIRE}"
    else:
        byline = rng.choice(site.reporters)
    others = [c for c in copies if c.story.number != story.number and c.story.lang == story.lang and c.url
              and not c.variant.startswith("bad")]  # fmt: skip
    seen: dict[int, _Copy] = {}
    for c in sorted(others, key=lambda c: (c.site_index != copy.site_index, c.page_id)):
        seen.setdefault(c.story.number, c)
    pool = list(seen.values())
    related_copies = rng.sample(pool, min(len(pool), rng.randint(2, 4)))
    related = [(c.headline, c.story.teaser, c.url) for c in related_copies]
    same_site = [
        c
        for c in others
        if c.site_index == copy.site_index and c.story.number not in {r.story.number for r in related_copies}
    ]
    read_pool = same_site if len(same_site) >= 3 else others
    most_read = [(c.headline, c.url) for c in rng.sample(read_pool, min(len(read_pool), 5))]
    view = View(
        site=site,
        page_id=copy.page_id,
        headline=copy.headline,
        paragraphs=paragraphs,
        byline=byline,
        published=copy.published,
        url=copy.url,
        section=story.section,
        description=story.teaser,
        related=related,
        most_read=most_read,
        comments=_comments(story, rng),
        note=note,
        caption=_caption(story, rng),
    )
    return render(view)


#: the head of a page, where its picture's ``og:image`` goes
_HEAD = re.compile(r"<head>", re.IGNORECASE)
_PALETTE = ("#1a56b0", "#0b7a5a", "#a4161a", "#b35c00", "#5b3fa0", "#2f6f8f", "#7a5c12", "#3d5a1f")


def picture_name(story: Story) -> str | None:
    """The file name of an English story's picture under ``media/`` (the Chinese sites name none)."""
    return None if story.lang == "zh" else f"{story.cluster}.svg"


def picture_svg(story: Story) -> bytes:
    """A small made-up picture of a story: a coloured sky, hills and the sun, placed by the story's number."""
    n = story.number
    sky, land = _PALETTE[n % len(_PALETTE)], _PALETTE[(n * 3 + 1) % len(_PALETTE)]
    sun_x, hill = 40 + (n * 37) % 240, 90 + (n * 13) % 50
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="320" height="200" viewBox="0 0 320 200">'
        f'<rect width="320" height="200" fill="{sky}"/><circle cx="{sun_x}" cy="60" r="24" fill="#fff1a8"/>'
        f'<path d="M0 200 L0 {hill} Q80 {hill - 40} 160 {hill} T320 {hill - 10} L320 200 Z" fill="{land}"/></svg>'
    ).encode()


def _with_picture(page: str, story: Story) -> str:
    """The page with an ``og:image`` naming its story's picture, relative as sites often write it."""
    name = picture_name(story)
    if name is None:
        return page
    return _HEAD.sub(lambda m: f'{m.group(0)}\n<meta property="og:image" content="/media/{name}">', page, count=1)


def _bad_bytes(variant: str, rng: Random) -> bytes:
    if variant == "bad-empty":
        return b""
    junk = bytes(rng.randrange(256) for _ in range(1500))
    return (
        b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\nstream\n"
        + junk
        + b"\nendstream\n%%EOF\n"
    )


def generate(out_dir: Path, *, seed: int = 7, stories: int = 40) -> Path:
    """Write the sample corpus under ``out_dir`` and return the path of ``pages.jsonl``.

    Args:
        out_dir: the folder to write to (created if missing).
        seed: the random seed; the same seed gives byte-identical files.
        stories: how many distinct stories (including the Chinese ones; at least 8).

    Returns:
        ``out_dir / "pages.jsonl"``; ``out_dir / "truth.jsonl"`` holds the gold clusters, ``out_dir / "media"``
        the stories' pictures (SVG; the pages name them as ``/media/<name>`` on their site: the demo serves them).
    """
    if stories < 8:
        raise ValueError(f"stories must be >= 8, got {stories}")
    rng = Random(seed)
    copies = _plan(rng, stories)
    out_dir = Path(out_dir)
    (out_dir / "html").mkdir(parents=True, exist_ok=True)
    pages_path = out_dir / "pages.jsonl"
    with (
        pages_path.open("w", encoding="utf-8", newline="\n") as pages,
        (out_dir / "truth.jsonl").open("w", encoding="utf-8", newline="\n") as truth,
    ):
        for c in copies:
            rel = f"html/{c.page_id}.html"
            site = SITES[c.site_index]
            if c.variant.startswith("bad"):
                (out_dir / rel).write_bytes(_bad_bytes(c.variant, rng))
                cluster = f"bad-{c.page_id}"
            else:
                (out_dir / rel).write_bytes(_with_picture(_render_copy(c, copies, rng), c.story).encode("utf-8"))
                cluster = c.story.cluster
                if (name := picture_name(c.story)) is not None:
                    (out_dir / "media").mkdir(exist_ok=True)
                    (out_dir / "media" / name).write_bytes(picture_svg(c.story))
            row = {"id": c.page_id, "url": c.url, "site": site.domain, "lang": site.lang, "html": rel,
                   "published": c.published.date().isoformat()}  # fmt: skip
            pages.write(json.dumps(row, ensure_ascii=False) + "\n")
            truth.write(json.dumps({"id": c.page_id, "cluster": cluster}, ensure_ascii=False) + "\n")
    return pages_path
