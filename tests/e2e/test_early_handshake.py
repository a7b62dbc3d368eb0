"""`initialize` answered before the server loads (graphmem.early_handshake), over real pipes.

A restarted server answers from the SDK's own answer kept at its first start; whatever path
answers, the client reads the same bytes, and the session goes on as with the SDK alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.raw_stdio import RawServer


def _session(data_dir: Path, early: str = "1") -> tuple[list[bytes], RawServer]:
    """initialize, then a tools/list and a write and a search: every line the server wrote."""
    server = RawServer(data_dir, GRAPHMEM_EARLY_HANDSHAKE=early)
    try:
        server.initialize()
        server.response(server.request("tools/list"))
        entity = {"name": "Ada", "entityType": "person", "observations": ["wrote the notes"]}
        server.call_tool("create_entities", {"entities": [entity]})
        server.call_tool("search_nodes", {"query": "notes"})
    finally:
        assert server.close() == 0
    return list(server.stdout_lines), server


def _kept(data_dir: Path) -> list[Path]:
    """The kept initialize answers (tools/list answers are kept beside them)."""
    kept = (data_dir / "handshake").glob("*.json")
    return sorted(path for path in kept if not path.name.startswith("tools-list-"))


def test_a_restarted_server_answers_initialize_with_the_bytes_the_sdk_wrote_at_first(
    tmp_path: Path,
) -> None:
    first, _ = _session(tmp_path)
    kept = _kept(tmp_path)
    assert len(kept) == 1
    assert kept[0].read_bytes() + b"\n" == first[0]  # the SDK's own answer, kept whole
    second, server = _session(tmp_path)
    assert second[0] == first[0]
    assert second[1] == first[1]  # tools/list: the session was initialized all the same
    assert len(second) == len(first)
    assert all(b'"isError":true' not in line for line in second)
    assert not server.logged("early_handshake_stale")
    assert _kept(tmp_path) == kept


def test_a_kept_answer_that_differs_from_the_sdks_is_replaced_and_the_next_start_is_right(
    tmp_path: Path,
) -> None:
    first, _ = _session(tmp_path)
    (kept,) = _kept(tmp_path)
    answer = json.loads(kept.read_bytes())
    answer["result"]["serverInfo"]["version"] = "0.0.0-stale"
    stale = json.dumps(answer, separators=(",", ":")).encode()
    kept.write_bytes(stale)

    second, server = _session(tmp_path)
    # The early path answered (the client saw the kept bytes), the SDK's answer was not
    # written a second time, and the rest of the session was served.
    assert second[0] == stale + b"\n"
    assert len(second) == len(first)
    assert second[1] == first[1]
    assert server.logged("early_handshake_stale")
    assert kept.read_bytes() + b"\n" == first[0]

    third, _ = _session(tmp_path)
    assert third[0] == first[0]


def test_with_the_early_handshake_off_nothing_is_kept_and_the_wire_is_the_same(
    tmp_path: Path,
) -> None:
    off, _ = _session(tmp_path / "off", early="0")
    assert not (tmp_path / "off" / "handshake").exists()
    on, _ = _session(tmp_path / "on")
    again, _ = _session(tmp_path / "on")
    assert on == off
    assert again[:2] == off[:2]


@pytest.mark.parametrize(
    "first_line",
    [b"{not json", b'{"jsonrpc":"2.0","id":7,"method":"ping"}'],
    ids=["malformed", "ping"],
)
def test_a_first_line_that_is_not_initialize_is_answered_as_without_the_early_path(
    tmp_path: Path, first_line: bytes
) -> None:
    answers = []
    for name, early in (("off", "0"), ("on", "1")):
        server = RawServer(tmp_path / name, GRAPHMEM_EARLY_HANDSHAKE=early)
        try:
            server.send_bytes(first_line)
            answers.append(server.read_line())
            server.initialize()
        finally:
            assert server.close() == 0
    assert answers[0] == answers[1]
