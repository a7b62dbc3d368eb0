"""Whether the replication hub (GRAPHMEM_REPLICATE) answers: `graphmem doctor`'s check.

A TCP connect to each of the URL's host:port, bounded by REACH_SECONDS, is enough to tell "the
hub is down or the address is wrong" from "it listens"; it never speaks NATS, so it needs no
credentials and no nats-py. The link's own view (replication.json, written by a running
server) is reported beside it when there is one.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["REACH_SECONDS", "Reach", "reach_hub"]

REACH_SECONDS = 2.0
DEFAULT_NATS_PORT = 4222


@dataclass(frozen=True)
class Reach:
    """One address of the hub: `problem` is None when it accepted a connection."""

    address: str
    problem: str | None


def reach_hub(url: str, timeout: float = REACH_SECONDS) -> list[Reach]:
    """Try every server the URL lists (nats://HOST:PORT[,...]), each bounded by `timeout`."""
    found = []
    for part in url.split(","):
        try:
            split = urlsplit(part.strip())
            host, port = split.hostname, split.port or DEFAULT_NATS_PORT
        except ValueError as problem:
            found.append(Reach(part.strip(), f"not a hub URL: {problem}"))
            continue
        if not host:
            found.append(Reach(part.strip(), "not a hub URL: no host (nats://HOST:PORT)"))
            continue
        address = f"{host}:{port}"
        try:
            with socket.create_connection((host, port), timeout=timeout):
                found.append(Reach(address, None))
        except OSError as problem:
            found.append(Reach(address, str(problem) or type(problem).__name__))
    return found
