"""The side indices (corrections, rejected pages) are created with the settings' replicas and refresh interval."""

from __future__ import annotations

from newsfold.plugin.edit.correction_log import ensure_corrections_index
from newsfold.plugin.fold.index import corrections_index
from newsfold.plugin.fold.rejections import ensure_rejections_index


def test_side_indices_take_the_refresh_interval_of_the_settings(es, settings):
    # a correction is logged with refresh=wait_for: at a fixed 1 s each one waited up to a second
    wanted = settings.replace(refresh_interval="250ms")
    ensure_corrections_index(es, wanted)
    names = [corrections_index(wanted), ensure_rejections_index(es, wanted)]
    for name in names:
        got = es.indices.get_settings(index=name, name="index.refresh_interval")
        assert got[name]["settings"]["index"]["refresh_interval"] == "250ms", name
