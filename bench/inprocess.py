"""A graphmem server driven in-process: the real App (LMDB log, actors) and the real tool
handler the transports call, without a transport, so a benchmark measures the server's own
work per call (and its memory) rather than the wire."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from eventstore.events import Cause
from graphmem.app import running
from graphmem.config import Settings
from graphmem.logs import configure_logging
from graphmem.notifier import Notifier
from graphmem.server import build_server

Call = Callable[[str, dict[str, Any]], Awaitable[Any]]
BATCH = 200


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def rss_parts_mib() -> dict[str, float]:
    """Resident memory split: `anon` (the heap: what the process holds) and `file` (pages of
    mapped files, the LMDB log among them: the kernel's cache, reclaimable, shared)."""
    parts = {"anon": 0.0, "file": 0.0}
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(("RssAnon:", "RssFile:")):
                parts[line[3:7].lower()] = round(int(line.split()[1]) / 1024, 1)
    return parts


@asynccontextmanager
async def served(data_dir: Path) -> AsyncIterator[Call]:
    """`call(tool, arguments)` on a server over `data_dir`, for the duration of the block."""
    configure_logging("WARNING")
    cause = Cause(tool="bench", client="bench", session=None)
    with running(Settings(data_dir=data_dir)) as app:
        call_tool = build_server(app, Notifier()).call_tool
        assert call_tool is not None

        async def call(tool: str, arguments: dict[str, Any]) -> Any:
            outcome = await call_tool(tool, arguments, cause)
            if outcome.is_error:
                raise RuntimeError(f"{tool} failed: {outcome.to_wire()}")
            return outcome

        yield call


def name_of(i: int) -> str:
    return f"entity{i:07d}"


def entity_arg(i: int) -> dict[str, Any]:
    name = name_of(i)
    return {
        "name": name,
        "entityType": "person",
        "observations": [f"{name} likes the meeting", "works at acme", f"token uid{i:08d}"],
    }


async def seed(call: Call, live: int, deleted: int) -> None:
    """`live + deleted` entities (three observations and a relation to a neighbour each),
    created in batches; then the first `deleted` of them deleted, in batches."""
    total = live + deleted
    for start in range(0, total, BATCH):
        ids = range(start, min(total, start + BATCH))
        await call("create_entities", {"entities": [entity_arg(i) for i in ids]})
        relations = [
            {"from": name_of(i), "to": name_of(i - 1), "relationType": "knows"}
            for i in ids
            if i > start
        ]
        if relations:
            await call("create_relations", {"relations": relations})
    for start in range(0, deleted, BATCH):
        names = [name_of(i) for i in range(start, min(deleted, start + BATCH))]
        await call("delete_entities", {"entityNames": names})
