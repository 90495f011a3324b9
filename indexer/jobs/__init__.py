"""The jobs a coordinator runs through the workers: ingest, reindex, and what they share.

``dispatch`` keeps units of work in flight; ``ingest`` and ``reindex`` (with
``reindex_plan`` and ``reindex_chunks``) are the jobs; ``archive`` is the
raw-page archive an ingest writes and a reindex reads.
"""
