"""Where the SDK's `tools/list` answer is kept, so a restarted server can write it early.

Every host sends `tools/list` right after `initialize`, before its first call, so its answer is
on the path to the first answer. The list is a function of what the initialize answer depends
on (graphmem.early_handshake's fingerprint: argv, every `GRAPHMEM_*` variable, the graphmem
and `mcp` versions, whether graph_cypher is installed) and of three more things: the request
line itself (its id, its parameters), the schema files in force for the schema family's
generated tools (each folder's `*.schema.json` names, sizes and mtimes), and the tool
modules of an edited checkout (graphmem/tools/*.py, server.py, tool_runner.py: sizes, mtimes).
All of them are in the file's name, so a changed one finds no kept answer and the SDK answers.

What no name can see is a schema another process registers in the shared log from folders
this one does not load: the early answer is then the list as this process's files make it.
That case is caught by the comparison of the early answer with the SDK's (which goes on the
kept file and tells the client `notifications/tools/list_changed`, so it lists again).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphmem.config import Settings

__all__ = ["tools_list_file"]

_SCHEMA_SUFFIX = ".schema.json"  # actors.schema_files.SUFFIX, not imported: it loads the actors
_PACKAGE = Path(__file__).resolve().parent
_MODULES = (_PACKAGE / "server.py", _PACKAGE / "tool_runner.py", _PACKAGE / "tools")


def tools_list_file(initialize_file: Path, settings: Settings, line: bytes) -> Path:
    """The kept answer's file for the `tools/list` request `line`, in a session whose
    initialize answer is kept in `initialize_file` (named by its fingerprint)."""
    parts = [
        "tools-list-v1",
        initialize_file.stem,
        json.dumps(list(settings.tools)),
        *(_folder_state(folder, _SCHEMA_SUFFIX) for folder in settings.schema_folders),
        *(_folder_state(folder, _SCHEMA_SUFFIX) for folder in settings.retired_schema_folders),
        *(_folder_state(path, ".py") for path in _MODULES),
    ]
    digest = hashlib.sha256("\0".join(parts).encode())
    digest.update(b"\0" + line.rstrip(b"\r\n"))
    return initialize_file.parent / f"tools-list-{digest.hexdigest()[:32]}.json"


def _folder_state(path: Path, suffix: str) -> str:
    """A file's, or a folder's files', names, sizes and mtimes ("-" for what is missing)."""
    try:
        if not path.is_dir():
            return _file_state(path)
        names = sorted(entry.name for entry in os.scandir(path) if entry.name.endswith(suffix))
    except OSError:
        return f"{path}:-"
    return "|".join([str(path), *(_file_state(path / name) for name in names)])


def _file_state(path: Path) -> str:
    try:
        found = path.stat()
    except OSError:
        return f"{path}:-"
    return f"{path.name}:{found.st_size}:{found.st_mtime_ns}"
