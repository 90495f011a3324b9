"""Small hand-written article pages for tests (our own text, not third-party pages)."""

from __future__ import annotations

import random

WORDS = (
    "council",
    "budget",
    "river",
    "bridge",
    "school",
    "teachers",
    "strike",
    "minister",
    "election",
    "harbour",
    "storm",
    "rainfall",
    "farmers",
    "market",
    "hospital",
    "nurses",
    "vaccine",
    "court",
    "judge",
    "appeal",
    "festival",
    "museum",
    "library",
    "railway",
    "station",
    "airport",
    "pilots",
    "union",
    "factory",
    "workers",
    "wages",
    "energy",
    "prices",
    "solar",
    "wind",
    "turbines",
    "coast",
    "guard",
    "rescue",
    "fishing",
    "boat",
    "village",
    "mayor",
    "police",
    "investigation",
    "report",
    "study",
    "university",
    "researchers",
    "climate",
    "drought",
    "wildfire",
    "firefighters",
    "evacuation",
    "families",
    "housing",
    "rent",
    "tenants",
    "landlord",
    "protest",
    "square",
    "government",
    "opposition",
    "parliament",
    "vote",
    "reform",
    "tax",
    "healthcare",
)


def story(seed: int, sentences: int = 14) -> list[str]:
    """Paragraphs of a made-up story, deterministic for a seed."""
    rng = random.Random(seed)
    paras = []
    for _ in range(sentences // 2):
        sents = []
        for _ in range(2):
            n = rng.randint(12, 20)
            words = [rng.choice(WORDS) for _ in range(n)]
            sents.append(" ".join(words).capitalize() + ".")
        paras.append(" ".join(sents))
    return paras


def page(title: str, paragraphs: list[str], *, site: str = "example.test", extra: str = "") -> str:
    """An HTML page with navigation and footer boilerplate around an article."""
    body = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title} | {site}</title></head>
<body><nav><a href="/">Home</a> <a href="/world">World</a> <a href="/sport">Sport</a></nav>
<main><article><h1>{title}</h1>{body}{extra}</article></main>
<footer><p>Copyright {site}. All rights reserved.</p></footer></body></html>"""


def signed_page(settings, pid: str, title: str, paras: list[str], *, site: str | None = None):
    """A page of ``site`` (default ``<pid>.example``) built from ``paras`` and signed; fails the test if rejected."""
    from newsfold.plugin.sign.signed_page import Page
    from newsfold.plugin.sign.signing import sign_page

    site = site or f"{pid}.example"
    signed = sign_page(Page(html=page(title, paras, site=site).encode(), id=pid, url=f"https://{site}/{pid}"), settings)
    assert not hasattr(signed, "reason"), signed
    return signed
