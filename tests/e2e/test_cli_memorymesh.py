"""A MemoryMesh user's migration, as real processes: `graphmem import` of MemoryMesh's memory
file (tests/fixtures/memorymesh/memory.json, written as its JsonLineStorage writes one), the
imported graph served over stdio to a real MCP client of each protocol era with their schema
files, and `graphmem export --format memorymesh` writing it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.raw_stdio import RawServer
from tests.e2e.support import call, legacy_session, modern_client, text

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

TIMEOUT = 120
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "memorymesh"
MEMORY = FIXTURES / "memory.json"
MEMORYMESH_ENV = {
    "GRAPHMEM_SCHEMAS_DIR": str(FIXTURES / "schemas"),
    "GRAPHMEM_DEFAULT_SCHEMAS": "false",
}
# Lines MemoryMesh would not write, each reported with its line number and skipped.
BROKEN = [
    "this line is not JSON",
    '{"type":"edge","from":"Gandalf","to":"Moria","edgeType":"fears","weight":7}',
    '{"type":"edge","from":"Gandalf","to":"Sauron","edgeType":"opposes"}',
    '{"type":"node","name":"Nameless"}',
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def graphmem(data_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "GRAPHMEM_LOG_LEVEL": "WARNING"}
    env.pop("GRAPHMEM_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), *args],
        capture_output=True,
        env=env,
        timeout=TIMEOUT,
        check=False,
    )


def records(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def imported_data_dir(tmp_path: Path) -> Path:
    data_dir = tmp_path / "data"
    result = graphmem(data_dir, "import", str(MEMORY))
    assert result.returncode == 0, result.stderr.decode()
    return data_dir


def test_import_reads_memorymeshs_file_with_the_progress_bar_and_the_problem_report(
    tmp_path: Path,
) -> None:
    source = tmp_path / "memory.json"
    source.write_bytes(MEMORY.read_bytes() + "\n".join(BROKEN).encode() + b"\n")
    data_dir = tmp_path / "data"

    imported = graphmem(data_dir, "import", str(source))

    assert imported.returncode == 0, imported.stderr.decode()
    summary = imported.stdout.decode()
    assert "(MemoryMesh JSONL)" in summary
    assert "entities:     6 created, 0 already present" in summary
    assert "observations: 23 added, 0 already present" in summary
    assert "relations:    3 created, 0 already present" in summary
    assert "problems:     4" in summary
    assert "line 10: not valid JSON" in summary
    assert "line 11: weight is 7; it must be a number from 0 to 1" in summary
    assert "line 12: relation to missing entity 'Sauron'; not imported" in summary
    assert "line 13: node has no nodeType; the node was not imported" in summary
    assert "importing" in imported.stderr.decode()  # the progress bar

    again = graphmem(data_dir, "import", str(MEMORY))
    assert again.returncode == 0, again.stderr.decode()
    assert "entities:     0 created, 6 already present" in again.stdout.decode()
    assert "relations:    0 created, 3 already present" in again.stdout.decode()


def test_export_as_memorymesh_writes_its_file_back_with_every_edges_weight(
    tmp_path: Path,
) -> None:
    data_dir = imported_data_dir(tmp_path)

    exported = graphmem(data_dir, "export", "--format", "memorymesh")

    assert exported.returncode == 0, exported.stderr.decode()
    assert exported.stdout.endswith(b"\n") and b"\n\n" not in exported.stdout
    # The file as MemoryMesh wrote it; graphmem stores the default weight it left out.
    expected = [
        {**record, "weight": 1.0} if record["type"] == "edge" and "weight" not in record else record
        for record in records(MEMORY.read_bytes())
    ]
    assert records(exported.stdout) == expected
    first_edge = exported.stdout.decode().splitlines()[6]
    assert list(json.loads(first_edge)) == ["type", "from", "to", "edgeType", "weight"]

    to_file = tmp_path / "out.json"
    written = graphmem(data_dir, "export", "--format", "memorymesh", "-o", str(to_file))
    assert written.returncode == 0, written.stderr.decode()
    assert to_file.read_bytes() == exported.stdout
    before_import = graphmem(data_dir, "export", "--format", "memorymesh", "--as-of", "0")
    assert before_import.returncode == 0, before_import.stderr.decode()
    assert before_import.stdout == b""  # the empty graph: no line at all
    official = graphmem(data_dir, "export")
    assert records(official.stdout)[0] == {
        "type": "entity",
        "name": "Rivendell",
        "entityType": "location",
        "observations": expected[0]["metadata"],
    }


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_the_imported_graph_answers_the_mesh_tools_as_memorymesh_would(
    tmp_path: Path, era: str
) -> None:
    data_dir = imported_data_dir(tmp_path)
    connect = legacy_session if era == "legacy" else modern_client

    async with connect(data_dir, tools="mesh,schema", **MEMORYMESH_ENV) as client:  # type: ignore[operator]
        found = json.loads(text(await call(client, "search_nodes", {"query": "currentLocation"})))
        opened = json.loads(text(await call(client, "open_nodes", {"names": ["Rivendell"]})))
        updated = json.loads(
            text(
                await call(
                    client, "update_npc", {"npc": {"name": "Gandalf", "currentLocation": "Moria"}}
                )
            )
        )

    assert found["data"]["nodes"][0]["name"] == "Gandalf"
    edges = {(e["from"], e["to"]): e["weight"] for e in opened["data"]["edges"]}
    assert edges == {("Gandalf", "Rivendell"): 1.0, ("Rivendell", "Moria"): 0.4}
    assert updated["data"]["edgeChanges"]["remove"] == [
        {"from": "Gandalf", "to": "Rivendell", "edgeType": "located_in", "weight": 1.0}
    ]
    assert "currentLocation: Moria" in updated["data"]["updatedNode"]["metadata"]


def test_a_client_that_never_lists_tools_is_still_pointed_at_the_schema_tools(
    tmp_path: Path,
) -> None:
    # An SDK client lists the tools before its first call; a raw one may never do so.
    server = RawServer(tmp_path / "data", GRAPHMEM_TOOLS="mesh,schema", **MEMORYMESH_ENV)
    try:
        server.initialize()
        gandalf = {"name": "Gandalf", "nodeType": "npc", "metadata": []}
        server.call_tool("add_nodes", {"nodes": [gandalf]})
        answer = server.call_tool("add_nodes", {"nodes": [gandalf]})
    finally:
        server.close()

    body = json.loads(answer["result"]["content"][0]["text"])
    assert answer["result"]["isError"] is True
    assert body["suggestions"][0] == 'Update "Gandalf" with update_npc'
