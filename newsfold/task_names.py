"""The names of newsfold's Celery tasks, read by the processes that send them and by the one that defines them.

The web and the CLI queue work by name and never import the indexer; the
indexer registers its tasks under these names. A task renamed in one place
only would be queued to a name no worker knows, so every name lives here.
"""

from __future__ import annotations

#: one batch of pages: extract, sign, look up, fold (``args=[pages]`` or ``[pages, index]``)
INGEST_BATCH = "indexer.tasks.ingest_batch"
#: a reindex job's coordinator (``kwargs={"job_id"}``)
REINDEX = "indexer.tasks.reindex"
#: what a reindex job may rebuild from (its ``source`` parameter)
REINDEX_SOURCES = ("text", "archive")
#: one chunk of a reindex (``kwargs={"job_id", "chunk"}``)
REINDEX_CHUNK = "indexer.tasks.reindex_chunk"
#: queue a finished job's retryable failures again (``kwargs={"job_id"}``)
RETRY_FAILURES = "indexer.tasks.retry_failures"
