"""The tool layer and the tool runner run without the MCP SDK: a process that starts a store,
builds a ToolRunner for a profile, lists its tools (the `tools/list` result of every version
too) and calls them has loaded none of `mcp`, `mcp_types`, `pydantic` (issue 21 item 2: the
SDK is ~30 MiB of a stdio server's RSS, so a front that serves a session without it must be
able to run every tool without it)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.support import write_schema

SDK_MODULES = ("mcp", "mcp_types", "pydantic", "pydantic_core")

# A real store, a real runner: the profile's definitions after the schema refresh, a write
# (which notifies, with no SDK session to tell) and a read, then the modules loaded.
RUN = """
import asyncio, json, pkgutil, sys
from pathlib import Path

import graphmem.tools
for module in pkgutil.iter_modules(graphmem.tools.__path__, "graphmem.tools."):
    __import__(module.name)
import graphmem.app, graphmem.notifier, graphmem.tool_runner, graphmem.tools.catalog
import graphmem.tools.graph_family
from eventstore.events import Cause
from graphmem.app import running
from graphmem.config import Settings
from graphmem.notifier import Notifier
from graphmem.tool_runner import ToolRunner
from graphmem.tools.catalog import ToolCatalog
from graphmem.protocol import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from graphmem.tools.tools_list import tools_list_result

data_dir, schemas_dir, profile, call, arguments, *sdk = sys.argv[1:]
settings = Settings.from_env({
    "GRAPHMEM_DIR": data_dir, "GRAPHMEM_SCHEMAS_DIR": schemas_dir, "GRAPHMEM_TOOLS": profile,
})
assert ToolCatalog(profile.split(",")).tools()

async def serve(runner):
    definitions = await runner.definitions()
    for version in (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS):
        tools_list_result(definitions, version, server_info=runner.server_info)
    cause = Cause(tool=call, client="test", session=None)
    outcome = await runner.call_tool(call, json.loads(arguments), cause)
    missing = await runner.call_tool("no_such_tool", {}, cause)
    problem = outcome.texts if outcome.is_error else None
    return [d.name for d in definitions], problem, missing.is_error

with running(settings, serve_stale=True, embed=True) as app:
    names, problem, unknown_failed = asyncio.run(serve(ToolRunner(app, Notifier())))
print(json.dumps({
    "names": names,
    "problem": problem,
    "unknown_failed": unknown_failed,
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in sdk),
}))
"""

NPC = {
    "name": "add_npc",
    "description": "A non-player character",
    "properties": {
        "name": {"type": "string", "description": "The name", "required": True},
        "role": {"type": "string", "description": "Its role", "required": True},
    },
}

PROFILES = [
    (
        "memory",
        "create_entities",
        {"entities": [{"name": "A", "entityType": "t", "observations": []}]},
    ),
    ("memory,mesh", "add_nodes", {"nodes": [{"name": "A", "nodeType": "t", "metadata": []}]}),
    ("memory,schema", "add_npc", {"npc": {"name": "A", "role": "guard"}}),
    (
        "graph",
        "graph_relate",
        {
            "from_name": "A",
            "from_type": "person",
            "to_name": "B",
            "to_type": "person",
            "relation": "KNOWS",
        },
    ),
]


@pytest.mark.parametrize(("profile", "call", "arguments"), PROFILES, ids=[p[0] for p in PROFILES])
def test_the_runner_lists_and_runs_a_profiles_tools_without_loading_the_sdk(
    tmp_path: Path, profile: str, call: str, arguments: dict[str, object]
) -> None:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    write_schema(schemas, "npc", NPC)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            RUN,
            str(tmp_path / "data"),
            str(schemas),
            profile,
            call,
            json.dumps(arguments),
            *SDK_MODULES,
        ],
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert call in report["names"]  # the schema profile's add_npc: refreshed from the schemas
    assert report["problem"] is None
    assert report["unknown_failed"] is True
    assert report["loaded"] == []
