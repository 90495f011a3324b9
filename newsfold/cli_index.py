"""``newsfold maintain``: the indices behind the alias, with old ones force-merged (docs/scaling.md)."""

from __future__ import annotations

import json

from newsfold.cli_run import load_settings
from newsfold.indexer.resources import presence_for
from newsfold.plugin.client import build_client
from newsfold.plugin.fold.rollover import index_facts, merge_old_indices, roll_over


def cmd_maintain(args) -> int:
    """Roll the write index over when due, force-merge every older index to one segment, list them all."""
    settings = load_settings(args)
    client = build_client(settings)
    if not args.list_only:
        rolled = roll_over(client, settings, presence=presence_for(settings))
        if rolled:
            print(f"rolled over: {rolled} is the write index now", flush=True)
        merge_old_indices(client, settings, progress=lambda line: print(line, flush=True))
    facts = index_facts(client, settings.index)
    if args.json:
        print(json.dumps([vars(f) for f in facts]))
        return 0
    print(f"{'index':<40} {'since':<20} {'documents':>10} {'size':>10} {'segments':>8}")
    for f in facts:
        since = f.since.replace("T", " ")[:16]
        mark = " (write)" if f.write else ""
        print(f"{f.name + mark:<40} {since:<20} {f.docs:>10,} {f.bytes / 1e6:>8.1f}MB {f.segments:>8}")
    return 0
