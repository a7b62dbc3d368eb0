"""The replication state a server writes to its data dir, and how it is shown.

The link keeps a LinkState and writes it (atomically, about once a second) to
`replication.json`; `graphmem replication status` and `graphmem stats` read it beside the
log's own frontiers (what this node has received of every origin), so they answer whether a
server is running or not, and never wait on the hub.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["STATE_FILE", "LinkState", "read_state", "redact", "replication_report", "write_state"]

STATE_FILE = "replication.json"


@dataclass
class LinkState:
    hub: str
    group: str
    node: str
    connected: bool
    since: float | None = None  # when `connected` last changed
    last_error: str | None = None
    last_error_at: float | None = None
    hub_holds: dict[str, int] = field(default_factory=dict)  # node -> its stream's last seq
    peers: list[str] = field(default_factory=list)  # nodes followed
    to_send: int = 0  # this node's events the hub does not hold yet
    published: int = 0  # since the process started
    rounds: int = 0  # outbound rounds (a batch published, one ack awaited) since then
    received: int = 0
    updated_at: float | None = None
    pid: int = field(default_factory=os.getpid)


def redact(url: str) -> str:
    """The hub's URL without a password or token."""
    shown = []
    for part in url.split(","):
        split = urlsplit(part.strip())
        if split.username or split.password:
            host = split.hostname or ""
            netloc = f"***@{host}" + (f":{split.port}" if split.port else "")
            split = split._replace(netloc=netloc)
        shown.append(urlunsplit(split))
    return ",".join(shown)


def write_state(path: Path, state: LinkState) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(state), sort_keys=True))
    os.replace(tmp, path)


def read_state(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def replication_report(
    configured: str | None, node: str, received: dict[str, int], state: dict[str, Any] | None
) -> dict[str, Any]:
    """Per origin: how far this node has received it, and how far the hub holds it (as the
    running server last saw); what is still to send; the hub's reachability; the last error."""
    report: dict[str, Any] = {"enabled": configured is not None, "node": node}
    if configured is not None:
        report["hub"] = redact(configured)
    hub_holds: dict[str, int] = dict(state.get("hub_holds", {})) if state else {}
    origins = sorted(set(received) | set(hub_holds))
    report["origins"] = [
        {
            "origin": origin,
            "self": origin == node,
            "received": received.get(origin, 0),
            "hub_holds": hub_holds.get(origin),
            "behind": (
                max(hub_holds[origin] - received.get(origin, 0), 0)
                if origin in hub_holds and origin != node
                else None
            ),
        }
        for origin in origins
    ]
    if state is None:
        report["server"] = None  # no server of this data dir has replicated yet
        return report
    updated = state.get("updated_at")
    report["server"] = {
        "pid": state.get("pid"),
        "group": state.get("group"),
        "hub_reachable": bool(state.get("connected")),
        "to_send": state.get("to_send"),
        "published": state.get("published"),
        "received": state.get("received"),
        "last_error": state.get("last_error"),
        "last_error_at": _iso(state.get("last_error_at")),
        "as_of": _iso(updated),
        "age_seconds": round(time.time() - updated, 1) if isinstance(updated, float) else None,
    }
    return report


def _iso(seconds: Any) -> str | None:
    if not isinstance(seconds, int | float):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
