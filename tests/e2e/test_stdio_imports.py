"""A stdio `graphmem serve` loads nothing that only HTTP or another command needs.

Every host spawns a stdio server per session: the HTTP service (uvicorn's protocol, the guards,
OAuth with PyJWT and cryptography's x509), `doctor`'s checks and the progress bar of `import`
and `rebuild` cost start-up time and tens of MB of RSS it never uses (issue 21, item 2).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    assert "graphmem.server" in loaded  # the server did load
    assert sorted(loaded.intersection(HTTP_AND_COMMAND_ONLY)) == []


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
    assert "graphmem.server" in loaded
    assert sorted(loaded.intersection(GRAPH_FAMILY_ONLY)) == []
