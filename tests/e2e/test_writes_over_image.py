"""A real stdio server writes over the graph's image (actors.image_serving): from a new store
on, the official writes are decided and appended without restoring the graph, compacted into
a new image by a child process (actors.image_compaction), and every answer — before, during
and after a compaction, and in the next session — is byte for byte the one a server without
images gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from projections.graph_image import IMAGE_FILE
from tests.e2e.logged_stdio import logged_server
from tests.e2e.support import server_params
from tests.e2e.test_early_reads import INITIALIZE, INITIALIZED, _call

COMPACT_AT = "40"  # entities and relations over the image before a compaction


def _entities(i: int, first: int, count: int) -> dict[str, Any]:
    entities = [
        {"name": f"e{k:03d}", "entityType": "thing", "observations": [f"note {k}", "shared"]}
        for k in range(first, first + count)
    ]
    return _call(i, "create_entities", {"entities": entities})


def _relations(i: int, first: int, count: int) -> dict[str, Any]:
    relations = [
        {"from": f"e{k:03d}", "to": f"e{k + 1:03d}", "relationType": "next"}
        for k in range(first, first + count)
    ]
    return _call(i, "create_relations", {"relations": relations})


READS = [
    ("search_nodes", {"query": "NOTE 1"}),
    ("search_nodes", {"query": "shared", "limit": 5, "offset": 3}),
    ("open_nodes", {"names": ["e005", "missing", "e001", "e030"]}),
    ("read_graph", {}),
    ("read_graph", {"offset": 10, "limit": 7}),
]

# Enough to compact: 30 entities and 29 relations over an empty image.
FILL = [_entities(1, 0, 30), _relations(2, 0, 29)]
# Then writes of every kind, some on what the compaction imaged, refusals included.
THEN = [
    _call(3, "add_observations", {"observations": [{"entityName": "e002", "contents": ["x"]}]}),
    _call(4, "delete_entities", {"entityNames": ["e003", "nobody"]}),
    _call(
        5,
        "delete_observations",
        {"deletions": [{"entityName": "e004", "observations": ["shared"]}]},
    ),
    _call(
        6,
        "delete_relations",
        {"relations": [{"from": "e010", "to": "e011", "relationType": "next"}]},
    ),
    _entities(7, 3, 2),  # e003 again (listed last now), e004 skipped
    _relations(8, 2, 2),  # e002 -> e003 again, e003 -> e004
    _call(
        9, "create_relations", {"relations": [{"from": "e001", "to": "ghost", "relationType": "r"}]}
    ),
    _call(10, "add_observations", {"observations": [{"entityName": "ghost", "contents": ["y"]}]}),
    *(_call(20 + i, tool, arguments) for i, (tool, arguments) in enumerate(READS)),
]
NEXT_SESSION = [_call(40 + i, tool, arguments) for i, (tool, arguments) in enumerate(READS)]


def _session(
    data_dir: Path, first: list[dict[str, Any]], then: list[dict[str, Any]], **env: str
) -> tuple[dict[int, Any], list[dict[str, Any]]]:
    """`first` sent; with a compaction threshold, its compaction awaited; then `then`: the
    responses by id and what the server logged."""
    params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO", **env)
    with logged_server(params) as server:
        server.send([INITIALIZE, INITIALIZED, *first])
        if "GRAPHMEM_GRAPH_IMAGE_COMPACT" in env:
            server.log.wait_for("graph_image_compacted")
        server.send(then)
        out = server.finish()
    answers = [json.loads(line) for line in out if b'"id":' in line[:30]]
    return {a["id"]: a for a in answers}, server.log.drained()


def _events(log: list[dict[str, Any]]) -> list[str]:
    return [str(entry.get("event")) for entry in log]


def test_writes_over_the_image_answer_as_a_restored_graph_and_compact_in_a_child(
    tmp_path: Path,
) -> None:
    over, log = _session(tmp_path / "a", FILL, THEN, GRAPHMEM_GRAPH_IMAGE_COMPACT=COMPACT_AT)
    plain, _ = _session(tmp_path / "b", FILL, THEN, GRAPHMEM_GRAPH_IMAGE="0")
    assert over == plain
    assert len(over) == 1 + len(FILL) + len(THEN)
    assert over[9]["result"].get("isError") and over[10]["result"].get("isError")
    assert "ghost" not in json.dumps(over[23])  # nothing of a refused write was kept
    events = _events(log)
    assert "graph_image_served" in events and "graph_image_compacted" in events
    # The graph was restored only for the stop, to leave a checkpoint and image behind.
    assert [e.get("asked") for e in log if e.get("event") == "graph_image_left"] == ["a stop"]
    assert events.index("graph_image_left") > events.index("graph_image_compacted")
    assert (tmp_path / "a" / IMAGE_FILE).is_file()

    # The next session serves every read from the image the stop left, restoring nothing.
    again, next_log = _session(tmp_path / "a", [], NEXT_SESSION)
    plain_again, _ = _session(tmp_path / "b", [], NEXT_SESSION, GRAPHMEM_GRAPH_IMAGE="0")
    assert again == plain_again
    assert "graph_loaded" not in _events(next_log)
    assert [again[40 + i]["result"] for i in range(len(READS))] == [
        over[20 + i]["result"] for i in range(len(READS))
    ]
