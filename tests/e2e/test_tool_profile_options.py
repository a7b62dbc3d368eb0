"""Tool profiles as the process takes them: `serve --tools` overrides GRAPHMEM_TOOLS, and an
unknown family in either stops the server with a message; the profile and the schema folder
are read from the environment at start. What each profile serves: tests/tools'
test_tool_profiles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from graphmem.tools.catalog import MESH_TOOL_NAMES
from tests.e2e.support import call, legacy_session, server_params, text

pytestmark = pytest.mark.anyio

EXIT_TIMEOUT = 60.0


async def test_the_tools_option_overrides_the_environment(tmp_path: Path) -> None:
    params = server_params(tmp_path, tools="memory")
    params = params.model_copy(update={"args": [*params.args, "--tools", "mesh"]})
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        names = [t.name for t in (await s.list_tools()).tools]
    assert sorted(names) == sorted(MESH_TOOL_NAMES)


@pytest.mark.parametrize(
    ("extra_args", "tools", "named"),
    [([], "memory,graphs", "GRAPHMEM_TOOLS"), (["--tools", "everything"], None, "--tools")],
)
def test_an_unknown_tool_family_stops_the_server_with_a_message(
    tmp_path: Path, extra_args: list[str], tools: str | None, named: str
) -> None:
    params = server_params(tmp_path, tools=tools)
    done = subprocess.run(
        [sys.executable, *params.args, *extra_args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=params.env,
        timeout=EXIT_TIMEOUT,
        check=False,
    )
    assert done.returncode == 2
    message = done.stderr.decode()
    assert named in message and "memory, schema, mesh" in message
    assert done.stdout == b""


async def test_a_served_process_takes_its_profile_and_schema_folder_from_the_environment(
    tmp_path: Path, seed_schemas: Path
) -> None:
    async with legacy_session(
        tmp_path / "data", tools="memory,schema", GRAPHMEM_SCHEMAS_DIR=str(seed_schemas)
    ) as s:
        names = {t.name for t in (await s.list_tools()).tools}
        added = await call(
            s, "add_npc", {"npc": {"name": "Gandalf", "role": "Wizard", "status": "Active"}}
        )
    assert {"create_entities", "add_npc", "add_location", "add_person"} <= names
    assert "add_nodes" not in names
    assert not added.is_error, text(added)
