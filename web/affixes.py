"""The sites' learned title affixes, kept per web app (one :class:`AffixCache` in ``web.resources``).

``plugin.extract.headlines`` learns a site's affixes from its own titles with one aggregation; the cache keeps
them :data:`AFFIX_TTL_SECONDS`, so a page of results costs that aggregation only for sites it has not seen.
``web.display`` reads it; this module imports nothing of the web.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

from elasticsearch import ApiError, Elasticsearch, TransportError

from newsfold.plugin.extract.headlines import read_site_affixes, site_affixes
from newsfold.plugin.settings import Settings

log = logging.getLogger(__name__)


#: how long learned affixes are reused (a site's affixes change only as its pages accumulate)
AFFIX_TTL_SECONDS = 600.0
#: sites remembered at most (the memory is emptied when full)
MAX_CACHED_SITES = 20_000


class AffixCache:
    """Learned title affixes per index and site, kept :data:`AFFIX_TTL_SECONDS` (one per web app)."""

    def __init__(self, ttl: float = AFFIX_TTL_SECONDS, max_sites: int = MAX_CACHED_SITES) -> None:
        self.ttl, self.max_sites = ttl, max_sites
        self._entries: dict[tuple[str, str], tuple[float, list[str]]] = {}
        self._lock = threading.Lock()

    def get(self, es: Elasticsearch, settings: Settings, sites: Iterable[str | None]) -> dict[str, list[str]]:
        """``site -> affixes`` of some sites; the ones not known (or too old) are learned in one aggregation."""
        now = time.monotonic()
        found: dict[str, list[str]] = {}
        missing = []
        with self._lock:
            for site in sorted({s for s in sites if s}):
                entry = self._entries.get((settings.index, site))
                if entry is not None and now - entry[0] < self.ttl:
                    if entry[1]:
                        found[site] = entry[1]
                else:
                    missing.append(site)
        if not missing:
            return found
        learned = learn_uncached(es, settings, missing)
        if learned is None:  # the aggregation failed: headlines stay whole, nothing is remembered
            return found
        with self._lock:
            if len(self._entries) + len(missing) > self.max_sites:
                self._entries.clear()
            for site in missing:
                self._entries[(settings.index, site)] = (now, learned.get(site, []))
        return {**found, **{s: a for s, a in learned.items() if s in missing}}


def learn_uncached(es: Elasticsearch, settings: Settings, sites: list[str]) -> dict[str, list[str]] | None:
    """The affixes of ``sites`` learned in one aggregation; None when it fails (headlines then stay whole)."""
    try:
        return read_site_affixes(es.search(index=settings.index, body=site_affixes(sites)).body)
    except (ApiError, TransportError) as exc:
        log.warning("could not learn the sites' title affixes: %s", exc)
        return None
