"""A real stdio server on a store with a graph image (projections.graph_image): it answers the
official reads from the image — over the wire, in both protocol eras — exactly as a server
without images answers them, restores the graph only when something else is asked (a write),
keeps the image current across sessions, and never serves from an image the log has moved
past, or a damaged one."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from projections.graph_image import IMAGE_FILE
from tests.e2e.logged_stdio import logged_server
from tests.e2e.support import call, legacy_session, modern_client, server_params, value
from tests.e2e.test_early_reads import INITIALIZE, INITIALIZED, _call, _session
from tests.e2e.test_early_search_index import _imported

READS: list[tuple[str, dict[str, Any]]] = [
    ("search_nodes", {"query": "uid00007"}),
    ("search_nodes", {"query": "UID0012"}),
    ("search_nodes", {"query": "COMMON", "limit": 3, "offset": 100}),
    ("search_nodes", {"query": "note", "entityType": "thing", "limit": 2}),
    ("search_nodes", {"query": "nothing like it"}),
    ("open_nodes", {"names": ["item-00002", "missing", "item-00001", "item-00002"]}),
    ("read_graph", {"offset": 2990, "limit": 4}),
    ("read_graph", {}),
]
WRITE = (
    "create_entities",
    {"entities": [{"name": "new one", "entityType": "thing", "observations": ["uid99999"]}]},
)
AFTER_WRITE = [("search_nodes", {"query": "uid99999"}), ("open_nodes", {"names": ["new one"]})]


def _messages(calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [
        INITIALIZE,
        INITIALIZED,
        *(_call(i, tool, arguments) for i, (tool, arguments) in enumerate(calls, start=1)),
    ]


def _answers(lines: list[bytes]) -> list[bytes]:
    """The responses, in order: a notification (the tools list changed by the start's schema
    registration) comes whenever that registration ends, with or without an image."""
    return [line for line in lines if b'"id":' in line[:30]]


def _events(log: list[dict[str, Any]]) -> list[str]:
    return [str(entry.get("event")) for entry in log]


def _left(log: list[dict[str, Any]]) -> list[Any]:
    return [entry.get("asked") for entry in log if entry.get("event") == "graph_image_left"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("image") / "data"
    _imported(data_dir)
    assert (data_dir / IMAGE_FILE).is_file()  # written by the import itself
    return data_dir


def _copy(store: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(store, target)
    return target


def test_the_reads_from_the_image_are_the_restored_graphs_answers_byte_for_byte(
    imported: Path, tmp_path: Path
) -> None:
    calls = [*READS, WRITE, *AFTER_WRITE]
    with_image = _copy(imported, tmp_path / "a")
    without = _copy(imported, tmp_path / "b")
    lines, log = _session(with_image, _messages(calls))
    expected, plain_log = _session(without, _messages(calls), GRAPHMEM_GRAPH_IMAGE="0")
    assert _answers(lines) == _answers(expected)
    assert len(_answers(lines)) == 1 + len(calls)
    events = _events(log)
    assert "graph_image_served" in events
    # Nothing restored for the reads, the start's schema registration or the write (it goes
    # over the image: actors.image_serving); only the stop restores, to save what it wrote.
    assert _left(log) == ["a stop"]
    assert "graph_loaded" not in events
    assert "graph_image_served" not in _events(plain_log)
    assert "graph_loaded" in _events(plain_log)


def test_a_session_that_only_reads_never_restores_and_the_next_one_serves_the_image_too(
    imported: Path, tmp_path: Path
) -> None:
    data_dir = _copy(imported, tmp_path)
    for _ in range(2):
        lines, log = _session(data_dir, _messages(READS))
        assert len(_answers(lines)) == 1 + len(READS)
        assert "graph_image_served" in _events(log)
        assert "graph_loaded" not in _events(log)
        assert _left(log) == []


def test_a_session_that_writes_leaves_an_image_the_next_start_serves(
    imported: Path, tmp_path: Path
) -> None:
    data_dir = _copy(imported, tmp_path)
    _session(data_dir, _messages([WRITE]))
    lines, log = _session(data_dir, _messages(AFTER_WRITE))
    assert "graph_loaded" not in _events(log)
    answers = _answers(lines)
    assert b"uid99999" in answers[1] and b"new one" in answers[2]


def test_an_image_the_log_moved_past_or_a_damaged_one_is_not_served(
    imported: Path, tmp_path: Path
) -> None:
    data_dir = _copy(imported, tmp_path)
    old_image = (data_dir / IMAGE_FILE).read_bytes()
    _session(data_dir, _messages([WRITE]), GRAPHMEM_GRAPH_IMAGE="0")  # the log moves on
    (data_dir / IMAGE_FILE).write_bytes(old_image)  # made before that write: stale
    lines, log = _session(data_dir, _messages(AFTER_WRITE))
    assert "graph_image_served" not in _events(log)
    assert b"uid99999" in _answers(lines)[1] and b"new one" in _answers(lines)[2]
    damaged = bytearray(old_image)
    damaged[len(damaged) // 2] ^= 0xFF
    (data_dir / IMAGE_FILE).write_bytes(bytes(damaged))
    lines, log = _session(data_dir, _messages(AFTER_WRITE))
    assert "graph_image_served" not in _events(log)
    assert b"uid99999" in _answers(lines)[1] and b"new one" in _answers(lines)[2]


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["handshake", "modern"])
async def test_both_eras_read_from_the_image_as_from_the_graph(
    imported: Path, tmp_path: Path, era: str
) -> None:
    answers: list[list[Any]] = []
    for env in ({}, {"GRAPHMEM_GRAPH_IMAGE": "0"}):
        data_dir = _copy(imported, tmp_path / str(len(answers)))
        read: list[Any] = []
        if era == "modern":
            async with modern_client(data_dir, **env) as client:
                read = [value(await call(client, tool, args)) for tool, args in READS]
        else:
            async with legacy_session(data_dir, GRAPHMEM_EARLY_HANDSHAKE="0", **env) as session:
                read = [value(await call(session, tool, args)) for tool, args in READS]
        answers.append(read)
    assert answers[0] == answers[1]
    assert [e["name"] for e in answers[0][0]["entities"]] == ["item-00007"]


def test_a_server_on_its_image_sees_what_another_process_wrote_meanwhile(
    imported: Path, tmp_path: Path
) -> None:
    """Two processes on one store: the one serving from its image restores the graph (and
    catches up) on its first read after the other wrote, instead of answering from the image."""
    data_dir = _copy(imported, tmp_path)
    params = server_params(data_dir, GRAPHMEM_LOG_LEVEL="INFO")
    with logged_server(params) as server:
        server.send(_messages(READS[:1]))
        server.log.wait_for("graph_image_served")
        if server.log.wait_for("tool_called").get("early"):
            server.log.wait_for("early_reads_done")  # the server itself answers from here on
        _session(data_dir, _messages([WRITE]))  # the other process, to its end
        server.send([_call(i, tool, args) for i, (tool, args) in enumerate(AFTER_WRITE, 10)])
        out = server.finish()
    answers = _answers(out)
    assert len(answers) == 2 + len(AFTER_WRITE)
    assert b"uid99999" in answers[-2] and b"new one" in answers[-1]
    entries = server.log.drained()
    left = [e.get("asked") for e in entries if e.get("event") == "graph_image_left"]
    assert len(left) == 1 and str(left[0]).startswith("AskReads")
