"""``newsfold maintain``: rolls the write index over when due, merges the older ones, lists them; safe twice."""

from __future__ import annotations

import json

from newsfold.cli import main
from newsfold.plugin import ingest
from newsfold.plugin.fold.by_id import behind
from newsfold.plugin.fold.rollover import roll_over
from tests.pages import signed_page, story


def test_maintain_merges_the_old_indices_lists_every_one_and_is_safe_twice(es, settings, monkeypatch, capsys):
    monkeypatch.setenv("ELASTICSEARCH_URL", settings.elasticsearch_url)
    monkeypatch.setenv("NEWSFOLD_INDEX", settings.index)
    for n in range(2):
        ingest([signed_page(settings, f"mt{n}", f"Story {n}", story(430 + n))], client=es, settings=settings)
    first = behind(es, settings.index).write
    new = roll_over(es, settings, force=True)
    assert main(["maintain"]) == 0
    out = capsys.readouterr().out
    assert f"{new} (write)" in out and first in out
    assert main(["maintain"]) == 0
    again = capsys.readouterr().out
    assert "merging" not in again and f"{first}: already merged" in again  # the second run sends no merge
    assert main(["maintain", "--list-only", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(f["name"], f["docs"], f["write"]) for f in listed] == [(new, 0, True), (first, 2, False)]
