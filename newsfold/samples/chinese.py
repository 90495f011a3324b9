"""Chinese stories: a topic's sentences, written in story order, with a few dropped and generic ones mixed in."""

from __future__ import annotations

import datetime as dt
from random import Random

from newsfold.samples.stories import Story, expand
from newsfold.samples.vocab import ZH

WIRE_ZH = ZH["wire"]


def chinese_story(number: int, topic: dict, rng: Random, date: dt.date) -> Story:
    """Story ``number`` on ``topic`` (an entry of ``chinese.json``'s topics)."""
    place, place_slug = rng.choice(topic["places"])

    def person() -> str:
        return rng.choice(ZH["surnames"]) + rng.choice(ZH["given_names"])

    districts = rng.sample(ZH["districts"], 3)
    stations = rng.sample(ZH["stations"], 2)
    river, river_slug = rng.choice(ZH["rivers"])
    fruit, fruit_slug = rng.choice(ZH["fruits"])
    line_n = rng.randint(3, 6)
    towns = rng.sample(ZH["towns"], 2)
    cities = ZH["cities"]
    ctx = {
        "place": place,
        "county": rng.choice(ZH["counties"]),
        "m": str(date.month),
        "d": str(date.day),
        "d0": str(max(1, date.day - 3)),
        "line": ZH["digits"][line_n - 1],
        "line_n": str(line_n),
        "line2": ZH["digits"][line_n],
        "km": str(rng.randint(18, 42)),
        "stations": str(rng.randint(14, 30)),
        "district1": districts[0],
        "district2": districts[1],
        "district3": districts[2],
        "station": stations[0],
        "station2": stations[1],
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
        "river": river,
        "river_slug": river_slug,
        "town": towns[0],
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
        "age": str(rng.randint(58, 79)),
        "p1": person(),
        "p3": person(),
        "p4": person(),
        "work": topic["work"],
    }
    lede = expand(topic["lede"], ctx, rng)
    # the sentences are written in story order; keep that order, drop a few, mix in generic ones
    body = [(t, "（" in t) for t in topic["sentences"]]
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
    paragraphs = [p for p in paragraphs if p]
    heads = [expand(h, ctx, rng) for h in topic["heads"]]
    reporter = person()
    ctx["reporter"] = reporter
    dateline = f"{WIRE_ZH}{place}{date.month}月{date.day}日电（记者{reporter}）"
    return Story(
        number=number,
        lang="zh",
        section=topic["section"],
        headlines=heads,
        dateline=dateline,
        alt_datelines=[f"本报{place}讯（通讯员{person()}）", f"本报讯（记者{person()}）", f"{place}消息，"],
        paragraphs=["".join(p) for p in paragraphs],
        teaser=lede,
        published=date,
        slug=expand(topic["slug"], ctx, rng),
        ctx=ctx,
        local=(topic["local"],),
    )
