"""A served process's heap held for its start-up, then settled (projections.heap), over a real
stdio server: the early reads' path and the plain one each settle once, after the graph is
loaded and its search index warm; `graphmem import` leaves glibc's own behaviour alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.logged_stdio import WAIT, logged_server
from tests.e2e.support import server_params
from tests.e2e.test_early_reads import INITIALIZE, INITIALIZED, _call, _session
from tests.e2e.test_early_search_index import _imported


def _settled_in_session(data_dir: Path, **env: str) -> list[str]:
    """A server spawned on `data_dir`, asked one search: the events it logged up to the
    heap's settling, then its clean exit once stdin closes."""
    # The graph restored at start (no image served): the phases of a restore are the point.
    params = server_params(
        data_dir, GRAPHMEM_LOG_LEVEL="INFO", **{"GRAPHMEM_GRAPH_IMAGE": "0", **env}
    )
    with logged_server(params) as server:
        server.send([INITIALIZE, INITIALIZED, _call(1, "search_nodes", {"query": "uid00007"})])
        server.log.wait_for("heap_settled")
        answers = server.finish()
    found = json.loads(answers[-1])["result"]["structuredContent"]["entities"]
    assert [entity["name"] for entity in found] == ["item-00007"]
    return server.log.events()


def test_the_early_reads_path_settles_the_heap_once_the_adopted_index_is_warm(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    _imported(
        data_dir, GRAPHMEM_GRAPH_IMAGE="0"
    )  # keeps the initialize answer: this start reads early
    events = _settled_in_session(data_dir)
    assert "search_handed_over" in events
    assert events.index("graph_loaded") < events.index("heap_settled")
    assert events.index("search_warmed") < events.index("heap_settled")
    assert events.count("heap_settled") == 1


def test_a_server_without_the_early_reads_settles_the_heap_after_its_own_warm_up(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    _imported(data_dir)
    events = _settled_in_session(data_dir, GRAPHMEM_EARLY_HANDSHAKE="0")
    assert "search_handed_over" not in events
    assert events.index("search_warmed") < events.index("heap_settled")


def test_an_empty_store_settles_as_soon_as_it_is_loaded(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _session(data_dir, [INITIALIZE])  # an empty store, its initialize answer kept
    params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO", GRAPHMEM_GRAPH_IMAGE="0")
    done = subprocess.run(
        [sys.executable, *params.args],
        input=json.dumps(INITIALIZE).encode() + b"\n",
        capture_output=True,
        env=params.env,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    events = [
        json.loads(line).get("event") for line in done.stderr.splitlines() if line[:1] == b"{"
    ]
    # Settled once its (empty) index is warm, not left held for good.
    assert events.count("heap_settled") == 1
    assert events.index("search_warmed") < events.index("heap_settled")


def test_a_server_serving_from_the_image_holds_its_heap_until_it_restores_the_graph(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    _imported(data_dir)
    reads = [INITIALIZE, INITIALIZED, _call(1, "search_nodes", {"query": "uid00007"})]
    _, log = _session(data_dir, reads)
    events = [str(entry.get("event")) for entry in log]
    assert "graph_image_served" in events
    assert "heap_settled" not in events  # nothing loaded: nothing to settle
    # Not one of the official writes, which go over the image: this one restores the graph.
    write = _call(
        2, "update_entities", {"entities": [{"name": "item-00001", "newEntityType": "t"}]}
    )
    _, log = _session(data_dir, [*reads, write])
    events = [str(entry.get("event")) for entry in log]
    assert events.count("heap_settled") == 1
    assert events.index("graph_image_left") < events.index("heap_settled")


@pytest.mark.parametrize("command", ["import", "rebuild"])
def test_commands_other_than_serve_keep_glibcs_own_heap(tmp_path: Path, command: str) -> None:
    data_dir = tmp_path / "data"
    _imported(data_dir)
    params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO")
    argv = [sys.executable, "-m", "graphmem", "--data-dir", str(data_dir), command]
    if command == "import":
        argv.append(str(data_dir.parent / "graph.jsonl"))
    done = subprocess.run(argv, capture_output=True, env=params.env, timeout=WAIT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"heap_settled" not in done.stderr
