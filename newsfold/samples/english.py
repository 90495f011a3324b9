"""English stories written from the vocabularies, and what every story carries (``Story``)."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from random import Random

from newsfold.samples.vocab import EN, SENTENCES

MONTHS = EN["months"]
WEEKDAYS = EN["weekdays"]
WIRE = EN["wire"]

_ALT = re.compile(r"\[([^\[\]]*)\]")
_SLOT = re.compile(r"\{(\w+)\}")


def expand(template: str, ctx: dict, rng: Random, depth: int = 0) -> str:
    """Fill ``[a|b]`` choices at random and ``{slot}`` values from ``ctx`` (lists: one at random)."""
    text = template
    while m := _ALT.search(text):
        text = text[: m.start()] + rng.choice(m.group(1).split("|")) + text[m.end() :]

    def fill(m: re.Match) -> str:
        value = ctx[m.group(1)]
        if callable(value):
            value = value(rng)
        elif isinstance(value, list | tuple):
            value = rng.choice(value)
        value = str(value)
        if depth < 4 and ("{" in value or "[" in value):
            return expand(value, ctx, rng, depth + 1)
        return value

    return _SLOT.sub(fill, text)


def cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def slug(text: str) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return "-".join(words[:8]) or "story"


@dataclass
class Story:
    """One story: its text and what the sites need to present it."""

    number: int
    lang: str
    section: str
    headlines: list[str]
    dateline: str  # prefixed to the first paragraph of copies keeping it
    alt_datelines: list[str]
    paragraphs: list[str]  # without the dateline
    teaser: str
    published: dt.date
    slug: str
    ctx: dict = field(repr=False)
    local: Sequence[str] = ()  # sentences an edited copy may add, filled with the site's town
    wire: bool = True

    @property
    def cluster(self) -> str:
        return f"story-{self.number:03d}"


class Names:
    """Unique people and place names across the corpus."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.names: set[str] = set()
        self.surnames: set[str] = set()
        self.places: set[str] = set()

    def person(self) -> tuple[str, str]:
        last_names = EN["last_names"]
        for attempt in itertools.count():
            first, last = self.rng.choice(EN["first_names"]), self.rng.choice(last_names)
            name = f"{first} {last}"
            fresh = last not in self.surnames or len(self.surnames) >= len(last_names)
            if (name not in self.names and fresh) or attempt > 500:  # a huge corpus repeats names
                self.names.add(name)
                self.surnames.add(last)
                return name, last
        raise AssertionError("unreachable")

    def people(self, n: int) -> list[tuple[str, str]]:
        """``n`` new people with different surnames."""
        out: list[tuple[str, str]] = []
        while len(out) < n:
            name, last = self.person()
            if last not in {o[1] for o in out}:
                out.append((name, last))
        return out

    def place(self) -> str:
        for attempt in itertools.count():
            head, tail = self.rng.choice(EN["place_heads"]), self.rng.choice(EN["place_tails"])
            name = head + tail
            if head.lower() != tail and (name not in self.places or attempt > 500):
                self.places.add(name)
                return name
        raise AssertionError("unreachable")


def _words_number(rng: Random) -> str:
    return rng.choice(EN["number_words"])


# Slots every English story fills:
#   place place2 place3 region street venue funder wire thing head group issue org org_short
#   p1 p1_last p1_role  p2 p2_last p2_role  p3 p3_last p3_role  (and pN_who pN_end pN_name, see "frames")
#   expert expert_inst
#   amount amount_small amount2 amount_tiny pct pct_fixed num num_small km population years year_past year_next
#   decade weekday weekday_next month month_past next_month
# A value that is a function or a list is drawn again at every use.
# The values are drawn from one ``Random`` in a fixed order; the pinned sample corpus depends on that order.
def _english_context(topic: dict, index: int, names: Names, rng: Random, date: dt.date) -> dict:
    ctx, org = _cast(topic, names, rng)
    ctx.update(_figures(rng))
    ctx.update(_calendar(rng, date))
    _describe(ctx, topic, index, org, rng)
    _add_references(ctx)
    ctx["issue"] = expand(ctx["issue"], ctx, rng)
    return ctx


def _cast(topic: dict, names: Names, rng: Random) -> tuple[dict, tuple[str, str]]:
    """Where the story happens and who is in it; also the organisation's (template, short name)."""
    place, place2, place3 = names.place(), names.place(), names.place()
    region = rng.choice(EN["regions"])
    (p1, p1_last), (p2, p2_last), (p3, p3_last), (expert, _), (reporter, _) = names.people(5)
    org = topic["orgs"][rng.randrange(len(topic["orgs"]))]
    street = f"{rng.choice(EN['streets'])} {rng.choice(EN['street_kinds'])}"
    slots = {
        "place": place,
        "place2": place2,
        "place3": place3,
        "region": region,
        "river": rng.choice(EN["rivers"]),
        "street": street,
        "venue": rng.choice(EN["venues"]).format(place=place),
        "funder": [funder.format(region=region) for funder in EN["funders"]],
        "wire": WIRE,
        "group": rng.choice(topic["groups"]),
        "issue": rng.choice(topic["issues"]),
        "p1": p1,
        "p1_last": p1_last,
        "p2": p2,
        "p2_last": p2_last,
        "p3": p3,
        "p3_last": p3_last,
        "p3_age": str(rng.randint(23, 84)),
        "p3_job": rng.choice(EN["jobs"]),
        "expert": expert,
        "reporter": reporter,
        "expert_inst": rng.choice(EN["institutions"]).format(place3=place3, region=region),
    }
    return slots, org


def _figures(rng: Random) -> dict:
    """Sums, shares, counts and measures."""
    return {
        "amount": f"${rng.randint(12, 480)} million",
        "amount_small": f"${rng.randint(2, 9)}.{rng.randint(1, 9)} million",
        "amount2": f"${rng.randint(500, 900)} million",
        "amount_tiny": f"${rng.randint(35, 460)}",
        "amount_appeal": lambda r: f"${r.randint(2, 40) * 250:,}",
        "pct": lambda r: str(r.randint(11, 78)),
        "pct_fixed": str(rng.randint(4, 19)),
        "pct_small": lambda r: str(r.randint(2, 9)),
        "pct_small2": lambda r: str(r.randint(3, 11)),
        "num": lambda r: f"{r.randint(1, 9)},{r.randint(100, 999)}",
        "num_fixed": str(rng.randint(2, 9) * 100 + rng.randint(1, 9) * 10),
        "num_small": _words_number,
        "stops": lambda r: str(r.randint(11, 64)),
        "km": str(rng.randint(6, 48)),
        "interval": str(rng.randint(6, 18)),
        "level": f"{rng.randint(3, 7)}.{rng.randint(1, 9)}",
        "rain": str(rng.randint(70, 160)),
        "mw": str(rng.randint(40, 900)),
        "mya": str(rng.randint(240, 390)),
        "minute": str(rng.randint(70, 89)),
        "hours": str(rng.randint(5, 19)),
        "population": f"{rng.randint(12, 180)},000",
        "residents_word": EN["residents"],
        "years": rng.choice(EN["number_words"]),
    }


def _calendar(rng: Random, date: dt.date) -> dict:
    """Years, decades, weekdays and months around the story's ``date``."""
    year = date.year
    return {
        "year_past": lambda r: str(year - r.randint(2, 12)),
        "year_next": lambda r: str(year + r.randint(1, 3)),
        "decade": rng.choice(EN["decades"]),
        "decade_start": str(rng.choice(EN["founding_years"])),
        "weekday": WEEKDAYS[date.weekday()],
        "weekday_next": rng.choice(WEEKDAYS[:5]),
        "month": MONTHS[date.month - 1],
        "month_past": MONTHS[(date.month - 3) % 12],
        "next_month": MONTHS[date.month % 12],
    }


def _describe(ctx: dict, topic: dict, index: int, org: tuple[str, str], rng: Random) -> None:
    """Fill what the story is about (the ``index``-th thing of ``topic``), the organisation and the people's roles."""
    thing, head = topic["things"][index % len(topic["things"])]
    ctx["thing"] = expand(thing, ctx, rng)
    ctx["head"] = expand(head, ctx, rng)
    ctx["org"] = expand(org[0], ctx, rng)
    ctx["org_short"] = org[1]
    ctx["p1_role"] = expand(rng.choice(topic["off_roles"]), ctx, rng)
    ctx["p2_role"] = expand(topic["crit_roles"][index % len(topic["crit_roles"])], ctx, rng)
    ctx["p3_role"] = expand(rng.choice(EN["resident_roles"]), ctx, rng)


def _add_references(ctx: dict) -> None:
    """Add ``pN_who``, ``pN_end`` and ``pN_name``: a person's full name and role once, the surname after that."""
    introduced: set[str] = set()

    def ref(key: str, kind: str) -> Callable[[Random], str]:
        def value(_rng: Random) -> str:
            if key in introduced:
                return ctx[key + "_last"]
            introduced.add(key)
            if kind == "name":
                return ctx[key]
            return f"{ctx[key]}, {ctx[key + '_role']}" + ("," if kind == "who" else "")

        return value

    for key in ("p1", "p2", "p3"):
        for kind in ("who", "end", "name"):
            ctx[f"{key}_{kind}"] = ref(key, kind)


class _Pool:
    """Sentence templates by role, each used at most once in a story.

    Across the corpus the least-used template of a role is taken first, so
    different stories share as few templates as possible.
    """

    def __init__(self, pools: dict[str, list[str]], usage: dict[str, int], rng: Random) -> None:
        self.pools = {role: list(items) for role, items in pools.items()}
        self.usage = usage
        self.rng = rng

    def take(self, role: str) -> str | None:
        items = self.pools.get(role)
        if not items:
            return None
        low = min(self.usage.get(t, 0) for t in items)
        choice = self.rng.choice([t for t in items if self.usage.get(t, 0) == low])
        items.remove(choice)
        self.usage[choice] = self.usage.get(choice, 0) + 1
        return choice


def _pools(topic: dict, flavour: str, part: int) -> dict[str, list[str]]:
    """Sentence templates by role: the generic ones for ``flavour``, and the topic's facts and quotes for ``part``."""
    generic = SENTENCES["generic"]
    pools = {
        role: generic["any"].get(role, [])
        + generic[flavour].get(role, [])
        + (generic["contested"].get(role, []) if flavour != "news" else [])
        for role in ("fact", "background", "reaction", "next", "q_off", "q_crit", "q_res")
    }
    for role in ("fact", "q_off", "q_crit", "q_res"):
        pools[role] += [t for i, t in enumerate(topic[role]) if i % 3 == part]
    return pools


class _Writer:
    """Writes a story's sentences by role from a ``_Pool``; a quote's words are never said twice."""

    def __init__(self, pool: _Pool, ctx: dict, rng: Random) -> None:
        self.pool = pool
        self.ctx = ctx
        self.rng = rng
        self.used_bodies: set[str] = set()

    def sentence(self, role: str) -> str | None:
        """A sentence of ``role`` (a fact, background or reaction when none is left); None when all are used."""
        ctx, rng, pool = self.ctx, self.rng, self.pool
        template = pool.take(role)
        while role.startswith("q_") and template in self.used_bodies:
            template = pool.take(role)
        if template is None:
            for fallback in ("fact", "background", "reaction"):
                template = pool.take(fallback)
                if template is not None:
                    return cap(expand(template, ctx, rng))
            return None
        if role.startswith("q_"):
            self.used_bodies.add(template)
            body = cap(expand(template, ctx, rng))
            return cap(expand(rng.choice(SENTENCES["frames"][role]), {**ctx, "q": body}, rng))
        return cap(expand(template, ctx, rng))

    def sentences(self, role: str, n: int) -> list[str]:
        return [s for s in (self.sentence(role) for _ in range(n)) if s]


def _kinds(rng: Random) -> list[str]:
    """The kinds of the middle paragraphs, each kind once before any repeats."""
    kinds_of = SENTENCES["kinds"]
    n_paras = rng.randint(6, 12)
    kinds = list(kinds_of)
    rng.shuffle(kinds)
    while len(kinds) < n_paras - 3:
        kinds.append(rng.choice(list(kinds_of)))
    return kinds[: n_paras - 3]


def _body(angle: dict, writer: _Writer, rng: Random) -> tuple[str, list[str]]:
    """The lede and the paragraphs: the lede with facts, a detail, the middle kinds, what comes next."""
    kinds_of = SENTENCES["kinds"]
    kinds = _kinds(rng)
    first = cap(expand(angle["lede"], writer.ctx, rng))
    paragraphs = [[first] + writer.sentences("fact", rng.randint(1, 2))]
    for kind in ["detail", *kinds]:
        lead, rest = kinds_of[kind]["lead"], kinds_of[kind]["then"]
        sents = [writer.sentence(lead)] + [
            writer.sentence(rng.choice(rest)) for _ in range(rng.choice((1, 1, 1, 2, 2, 2, 3)))
        ]
        paragraphs.append([s for s in sents if s])
    paragraphs.append(writer.sentences("next", rng.randint(2, 3)))
    merged: list[list[str]] = []
    for p in paragraphs:  # a paragraph left with one sentence joins the one before
        if len(p) >= 2 or not merged:
            merged.append(p)
        else:
            merged[-1].extend(p)
    return first, [" ".join(p) for p in merged if p]


def english_story(
    number: int, topic: dict, index: int, names: Names, usage: dict[str, int], rng: Random, date: dt.date
) -> Story:
    """Story ``number``, the ``index``-th on ``topic``; ``usage`` counts the templates used so far."""
    ctx = _english_context(topic, index, names, rng, date)
    place_upper, month_day = ctx["place"].upper(), f"{MONTHS[date.month - 1]} {date.day}"  # for the datelines
    angle = topic["ledes"][index % len(topic["ledes"])]
    flavour = topic["flavours"][index % len(topic["flavours"])]
    part = index % 3  # the topic's facts and quotes at i % 3 == part fit this angle (and no other story's)
    writer = _Writer(_Pool(_pools(topic, flavour, part), usage, rng), ctx, rng)
    first, paragraphs = _body(angle, writer, rng)
    heads = [cap(expand(h, ctx, rng)) for h in (*angle["heads"], *topic["heads"], *SENTENCES["generic_heads"])]
    return Story(
        number=number,
        lang="en",
        section=topic["section"],
        headlines=heads,
        dateline=f"{place_upper}, {month_day} ({WIRE}) —",
        alt_datelines=[f"{place_upper} —", f"{place_upper}, {ctx['region']} —", f"{month_day}, {ctx['place']} —"],
        paragraphs=paragraphs,
        teaser=first,
        published=date,
        slug=slug(heads[0]),
        ctx=ctx,
        local=SENTENCES["local"],
    )
