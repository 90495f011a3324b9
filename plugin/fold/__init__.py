"""Folding: signed pages become stories in an index: lookups, decisions, writes, merges, deletes.

``batch.ingest`` is the protocol; ``candidates`` looks a batch up and verifies its copies, ``cluster``
decides (pure; ``merge_survivor`` is the one merge rule) on ``union_find``'s disjoint sets, ``founding``
names stories, ``regroup`` merges and splits written stories, ``lifecycle`` deletes and regroups,
``provenance`` keeps each story's origin, ``constraints`` reads editors' corrections back. The stored format
is ``document`` (fields) and ``index`` (mappings, templates, ``_meta``); ``lookups`` builds the searches,
``store`` the shared reads and writes, ``rejections`` the side index of rejected pages.
"""
