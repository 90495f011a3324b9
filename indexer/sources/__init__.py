"""Ingest sources: one module per kind of input, each behind the ``Source`` protocol of ``base``.

``base`` states the contract every source keeps and picks the source a path
needs; ``directory``, ``jsonl`` and ``warc`` are the sources; ``warc_read`` and
``warc_scan`` read WARC files that may be damaged (also for the raw-page archive).
"""
