"""Which starts answer `initialize` early, and what the early path loads before answering."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from graphmem import early_handshake, instructions, server, tool_runner
from graphmem.early_handshake import Handshake, KeptAnswer, _fingerprint, _stdio_serve_data_dir


@pytest.mark.parametrize(
    ("argv", "data_dir"),
    [
        ([], ""),
        (["serve"], ""),
        (["--data-dir", "/d", "serve"], "/d"),
        (["--data-dir=/d"], "/d"),
        (["serve", "--tools", "memory,graph"], ""),
        (["serve", "--replicate=nats://127.0.0.1:4222"], ""),
    ],
)
def test_a_stdio_serve_takes_the_early_path_with_its_data_dir(
    argv: list[str], data_dir: str
) -> None:
    assert _stdio_serve_data_dir(argv) == data_dir


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--http"],
        ["serve", "--http", "127.0.0.1:9000"],
        ["--help"],
        ["import", "graph.jsonl"],
        ["serve", "serve"],
        ["--data-dir"],
    ],
)
def test_anything_but_a_stdio_serve_takes_the_ordinary_path(argv: list[str]) -> None:
    assert _stdio_serve_data_dir(argv) is None


def test_the_command_and_the_early_path_load_neither_the_sdk_nor_the_store() -> None:
    code = (
        "import sys; import graphmem.cli, graphmem.early_handshake; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'lmdb', 'pykka', 'actors', 'eventstore', 'projections', 'structlog')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_only_the_sdks_answer_to_the_early_initialize_is_held_back_once() -> None:
    # Whichever spelling of the id the SDK echoes, its answer is not written a second time.
    spelled = Handshake(b"")
    spelled.owe("1", KeptAnswer(None))
    assert spelled.owns(1)
    handshake = Handshake(b"")
    handshake.owe(1, KeptAnswer(None, answered=b"kept"))
    assert not handshake.owns(2)
    assert handshake.owns(1)
    assert handshake.settle(1, b"kept", success=True) == (None, None)
    assert not handshake.owns(1)  # a client may reuse the id later: that answer goes out


def test_the_kept_answers_name_is_the_same_for_every_data_dir_and_not_for_other_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A new store finds the answers kept for another in the user's cache: only the data dir
    # is left out of the name, never a setting that changes an answer.
    line = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
    monkeypatch.setenv("GRAPHMEM_DIR", "/stores/a")
    first = _fingerprint(["serve"], line)
    monkeypatch.setenv("GRAPHMEM_DIR", "/stores/b")
    assert _fingerprint(["serve"], line) == first
    assert _fingerprint(["--data-dir", "/stores/c", "serve"], line) == first
    assert _fingerprint(["--data-dir=/stores/d", "serve"], line) == first
    assert _fingerprint(["serve", "--tools", "memory"], line) != first
    monkeypatch.setenv("GRAPHMEM_TOOLS", "memory")
    assert _fingerprint(["serve"], line) != first


def test_an_edit_to_where_the_initialize_answer_is_written_changes_the_kept_answers_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The capabilities (graphmem.server), the identity (graphmem.tool_runner) and the
    # instructions (graphmem.instructions): an edited checkout never gets a stale answer.
    written_from = {Path(m.__file__ or "") for m in (server, tool_runner, instructions)}
    assert written_from <= set(early_handshake._SERVER_MODULES)
    copies = [tmp_path / path.name for path in early_handshake._SERVER_MODULES]
    for copy in copies:
        copy.write_text("x")
    monkeypatch.setattr(early_handshake, "_SERVER_MODULES", tuple(copies))
    line = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}'
    first = _fingerprint(["serve"], line)
    for copy in copies:
        copy.write_text(copy.read_text() + "x")  # one more byte: another size
        edited = _fingerprint(["serve"], line)
        assert edited != first
        first = edited
