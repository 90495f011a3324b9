"""The Celery app. Start a worker with ``celery -A newsfold.indexer.celery_app worker``
(or ``newsfold worker``); broker and result backend are ``REDIS_URL``."""

from __future__ import annotations

from celery import Celery

from newsfold.plugin.settings import Settings
from newsfold.settings_registry import warn_unknown_env


def make_celery(settings: Settings | None = None) -> Celery:
    """A Celery app on the settings' Redis, with at-least-once delivery."""
    if settings is None:
        warn_unknown_env()
        settings = Settings.from_env()
    app = Celery("newsfold", broker=settings.redis_url, backend=settings.redis_url, include=["newsfold.indexer.tasks"])
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,  # a batch whose worker dies is delivered again; ingest is idempotent
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        result_expires=7 * 24 * 3600,
        broker_connection_retry_on_startup=True,
        broker_transport_options={"visibility_timeout": 3600},
        worker_hijack_root_logger=False,
        task_track_started=True,
    )
    return app


app = make_celery()
