"""Chinese stories: a topic's sentences, written in story order, with a few dropped and generic ones mixed in."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from random import Random

from newsfold.samples.english import Story, expand
from newsfold.samples.vocab import ZH

WIRE_ZH = ZH["wire"]

# The values are drawn from one ``Random`` in a fixed order; the pinned sample corpus depends on that order,
# so the helpers below are called in the order of the slots they fill and draw nothing else.


@dataclass(frozen=True)
class _Picks:
    """What a story draws from the vocabularies before its numbers."""

    districts: list[str]
    stations: list[str]
    river: tuple[str, str]
    fruit: tuple[str, str]
    line_n: int
    towns: list[str]

    @classmethod
    def draw(cls, rng: Random) -> _Picks:
        return cls(
            districts=rng.sample(ZH["districts"], 3),
            stations=rng.sample(ZH["stations"], 2),
            river=rng.choice(ZH["rivers"]),
            fruit=rng.choice(ZH["fruits"]),
            line_n=rng.randint(3, 6),
            towns=rng.sample(ZH["towns"], 2),
        )


def _person(rng: Random) -> str:
    return rng.choice(ZH["surnames"]) + rng.choice(ZH["given_names"])


def _transit_slots(picks: _Picks, rng: Random, date: dt.date) -> dict:
    """A new metro line: its number, stations, passengers, cost and timetable."""
    line_n = picks.line_n
    return {
        "line": ZH["digits"][line_n - 1],
        "line_n": str(line_n),
        "line2": ZH["digits"][line_n],
        "km": str(rng.randint(18, 42)),
        "stations": str(rng.randint(14, 30)),
        "district1": picks.districts[0],
        "district2": picks.districts[1],
        "district3": picks.districts[2],
        "station": picks.stations[0],
        "station2": picks.stations[1],
        "flow": str(rng.randint(15, 40)),
        "inv": str(rng.randint(120, 290)),
        "start_year": str(date.year - rng.randint(4, 6)),
        "year2": str(date.year + 2),
        "year3": str(date.year + rng.randint(5, 8)),
        "lines": str(rng.randint(6, 9)),
        "total_km": str(rng.randint(2, 4) * 100),
        "bus_n": str(rng.randint(12, 35)),
        "speed": str(rng.choice([80, 100, 120])),
        "interval": str(rng.randint(3, 6)),
        "trial": str(rng.randint(60, 100)),
        "fare": str(rng.randint(2, 3)),
        "mins": str(rng.randint(25, 40)),
    }


def _flood_slots(picks: _Picks, rng: Random) -> dict:
    """A flood: the river, the rain, the water level, the evacuation and the damage."""
    river, river_slug = picks.river
    return {
        "river": river,
        "river_slug": river_slug,
        "town": picks.towns[0],
        "rain": str(rng.randint(180, 260)),
        "rain_max": str(rng.randint(300, 420)),
        "hour": str(rng.randint(14, 18)),
        "level": f"{rng.randint(90, 130)}.{rng.randint(1, 9)}",
        "over": f"{rng.randint(0, 2)}.{rng.randint(1, 9)}",
        "evac": str(rng.randint(1200, 6800)),
        "reservoir": rng.choice(ZH["reservoirs"]),
        "teams": str(rng.randint(12, 30)),
        "persons": str(rng.randint(400, 900)),
        "risks": str(rng.randint(8, 40)),
        "roads": str(rng.randint(5, 16)),
        "crop": f"{rng.randint(2, 9)}.{rng.randint(1, 9)}万",
        "households": str(rng.randint(3000, 9000)),
        "days": rng.choice(ZH["days"]),
    }


def _harvest_slots(picks: _Picks, place_slug: str, rng: Random) -> dict:
    """A village's fruit harvest sold online: the crop, the training, the parcels and the buyers."""
    fruit, fruit_slug = picks.fruit
    cities = ZH["cities"]
    return {
        "fruit": fruit,
        "fruit_slug": fruit_slug,
        "town_slug": place_slug,
        "years": str(rng.randint(2, 4) * 10),
        "area": str(rng.randint(3, 8)),
        "output": str(rng.randint(5, 12)),
        "trainees": str(rng.randint(800, 2400)),
        "village": rng.choice(ZH["villages"]),
        "parcels": str(rng.randint(2, 6) * 1000),
        "sales": f"{rng.randint(1, 4)}.{rng.randint(1, 9)}",
        "growth": str(rng.randint(20, 60)),
        "city1": cities[rng.randrange(3)],
        "city2": cities[3 + rng.randrange(3)],
        "max_orders": str(rng.randint(1500, 4000)),
    }


def _context(topic: dict, rng: Random, date: dt.date) -> dict:
    """The slot values of one story: where and when, then every topic's slots, then the people."""
    place, place_slug = rng.choice(topic["places"])
    picks = _Picks.draw(rng)
    return {
        "place": place,
        "county": rng.choice(ZH["counties"]),
        "m": str(date.month),
        "d": str(date.day),
        "d0": str(max(1, date.day - 3)),
        **_transit_slots(picks, rng, date),
        **_flood_slots(picks, rng),
        **_harvest_slots(picks, place_slug, rng),
        "age": str(rng.randint(58, 79)),
        "p1": _person(rng),
        "p3": _person(rng),
        "p4": _person(rng),
        "work": topic["work"],
    }


def _paragraphs(topic: dict, lede: str, ctx: dict, rng: Random) -> list[str]:
    """The lede and the topic's sentences in story order, a few optional ones dropped and generic ones mixed in."""
    body = [(t, "（" in t) for t in topic["sentences"]]  # a sentence with a parenthesis is always kept
    for g in ZH["generic"]:
        body.insert(rng.randrange(4, len(body)), (g, False))
    sizes = [rng.choice((2, 3)) for _ in range(rng.randint(6, 8))]
    while sum(sizes) - 1 > len(body):
        sizes.pop()
    need = sum(sizes) - 1
    required = [i for i, (_, must) in enumerate(body) if must]
    optional = [i for i, (_, must) in enumerate(body) if not must]
    keep = sorted(required + rng.sample(optional, max(0, need - len(required))))[:need]
    texts = [lede] + [expand(body[i][0], ctx, rng) for i in keep]
    paragraphs = []
    for size in sizes:
        paragraphs.append(texts[:size])
        texts = texts[size:]
    return ["".join(p) for p in paragraphs if p]


def chinese_story(number: int, topic: dict, rng: Random, date: dt.date) -> Story:
    """Story ``number`` on ``topic`` (an entry of ``chinese.json``'s topics)."""
    ctx = _context(topic, rng, date)
    place = ctx["place"]
    lede = expand(topic["lede"], ctx, rng)
    paragraphs = _paragraphs(topic, lede, ctx, rng)
    heads = [expand(h, ctx, rng) for h in topic["heads"]]
    reporter = _person(rng)
    ctx["reporter"] = reporter
    dateline = f"{WIRE_ZH}{place}{date.month}月{date.day}日电（记者{reporter}）"
    return Story(
        number=number,
        lang="zh",
        section=topic["section"],
        headlines=heads,
        dateline=dateline,
        alt_datelines=[f"本报{place}讯（通讯员{_person(rng)}）", f"本报讯（记者{_person(rng)}）", f"{place}消息，"],
        paragraphs=paragraphs,
        teaser=lede,
        published=date,
        slug=expand(topic["slug"], ctx, rng),
        ctx=ctx,
        local=(topic["local"],),
    )
