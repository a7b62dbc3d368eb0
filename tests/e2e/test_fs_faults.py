"""A read-only data dir and a full disk are reported in one line with what to do, and lose
nothing: no traceback from any command, an isError tool result for a write that did not fit."""

from __future__ import annotations

import json
from pathlib import Path

import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.damage import write_people
from tests.e2e.cli_support import fault_line, graphmem
from tests.e2e.fs_faults import data_file_size, file_size_limit, limited_command, read_only
from tests.e2e.support import CALL_TIMEOUT, server_params

pytestmark = pytest.mark.slow

READ_ONLY_COMMANDS = [("serve",), ("export",), ("stats",), ("log",), ("history", "person1")]


@pytest.mark.parametrize("args", READ_ONLY_COMMANDS, ids=[" ".join(a) for a in READ_ONLY_COMMANDS])
def test_a_read_only_data_dir_is_reported_in_one_line(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    data_dir = tmp_path / "data"
    write_people(data_dir, 3)
    wrapper = read_only(data_dir)

    done = graphmem(data_dir, *args, stdin=b"", wrapper=wrapper)

    line = fault_line(done)
    assert f"the data dir {data_dir} is read-only" in line, line
    assert "make it writable or point GRAPHMEM_DIR elsewhere" in line, line


def test_a_data_dir_under_a_read_only_parent_is_reported_in_one_line(tmp_path: Path) -> None:
    parent = tmp_path / "parent"
    parent.mkdir()
    wrapper = read_only(parent)

    line = fault_line(graphmem(parent / "data", "export", wrapper=wrapper))

    assert "is read-only" in line and "GRAPHMEM_DIR" in line, line


def _memory_file(path: Path, count: int) -> Path:
    records = [
        {"type": "entity", "name": f"e{i}", "entityType": "thing", "observations": ["x" * 300]}
        for i in range(count)
    ]
    path.write_text("\n".join(json.dumps(r) for r in records))
    return path


def test_an_import_that_fills_the_disk_stops_in_one_line_and_a_rerun_completes_it(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    write_people(data_dir, 1)
    source = _memory_file(tmp_path / "memory.jsonl", 2000)  # ~700 KB of observations
    limit = data_file_size(data_dir) + 64 * 1024

    done = graphmem(
        data_dir, "import", str(source), "--batch-size", "100", preexec_fn=file_size_limit(limit)
    )

    line = fault_line(done)
    assert "the disk is full or a file size limit was reached" in line, line
    assert "nothing was written" in line and "again" in line, line
    # With room again, the same import adds exactly what is missing: nothing was lost.
    assert graphmem(data_dir, "import", str(source)).returncode == 0
    exported = graphmem(data_dir, "export")
    assert exported.returncode == 0, exported.stderr
    names = {json.loads(line)["name"] for line in exported.stdout.splitlines()}
    assert {f"e{i}" for i in range(2000)} | {"person0"} <= names
    assert len(names) == 2001


@pytest.mark.anyio
async def test_a_tool_call_that_does_not_fit_on_the_disk_is_an_error_that_says_so(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    write_people(data_dir, 1)
    limit = data_file_size(data_dir) + 64 * 1024
    plain = server_params(data_dir)
    command = limited_command(limit, "serve")
    params = StdioServerParameters(command=command[0], args=command[1:], env=plain.env)
    big = [{"name": "Big", "entityType": "thing", "observations": [c * 90_000 for c in "abcde"]}]
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT) as session,
        ):
            await session.initialize()
            result = await session.call_tool("create_entities", {"entities": big})
            assert result.is_error, result
            text = result.content[0]
            assert isinstance(text, types.TextContent)
            assert "the disk is full" in text.text, text.text
            assert "free space" in text.text and "nothing was written" in text.text
            graph = await session.call_tool("read_graph", {})
            assert not graph.is_error
            assert graph.structured_content is not None
            names = [e["name"] for e in graph.structured_content["entities"]]
            assert names == ["person0"]
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()
