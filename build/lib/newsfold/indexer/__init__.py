"""newsfold's ingest side: the Celery app and its tasks."""
