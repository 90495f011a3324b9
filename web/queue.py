"""The web's side of the task queue: a send-only Celery client and task states.

The web never imports the indexer: it queues tasks by their names
(``newsfold.task_names``) and reads task states from the result backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from urllib.parse import urlsplit

from celery import Celery
from celery.backends.redis import RedisBackend

_CONNECT_TIMEOUT = 3.0
_SOCKET_TIMEOUT = 10.0


class PollingRedisBackend(RedisBackend):
    """Redis result backend for a client that polls task states and never waits on them.

    Celery's Redis backend subscribes to a task's result channel as the task
    is sent, so that ``result.get()`` could wait for it. The web never waits,
    and when Redis is down that subscription retries for about 20 seconds and
    then leaves the Celery app unusable until restart. Reading states
    (``AsyncResult(...).state``) is a plain GET and does not need it.
    """

    def on_task_call(self, producer, task_id):
        return None


def make_celery(redis_url: str) -> Celery:
    """A Celery client with ``redis_url`` as broker and result backend, failing fast when it is down."""
    if urlsplit(redis_url).scheme in ("redis", "rediss"):
        backend = f"{__name__}:PollingRedisBackend+{redis_url}"
    else:
        backend = redis_url
    app = Celery("newsfold-web", broker=redis_url, backend=backend, set_as_current=False)
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        broker_connection_timeout=_CONNECT_TIMEOUT,
        broker_transport_options={"socket_connect_timeout": _CONNECT_TIMEOUT, "socket_timeout": _SOCKET_TIMEOUT},
        task_publish_retry_policy={"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5},
        redis_socket_connect_timeout=_CONNECT_TIMEOUT,
        redis_socket_timeout=_SOCKET_TIMEOUT,
    )
    return app


def chunked(items: Sequence, size: int) -> Iterator[list]:
    """Consecutive slices of at most ``size`` items."""
    if size < 1:
        raise ValueError(f"chunk size must be >= 1, got {size}")
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def task_status(celery: Celery, task_id: str) -> dict:
    """``{"id", "state"}`` plus ``"result"`` when the task succeeded or ``"error"`` when it failed.

    Celery reports an unknown id as ``PENDING``, like a task still waiting in the queue.
    """
    result = celery.AsyncResult(task_id)
    state = result.state
    out: dict = {"id": task_id, "state": state}
    if state == "SUCCESS":
        out["result"] = result.result
    elif state == "FAILURE":
        exc = result.result
        out["error"] = f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(exc)
    elif state == "REVOKED":
        out["error"] = "the task was revoked"
    return out
