"""A real Elasticsearch client whose Nth request fails, for tests of work cut off partway (issue 39)."""

from __future__ import annotations

from elasticsearch import ConnectionError as EsConnectionError


class FailingTransport:
    """Counts the requests of one client and raises a ConnectionError instead of sending the ``fail_at``-th.

    It wraps the client's own transport (the real server stays behind it), above the client's retries, as a
    connection lost for good would look to the caller. With ``answered=False`` the request is sent and the server
    applies it, and its answer is lost: the caller cannot tell whether it took place.
    """

    def __init__(self, client) -> None:
        self.transport = client.transport
        self.real = self.transport.perform_request
        self.sent = 0
        self.fail_at: int | None = None
        self.failed = False
        self.answered = True
        self.transport.perform_request = self._perform

    def arm(self, fail_at: int | None, *, answered: bool = True) -> None:
        """Count from 0 again and fail the ``fail_at``-th request from now (None: fail none); ``answered=False``:
        after the server applied it."""
        self.sent, self.fail_at, self.failed, self.answered = 0, fail_at, False, answered

    def _perform(self, *args, **kwargs):
        self.sent += 1
        if self.sent != self.fail_at:
            return self.real(*args, **kwargs)
        self.failed = True
        if not self.answered:
            self.real(*args, **kwargs)
        raise EsConnectionError("injected: the connection to Elasticsearch was lost")
