"""A decay run due when `graphmem serve` starts never holds the start-up back: the server
answers initialize and a graph read, and the scheduled run happens after them and is logged
(a real process over stdio, its clock moved two days on; every wait bounded, no sleeps)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.e2e.raw_stdio import RawServer

RELATE = {
    "from_name": "Alice",
    "from_type": "Person",
    "to_name": "Atlas",
    "to_type": "Project",
    "relation": "WORKS_ON",
    "weight": 0.8,
}


def _logged(server: RawServer, event: str) -> list[dict[str, Any]]:
    lines = []
    for line in list(server.stderr):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == event:
            lines.append(entry)
    return lines


def test_a_due_run_at_start_up_waits_for_the_first_read_then_runs_and_is_logged(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    seeding = RawServer(data, GRAPHMEM_TOOLS="memory,graph")
    seeding.initialize()
    assert "error" not in seeding.call_tool("graph_relate", RELATE)
    assert seeding.close() == 0

    server = RawServer(data, "INFO", GRAPHMEM_TOOLS="memory,graph", GRAPHMEM_CLOCK_OFFSET_DAYS="2")
    try:
        assert server.initialize()["result"]["serverInfo"]["name"]
        # The run is due (the graph is two days old) but waits: nothing has built the index.
        assert server.wait_logged_or_ended("decay_run_waits_for_index")
        assert not _logged(server, "decay_scheduled_run")
        stats = server.call_tool("graph_stats", {})
        assert not stats["result"].get("isError"), stats
        assert stats["result"]["structuredContent"]["nodes"]["total"] == 2
        # The read built the index: the scheduler's next look runs the due run.
        assert server.wait_logged_or_ended("decay_scheduled_run")
        [run] = _logged(server, "decay_scheduled_run")
        assert (run["nodes_decayed"], run["edges_decayed"]) == (2, 1)
        decayed = server.call_tool("graph_stats", {})["result"]["structuredContent"]
        assert decayed["nodes"]["total"] == 2
    finally:
        assert server.close() == 0
