"""`graphmem import` loads neither the server nor the MCP SDK.

An import into an empty store appends and checkpoints without a graph writer or a server;
importing graphmem.app (and through it the tool catalog and the MCP SDK) cost most of a
second of every import's start (issue 21, item 4), for nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.e2e.test_import_resume import env, memory_file

# What only `serve` (and the folding path of `import`, into a store that holds a graph) loads.
SERVER_ONLY = ("mcp", "graphmem.app", "graphmem.server", "graphmem.tools.catalog")

# The real entry point, in a process that writes the modules it loaded when it ends (a forked
# child ends with os._exit: only the command's own process writes).
IMPORT = """
import atexit, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = ["graphmem", "--data-dir", sys.argv[2], "import", sys.argv[3]]
from graphmem.cli import main
sys.exit(main())
"""


def test_an_import_into_an_empty_store_loads_neither_the_server_nor_the_mcp_sdk(
    tmp_path: Path,
) -> None:
    source = memory_file(tmp_path / "memory.jsonl")
    modules_file = tmp_path / "modules.txt"
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, str(modules_file), str(tmp_path / "data"), str(source)],
        capture_output=True,
        env=env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"entities:     6000 created" in done.stdout
    loaded = set(modules_file.read_text().split())
    assert "graphmem.plain_import" in loaded  # the bulk path did run
    assert sorted(loaded.intersection(SERVER_ONLY)) == []
