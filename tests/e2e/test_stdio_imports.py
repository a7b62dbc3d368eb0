"""A stdio `graphmem serve` loads nothing that only HTTP or another command needs, nor the MCP
SDK while its session does not need it.

Every host spawns a stdio server per session: the HTTP service (uvicorn's protocol, the guards,
OAuth with PyJWT and cryptography's x509), `doctor`'s checks and the progress bar of `import`
and `rebuild` cost start-up time and tens of MB of RSS it never uses (issue 21, item 2); so do
the SDK's pydantic models and server (~30 MiB) for a handshake-era session that only
initializes, lists its tools and calls them (graphmem.wire.front).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.e2e.support import server_params

# Loaded only by `serve --http` (its /metrics too), `doctor`, `import` and `rebuild`.
HTTP_AND_COMMAND_ONLY = (
    "graphmem.http_transport",
    "graphmem.http_service",
    "graphmem.http_service.oauth",
    "graphmem.cli.diagnosis",
    "jwt",
    "cryptography.x509",
    "uvicorn.protocols.http.h11_impl",
    "tqdm",
    "prometheus_client",
    # The SDK's client and MCPServer framework, loaded only by its packages' re-exports
    # (graphmem.lean_imports), and structlog's optional rich console (~16 MiB together).
    "mcp.client",
    "mcp.server.mcpserver",
    "httpx2",
    "cryptography",
    "rich",
    "pygments",
    # sse_starlette's hook on uvicorn's shutdown, made only where uvicorn runs (~3 MiB).
    "uvicorn",
    "click",
)

# The SDK's types, models and server (and graphmem's glue over them): loaded only when the
# session needs the SDK (graphmem.wire.front). `mcp` and `mcp.server` themselves are the bare
# packages graphmem.lean_imports registers.
SDK_ONLY = (
    "mcp.types",
    "mcp_types",
    "pydantic",
    "pydantic_core",
    "mcp.server.lowlevel",
    "mcp.shared.message",
    "starlette",
    "sse_starlette",
    "graphmem.server",
)

# The real entry point, in a process that writes the modules it loaded when it ends.
SERVE = """
import atexit, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = ["graphmem", "serve"]
from graphmem.cli import main
sys.exit(main())
"""


def test_a_stdio_server_answers_without_loading_the_http_stack_or_other_commands(
    tmp_path: Path,
) -> None:
    params = server_params(tmp_path / "data", GRAPHMEM_EARLY_HANDSHAKE="0")
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "imports", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search_nodes", "arguments": {"query": "x"}},
        },
    ]
    modules_file = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", SERVE, str(modules_file)],
        input=b"".join(json.dumps(r).encode() + b"\n" for r in requests),
        capture_output=True,
        env=params.env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [0, 1, 2]
    assert "error" not in answers[2] and not answers[2]["result"].get("isError")
    loaded = set(modules_file.read_text().split())
    assert "graphmem.tool_runner" in loaded  # the server did load
    assert sorted(loaded.intersection(HTTP_AND_COMMAND_ONLY)) == []
    assert sorted(loaded.intersection(SDK_ONLY)) == []


# Loaded only by a server that serves the graph family (its columns, embeddings, suggestions,
# fuzzy names): numpy alone is ~15 MiB and 0.2-0.4 s of every start-up.
GRAPH_FAMILY_ONLY = (
    "numpy",
    "graphmem.embedding.service",
    "graphmem.embedding.embedders",
    "rapidfuzz",  # ~4 MiB
)


def test_a_memory_and_schema_server_writes_and_searches_without_loading_numpy(
    tmp_path: Path,
) -> None:
    params = server_params(tmp_path / "data")
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote notes"]}
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "imports", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "create_entities", "arguments": {"entities": [entity]}},
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "search_nodes", "arguments": {"query": "notes"}},
        },
    ]
    modules_file = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", SERVE, str(modules_file)],
        input=b"".join(json.dumps(r).encode() + b"\n" for r in requests),
        capture_output=True,
        env=params.env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert answers[3]["result"]["structuredContent"]["entities"][0]["name"] == "Ada"
    loaded = set(modules_file.read_text().split())
    assert "graphmem.tool_runner" in loaded
    assert sorted(loaded.intersection(GRAPH_FAMILY_ONLY)) == []


def serving_params(tmp_path: Path, **env: str) -> tuple[StdioServerParameters, Path]:
    """The real entry point for an SDK client, and where it writes the modules it loaded."""
    params = server_params(tmp_path / "data", **env)
    modules_file = tmp_path / "modules.txt"
    return params.model_copy(update={"args": ["-c", SERVE, str(modules_file)]}), modules_file


@pytest.mark.anyio
async def test_the_sdk_clients_session_is_served_without_loading_the_sdk(tmp_path: Path) -> None:
    params, modules_file = serving_params(tmp_path)
    entity = {"name": "Ada", "entityType": "person", "observations": ["wrote notes"]}
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        assert "create_entities" in {tool.name for tool in listed.tools}
        await session.send_ping()
        created = await session.call_tool("create_entities", {"entities": [entity]})
        assert not created.is_error
        found = await session.call_tool("search_nodes", {"query": "notes"})
        assert found.structured_content is not None
        assert found.structured_content["entities"][0]["name"] == "Ada"
    loaded = await anyio.to_thread.run_sync(_read_modules, modules_file)
    assert "graphmem.tool_runner" in loaded
    assert sorted(loaded.intersection(SDK_ONLY)) == []


@pytest.mark.anyio
async def test_a_resource_read_loads_the_sdk_and_the_session_goes_on(tmp_path: Path) -> None:
    params, modules_file = serving_params(tmp_path)
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.call_tool("read_graph", {})
        resources = await session.list_resources()  # answered without the SDK too
        assert [str(r.uri) for r in resources.resources] == ["memory://knowledge-graph"]
        contents = await session.read_resource("memory://knowledge-graph")
        assert len(contents.contents) == 1
        read_back = await session.call_tool("read_graph", {})
        assert read_back.structured_content == {"entities": [], "relations": []}
    loaded = await anyio.to_thread.run_sync(_read_modules, modules_file)
    assert {"graphmem.server", "mcp_types", "pydantic"} <= loaded


@pytest.mark.anyio
async def test_a_modern_era_client_has_the_sdk_loaded_at_its_first_request(
    tmp_path: Path,
) -> None:
    params, modules_file = serving_params(tmp_path)
    async with Client(params) as client:
        listed = await client.list_tools()
        assert "read_graph" in {tool.name for tool in listed.tools}
        await client.call_tool("read_graph", {})
    loaded = await anyio.to_thread.run_sync(_read_modules, modules_file)
    assert {"graphmem.server", "mcp_types", "pydantic"} <= loaded


def _read_modules(modules_file: Path) -> set[str]:
    """What the server wrote as it ended: the client's context waits for the process to exit
    (the SDK's stdio_client), so the file is there, or the server failed."""
    return set(modules_file.read_text().split())
