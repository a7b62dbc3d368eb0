"""A served process hands a large answer's memory back once the answer is sent.

glibc raises its mmap threshold to the size of each mapped block freed, so once one large
answer (a broad `search_nodes`, `read_graph`) had been sent, the next ones were built in the
heap and their pages kept there when freed: a 50,000-entity server held ~19 MB more after one
broad search. The writer pins the threshold (projections.heap.keep_large_blocks_mapped): each
large block is mapped on its own and unmapped when freed. Measured on a real stdio server
through its /proc status, so only where glibc and /proc are.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

from tests.e2e.raw_stdio import RawServer

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc and /proc/PID/status",
)

ENTITIES = 20_000
BATCH = 500
# Short observations, as a memory's are (its small objects in pymalloc's arenas): the broad
# answer is ~5 MB of JSON, its text and the encoded line each a large block.
FILLER = "common " + "x" * 150
MIB = 1 << 20


def _rss_anon(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == "RssAnon":
            return int(value.split()[0]) * 1024
    raise AssertionError("no RssAnon in /proc/PID/status")


def test_large_answers_leave_no_memory_behind_once_sent(tmp_path: Path) -> None:
    server = RawServer(tmp_path / "data")
    try:
        server.initialize()
        for begin in range(0, ENTITIES, BATCH):
            entities = [
                {"name": f"e{i}", "entityType": "thing", "observations": [f"{FILLER} {i}"]}
                for i in range(begin, begin + BATCH)
            ]
            answer = server.call_tool("create_entities", {"entities": entities})
            assert not answer["result"].get("isError"), answer
        broad = {"query": "common"}
        before = _rss_anon(server.process.pid)
        first = server.call_tool("search_nodes", broad)
        assert len(first["result"]["content"][0]["text"]) > 4 * MIB
        for _ in range(3):
            again = server.call_tool("search_nodes", broad)
            assert again["result"] == first["result"]
        after = _rss_anon(server.process.pid)
    finally:
        server.close()
    # Four answers of ~5 MB: kept in the heap, 12-13 MB more stayed here; mapped, ~4 MB (the
    # arenas of the answers' small objects, reused by the next answer).
    # Four broad answers: kept in the heap, 12-13 MB more stayed here; mapped, 2.5-3 MB (the
    # arenas of the answers' small objects, reused by the next answer).
    assert after - before < 7 * MIB, (before / MIB, after / MIB)
