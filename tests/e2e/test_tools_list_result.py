"""graphmem.tools.tools_list writes, byte for byte, the `tools/list` result the SDK answers: for
every protocol version the SDK speaks and every tool profile, the `result` member of a real
stdio server's answer (its raw line) equals `tools_list_result` over the same store's
definitions (a ToolRunner on that store once the server is gone), so a front may answer
`tools/list` itself without a byte of difference (issue 21, item 2)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from graphmem.app import running
from graphmem.cypher import available as cypher_available
from graphmem.notifier import Notifier
from graphmem.tool_runner import ToolRunner
from graphmem.tools import catalog
from graphmem.tools.tools_list import tools_list_result
from tests.e2e.raw_stdio import RawServer
from tests.e2e.support import write_schema
from tests.tools.support import settings_for

VERSIONS = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)

# A user schema with a relationship, allowed values and an optional property, next to the
# shipped ones in force (person, project, ...): add_/update_/delete_ tools of each.
NPC = {
    "name": "add_npc",
    "description": "A non-player character",
    "properties": {
        "name": {"type": "string", "description": "The name", "required": True},
        "role": {
            "type": "string",
            "description": "Its role",
            "required": True,
            "enum": ["guard", "merchant"],
        },
        "age": {"type": "number", "description": "Its age in years"},
        "home": {
            "type": "string",
            "description": "Where it lives",
            "relationship": {"edgeType": "lives_in", "description": "its home"},
        },
    },
}

PROFILES = ("memory", "memory,mesh", "memory,schema", "graph", "graph without cypher")


def _environment(tmp_path: Path, profile: str) -> dict[str, str]:
    schemas = tmp_path / "schemas"
    schemas.mkdir()
    write_schema(schemas, "npc", NPC)
    env = {"GRAPHMEM_TOOLS": profile.split(maxsplit=1)[0], "GRAPHMEM_SCHEMAS_DIR": str(schemas)}
    if profile == "graph without cypher":
        # Another package named ladybug (as graphmem.cypher.available reads it): no extra.
        shadow = tmp_path / "no-cypher"
        (shadow / "ladybug-0.1.0.dist-info").mkdir(parents=True)
        (shadow / "ladybug-0.1.0.dist-info" / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: ladybug\nVersion: 0.1.0\n"
        )
        env["PYTHONPATH"] = str(shadow)
    return env


def _sdk_result(data_dir: Path, version: str, env: dict[str, str]) -> bytes:
    """The `result` member of the SDK's answer to `tools/list` at `version`, as written."""
    server = RawServer(data_dir, timeout=60.0, **env)
    try:
        if version in MODERN_PROTOCOL_VERSIONS:
            meta = {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "0"},
            }
            request_id = server.request("tools/list", {"_meta": meta})
        else:
            server.response(
                server.request(
                    "initialize",
                    {
                        "protocolVersion": version,
                        "capabilities": {},
                        "clientInfo": {"name": "raw-test", "version": "0"},
                    },
                )
            )
            server.notify("notifications/initialized")
            request_id = server.request("tools/list")
        line = server.read_line().rstrip(b"\n")
    finally:
        assert server.close() == 0
    head = b'{"jsonrpc":"2.0","id":%d,"result":' % request_id
    assert line.startswith(head) and line.endswith(b"}"), line[:300]
    return line[len(head) : -1]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("profile", PROFILES)
def test_the_tools_list_result_is_the_sdks_byte_for_byte(
    tmp_path: Path, profile: str, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if profile == "graph" and not cypher_available():
        pytest.skip("graph_cypher is listed only with the cypher extra installed")
    env = _environment(tmp_path, profile)
    data_dir = tmp_path / "data"
    written = _sdk_result(data_dir, version, env)
    if profile == "graph without cypher":
        monkeypatch.setattr(catalog, "cypher_available", lambda: False)
    settings = settings_for(data_dir, **{k: v for k, v in env.items() if k != "PYTHONPATH"})

    async def listed() -> bytes:
        with running(settings, serve_stale=True) as app:
            runner = ToolRunner(app, Notifier())
            definitions = await runner.definitions()
            names = [d.name for d in definitions]
            if profile == "memory,schema":
                assert {"add_npc", "update_npc", "delete_npc", "add_person"} <= set(names)
            if profile.startswith("graph"):
                assert ("graph_cypher" in names) == (profile == "graph")
            return tools_list_result(definitions, version, server_info=runner.server_info)

    ours = asyncio.run(listed())
    assert ours == written
    assert json.loads(ours)["tools"]  # a list was compared, not two empty answers
