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
    hub_holds: dict[str, int] = field(
        default_factory=dict
    )  # node -> the last origin_seq its stream holds
    hub_first: dict[str, int] = field(default_factory=dict)  # node -> the first origin_seq it holds
    peers: list[str] = field(default_factory=list)  # nodes followed
    to_send: int = 0  # this node's events the hub does not hold yet
    published: int = 0  # since the process started
    rounds: int = 0  # outbound rounds (a batch published, one ack awaited) since then
    messages: int = 0  # hub messages those rounds published (batches hold many events each)
    # The wire version this node sends: 2 (batch messages) once every node with a stream in
    # the group reads them, 1 (one event per message) while one does not; None: not known yet.
    wire: int | None = None
    received: int = 0
    # The sender process (this node's events out to the hub; graphmem.replication.sender):
    # pid, running, connected (its own connection), restarts, last_exit.
    sender: dict[str, Any] = field(default_factory=dict)
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
    configured: str | None,
    node: str,
    received: dict[str, int],
    state: dict[str, Any] | None,
    former: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Per origin: how far this node has received it, and how far the hub holds it (as the
    running server last saw); what is still to send; the hub's reachability; the last error;
    `problems`, each saying what to do: a peer whose first events the hub no longer holds
    (a hole this node cannot fill from the hub), GRAPHMEM_NODE_ID being a former id; and
    `notes`: the ids this data dir wrote as before a restore (`former`), members to retire."""
    report: dict[str, Any] = {"enabled": configured is not None, "node": node}
    if configured is not None:
        report["hub"] = redact(configured)
    hub_holds: dict[str, int] = dict(state.get("hub_holds", {})) if state else {}
    hub_first: dict[str, int] = dict(state.get("hub_first", {})) if state else {}
    origins = sorted(set(received) | set(hub_holds) | former)
    report["origins"] = [
        {
            "origin": origin,
            "self": origin == node,
            "former": origin in former,
            "received": received.get(origin, 0),
            "hub_holds": hub_holds.get(origin),
            "behind": (
                max(hub_holds[origin] - received.get(origin, 0), 0)
                if origin in hub_holds and origin != node
                else None
            ),
            "hub_lacks": _hole(origin, node, received, hub_first, hub_holds),
        }
        for origin in origins
    ]
    report["problems"] = _problems(node, report["origins"], former)
    report["notes"] = _notes(node, former)
    report["server"] = _server(state)
    return report


def _hole(
    origin: str,
    node: str,
    received: dict[str, int],
    hub_first: dict[str, int],
    hub_holds: dict[str, int],
) -> list[int] | None:
    """[first, last] of `origin`'s events this node lacks and the hub no longer holds (its
    stream purged or over its limits before this node read them), or None."""
    first, start = hub_first.get(origin, 0), received.get(origin, 0) + 1
    if origin == node or first <= start or hub_holds.get(origin, 0) == 0:
        return None
    return [start, first - 1]


def _problems(node: str, rows: list[dict[str, Any]], former: frozenset[str]) -> list[str]:
    problems = []
    for row in rows:
        if row["hub_lacks"] is not None:
            first, last = row["hub_lacks"]
            problems.append(
                f"the hub no longer holds events {first}..{last} of node {row['origin']} (its "
                "stream was purged or reached its limits) and this node never received them: "
                "it cannot catch up with that node from the hub, and folds nothing of it past "
                "the hole. Bootstrapping from another node's snapshot is not built yet: restore "
                "this data dir from a recent backup of a node that holds them (`graphmem "
                "backup` there, `graphmem restore` here; this node's own events come back from "
                "the hub), and give the hub's streams room (GRAPHMEM_REPLICA_MAX_BYTES)"
            )
    if node in former:
        problems.append(
            f"node id {node} (GRAPHMEM_NODE_ID) is one this data dir wrote as before it was "
            "restored: a server refuses to start as it; set GRAPHMEM_NODE_ID to a new id, or "
            "unset it to use the data dir's own"
        )
    return problems


def _notes(node: str, former: frozenset[str]) -> list[str]:
    if not former:
        return []
    names = ", ".join(sorted(former))
    return [
        f"this data dir wrote as {names} before it was restored from a backup; their later "
        "events (if any) come from the hub like another node's. With replication each is a "
        "departed member: once every member holds its events (the origins above), `graphmem "
        f"replication retire` it and list {node} in GRAPHMEM_REPLICA_MEMBERS in its place, or "
        "tombstone collection waits for it"
    ]


def _server(state: dict[str, Any] | None) -> dict[str, Any] | None:
    if state is None:
        return None  # no server of this data dir has replicated yet
    updated = state.get("updated_at")
    return {
        "pid": state.get("pid"),
        "group": state.get("group"),
        "hub_reachable": bool(state.get("connected")),
        "to_send": state.get("to_send"),
        "published": state.get("published"),
        "messages": state.get("messages"),
        "wire": state.get("wire"),
        "received": state.get("received"),
        "sender": state.get("sender"),
        "last_error": state.get("last_error"),
        "last_error_at": _iso(state.get("last_error_at")),
        "as_of": _iso(updated),
        "age_seconds": round(time.time() - updated, 1) if isinstance(updated, float) else None,
    }


def _iso(seconds: Any) -> str | None:
    if not isinstance(seconds, int | float):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
