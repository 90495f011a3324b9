"""Free loopback ports for the servers newsfold starts (real nodes, the stand-ins' Redis, the demo's web app).

A port is chosen, then the server binds it later (a real node tens of
seconds later). A port from the kernel's ephemeral range can be taken in
between by any process's outgoing connection (a cluster node then dies with
"BindTransportException"); so :func:`free_port` takes a random port below that
range, where only servers that name their port listen, and checks it is free.
"""

from __future__ import annotations

import random
import socket

#: the lowest port :func:`free_port` gives: above the well-known servers' ports (Elasticsearch's 9200-9300,
#: Redis's 6379, the web app's 8000)
LOWEST = 20000


def ephemeral_start() -> int:
    """The first port of the kernel's range for outgoing connections (Linux's default 32768 where unreadable)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as fh:
            return int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(attempts: int = 200) -> int:
    """A loopback TCP port nothing listens on, below the ephemeral range when that leaves room."""
    high = ephemeral_start()
    if high - LOWEST >= 1000:
        for _ in range(attempts):
            port = random.randrange(LOWEST, high)
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
                return port
    with socket.socket() as s:  # a machine whose ephemeral range leaves no room below it
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
