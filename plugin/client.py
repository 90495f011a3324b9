"""The one place an Elasticsearch client is built.

The 9.x client sends ``application/vnd.elasticsearch+json; compatible-with=9``,
which Elasticsearch 8 and the osmem stand-in reject. Plain ``application/json``
(and ``application/x-ndjson`` for bulk bodies) is accepted by Elasticsearch 8
and 9 alike, so the node class below rewrites the two headers on the way out.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from elastic_transport import HttpHeaders, Urllib3HttpNode
from elastic_transport.client_utils import DefaultType, url_to_node_config
from elasticsearch import Elasticsearch

from newsfold.plugin.errors import InputError, check_type
from newsfold.plugin.settings import Settings

if TYPE_CHECKING:
    from elastic_transport._node import NodeApiResponse  # the node API's return type, not re-exported

_COMPAT = re.compile(r"application/vnd\.elasticsearch\+([\w-]+);\s*compatible-with=\d+")


def plain_media_type(value: str) -> str:
    """Turn a compatibility media type back into the plain one."""
    return _COMPAT.sub(r"application/\1", value)


class PlainJsonNode(Urllib3HttpNode):
    """A urllib3 node that sends plain JSON media types."""

    def perform_request(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        headers: HttpHeaders | None = None,
        request_timeout: DefaultType | float | None = None,
        **kwargs: Any,
    ) -> NodeApiResponse:
        if headers:
            headers = HttpHeaders(headers)
            for name in ("accept", "content-type"):
                if name in headers:
                    headers[name] = plain_media_type(headers[name])
        if request_timeout is None:
            return super().perform_request(method, target, body=body, headers=headers, **kwargs)
        return super().perform_request(
            method, target, body=body, headers=headers, request_timeout=request_timeout, **kwargs
        )


def build_client(settings: Settings, *, retry_on_timeout: bool = True) -> Elasticsearch:
    """Build the Elasticsearch client described by ``settings``.

    Args:
        settings: the newsfold settings; ``elasticsearch_url`` must be set (one URL, or
            several nodes of one cluster separated by commas).
        retry_on_timeout: send a request again when it timed out (workers
            do); a search front end should not, since the server may still
            be working on the first one.

    Returns:
        A client that retries on connection errors (and on timeouts when asked).

    Raises:
        InputError: no Elasticsearch URL is configured, or one of its nodes is not a URL (the message names it),
            or an argument is of the wrong type (``InputTypeError``).
    """
    check_type(settings, Settings, "settings")
    check_type(retry_on_timeout, bool, "retry_on_timeout")
    if not settings.elasticsearch_url:
        raise InputError("no Elasticsearch URL configured (set ELASTICSEARCH_URL)")
    options: dict[str, Any] = {
        "node_class": PlainJsonNode,
        "request_timeout": settings.es_timeout,
        "max_retries": settings.es_max_retries,
        "retry_on_timeout": retry_on_timeout,
    }
    if settings.elasticsearch_api_key:
        options["api_key"] = settings.elasticsearch_api_key
    elif settings.elasticsearch_user:
        options["basic_auth"] = (settings.elasticsearch_user, settings.elasticsearch_password or "")
    if settings.elasticsearch_ca_certs:
        options["ca_certs"] = settings.elasticsearch_ca_certs
    if not settings.elasticsearch_verify_certs:
        options["verify_certs"] = False
    # several nodes, comma-separated: the client spreads requests over them and goes on through the others
    # when one stops answering (a dead node is set aside and tried again later)
    return Elasticsearch(node_urls(settings.elasticsearch_url), **options)


_USERINFO = re.compile(r"//[^/@\s']*@")


def node_urls(value: str) -> list[str]:
    """The node URLs of ``ELASTICSEARCH_URL``: one, or several of one cluster separated by commas.

    Raises:
        InputError: none is given, or one is not a URL the client can reach (the message names which).
    """
    hosts = [url.strip() for url in value.split(",") if url.strip()]
    if not hosts:
        raise InputError(f"ELASTICSEARCH_URL names no node, got {value[:100]!r}")
    for position, url in enumerate(hosts, start=1):
        try:
            url_to_node_config(url)  # the client's own reading of a URL
        except ValueError as exc:
            hidden = _USERINFO.sub("//***@", f"got {url[:100]!r}: {exc}")  # a password is never echoed
            raise InputError(
                f"ELASTICSEARCH_URL node {position} of {len(hosts)} is not a URL like https://localhost:9200 "
                f"(scheme, host and port), {hidden}"
            ) from None
    return hosts
