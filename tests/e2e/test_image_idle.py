"""A real stdio server that restored its graph for a write goes back to the graph's read image
once idle (GRAPHMEM_GRAPH_IMAGE_IDLE): it saves a checkpoint and the image, drops the graph,
answers the reads after from the image, and restores again for the next write; every answer
the one a server that never leaves its graph gives."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.e2e.logged_stdio import logged_server
from tests.e2e.support import server_params
from tests.e2e.test_early_reads import INITIALIZE, INITIALIZED, SESSION_TIMEOUT, _call

ENTITIES = 6_000  # past the least a writer goes back to its image for (IMAGE_MIN_ENTITIES)


def _store(data_dir: Path) -> None:
    lines = [
        json.dumps(
            {
                "type": "entity",
                "name": f"item-{i:05d}",
                "entityType": "thing",
                "observations": [f"token uid{i:05d} here"],
            }
        )
        for i in range(ENTITIES)
    ] + [
        json.dumps(
            {"type": "relation", "from": f"item-{i:05d}", "to": "item-00000", "relationType": "r"}
        )
        for i in range(1, 50)
    ]
    jsonl = data_dir.parent / "graph.jsonl"
    jsonl.write_text("\n".join(lines) + "\n")
    params = server_params(data_dir)
    argv = [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), "import", str(jsonl)]
    done = subprocess.run(
        argv, capture_output=True, env=params.env, timeout=SESSION_TIMEOUT, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def _create(i: int, name: str) -> dict[str, Any]:
    entity = {"name": name, "entityType": "thing", "observations": [f"fresh {name}"]}
    return _call(i, "create_entities", {"entities": [entity]})


# A create goes over the image; the update (not one of the official writes) restores the graph.
FIRST = [
    INITIALIZE,
    INITIALIZED,
    _create(1, "alpha"),
    _call(9, "update_entities", {"entities": [{"name": "alpha", "newEntityType": "thing"}]}),
]
THEN = [
    _call(2, "search_nodes", {"query": "fresh"}),
    _call(3, "open_nodes", {"names": ["alpha", "item-00007"]}),
    _call(4, "read_graph", {"offset": 0, "limit": 3}),
    _create(5, "beta"),
    _call(6, "search_nodes", {"query": "FRESH"}),
    _call(7, "add_observations", {"observations": [{"entityName": "alpha", "contents": ["x"]}]}),
    _call(8, "open_nodes", {"names": ["alpha"]}),
]


def _served(data_dir: Path, *, idle: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """FIRST sent; with `idle`, the server's return to its image awaited; THEN sent, stdin
    closed: the responses by id, and the events logged."""
    params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO", GRAPHMEM_GRAPH_IMAGE_IDLE=idle)
    with logged_server(params) as server:
        server.send(FIRST)
        if idle != "0":
            server.log.wait_for("graph_image_resumed")
        server.send(THEN)
        out = server.finish()
    answers = sorted(
        (json.loads(line) for line in out if b'"id":' in line[:30]), key=lambda a: a["id"]
    )
    return answers, server.log.drained()


def test_an_idle_writer_serves_from_its_image_again_and_answers_as_before(tmp_path: Path) -> None:
    returning, plain = tmp_path / "a" / "data", tmp_path / "b" / "data"
    for data_dir in (returning, plain):
        data_dir.parent.mkdir()
        _store(data_dir)
    answers, entries = _served(returning, idle="1")
    expected, plain_entries = _served(plain, idle="0")
    events = [str(entry.get("event")) for entry in entries]
    assert answers == expected
    assert [a["id"] for a in answers] == list(range(10))
    assert not any(a["result"].get("isError") for a in answers)
    found = answers[6]["result"]["structuredContent"]["entities"]
    assert [e["name"] for e in found] == ["alpha", "beta"]
    assert "graph_image_resumed" not in [entry.get("event") for entry in plain_entries]
    # Restored for the update, back to the image when idle (the reads after it answered from
    # the image, "beta" created over it), restored again only to be saved by the stop.
    left = [entry.get("asked") for entry in entries if entry.get("event") == "graph_image_left"]
    assert left == ["UpdateEntities", "a stop"]
    assert events.index("graph_image_resumed") < max(
        i for i, event in enumerate(events) if event == "graph_image_left"
    )
