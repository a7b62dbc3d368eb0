"""The search index the early reads build while the server loads, and the server adopting it
(graphmem.early_reads, actors.search_handover), over a real stdio server.

A store of a few thousand entities, so that the index has many segments and its filter takes
several steps: the first searches after a spawn are answered from it, the server's writer
serves the same index afterwards instead of building a second one, and every answer is the
bytes a server without the early reads writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from tests.e2e.support import call, legacy_session, server_params
from tests.e2e.test_early_reads import INITIALIZE, INITIALIZED, _call, _early_calls, _session

ENTITIES = 3000  # 24 segments of the index: two steps of its filter
SESSION_TIMEOUT = 120.0


def _imported(data_dir: Path, **env: str) -> None:
    """A store of ENTITIES entities (`graphmem import`), whose initialize answer is kept for
    a server with `env` (the kept answer's fingerprint holds the GRAPHMEM_ settings)."""
    lines = [
        json.dumps(
            {
                "type": "entity",
                "name": f"item-{i:05d}",
                "entityType": "thing",
                "observations": [f"token uid{i:05d} here", "a common note"],
            }
        )
        for i in range(ENTITIES)
    ]
    jsonl = data_dir.parent / "graph.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    params = server_params(data_dir)
    done = subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "import", str(jsonl)],
        capture_output=True,
        env=params.env,
        timeout=SESSION_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    _session(
        data_dir, [INITIALIZE], **env
    )  # keeps the initialize answer: the next starts are early


def _events(log: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in log if entry.get("event") == name]


def _names(answer: bytes) -> list[str]:
    return [e["name"] for e in json.loads(answer)["result"]["structuredContent"]["entities"]]


def test_the_server_adopts_the_index_the_early_reads_began_and_keeps_it_current(
    tmp_path: Path,
) -> None:
    """Everything written at once: the early path answers the first search and stops at the
    write, its index's filter unfinished; the writer adopts it, finishes it, and the searches
    after the write (the server's) see the new entity, as a server alone answers them."""
    data_dir = tmp_path / "data"
    _imported(data_dir, GRAPHMEM_GRAPH_IMAGE="0")
    newcomer = {"name": "zz-new", "entityType": "thing", "observations": ["token uid00007 too"]}
    messages = [
        INITIALIZE,
        INITIALIZED,
        _call(1, "search_nodes", {"query": "uid00007"}),
        _call(2, "create_entities", {"entities": [newcomer]}),
        _call(3, "search_nodes", {"query": "UID00007"}),
        _call(4, "search_nodes", {"query": "uid02999"}),
        _call(5, "search_nodes", {"query": "absent"}),
    ]
    # The graph restored (no image served): the early reads build the index handed over.
    early, log = _session(data_dir, messages, GRAPHMEM_GRAPH_IMAGE="0")
    server, server_log = _session(
        data_dir, messages, GRAPHMEM_EARLY_READS="0", GRAPHMEM_GRAPH_IMAGE="0"
    )
    assert _early_calls(log) == ["search_nodes"]  # then the write, the server's, and all after
    assert [handed["adopted"] for handed in _events(log, "search_handed_over")] == [True]
    assert not _events(server_log, "search_handed_over")  # nothing built early to adopt
    assert _names(early[1]) == ["item-00007"]
    assert _names(early[3]) == ["item-00007", "zz-new"]
    assert _names(early[4]) == ["item-02999"]
    assert _names(early[5]) == []
    # The second session saw the newcomer created by the first: the same store, so only the
    # answers that do not depend on it are compared across the two.
    assert [early[i] for i in (0, 4, 5)] == [server[i] for i in (0, 4, 5)]


@pytest.mark.anyio
async def test_an_sdk_client_meets_an_index_built_before_the_server_took_over(
    tmp_path: Path,
) -> None:
    """The SDK's client, each call awaited: the early path builds the whole index (the server
    waits for it before loading), answers the reads, and hands it to the writer, which
    serves it warm; the answers are those of a server with the early reads off."""
    data_dir = tmp_path / "data"
    _imported(data_dir)
    newcomer = {"name": "zz-new", "entityType": "thing", "observations": ["token uid00042 too"]}

    async def session(client: ClientSession) -> list[Any]:
        found = [
            (await call(client, "search_nodes", {"query": query})).structured_content
            for query in ("uid00042", "uid01234", "common note", "absent")
        ]
        await call(client, "create_entities", {"entities": [newcomer]})
        found.append((await call(client, "search_nodes", {"query": "uid00042"})).structured_content)
        await call(client, "delete_entities", {"entityNames": ["zz-new"]})
        return found

    no_image = {"GRAPHMEM_GRAPH_IMAGE": "0"}  # the graph restored, the index built early
    async with legacy_session(data_dir, GRAPHMEM_LOG_LEVEL="INFO", **no_image) as client:
        # Keeps this client's initialize and tools/list answers (the SDK lists the tools
        # before its first call): the next start answers both early.
        await call(client, "search_nodes", {"query": "absent"})
    log_file = tmp_path / "server.log"
    with log_file.open("w") as errlog:
        async with legacy_session(
            data_dir, errlog=errlog, GRAPHMEM_LOG_LEVEL="INFO", **no_image
        ) as client:
            early = await session(client)
    async with legacy_session(data_dir, GRAPHMEM_EARLY_READS="0") as client:
        server = await session(client)
    assert early == server
    assert [e["name"] for e in early[0]["entities"]] == ["item-00042"]
    assert len(early[2]["entities"]) == ENTITIES
    assert [e["name"] for e in early[4]["entities"]] == ["item-00042", "zz-new"]
    log = [json.loads(line) for line in log_file.read_text().splitlines() if line.startswith("{")]
    [done] = _events(log, "early_reads_done")
    assert done["answered"] >= 1  # reads before the write, until the server took over
    assert done["search_warmed"] is True  # built while the server waited, filter and all
    assert [handed["adopted"] for handed in _events(log, "search_handed_over")] == [True]
    assert _events(log, "search_warmed")  # the writer found nothing left to do
