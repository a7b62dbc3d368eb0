"""What a `graphmem` process loads of its libraries: the MCP SDK's modules without its two
packages' eager re-exports, and structlog without rich.

Every host spawns a stdio server per session, so what the process imports and never uses is
RSS paid per session (issue 21, item 2):

- `import mcp.server.lowlevel` first runs `mcp/__init__.py` and `mcp/server/__init__.py`. They
  only re-export names, but to do so they import the SDK's client (httpx2, cryptography's
  Rust library and OpenSSL) and its `MCPServer` framework: ~12 MiB and ~120 modules that a
  stdio server never touches (graphmem imports the submodules it uses by their full names).
  `lean_sdk_packages` (called by `graphmem serve`) registers those two packages without
  running their `__init__`; the first read of a name one of them re-exports
  (`mcp.ClientSession`, `from mcp.server import MCPServer`) runs that `__init__` then, so
  every spelling keeps working. It is done only when the `__init__` holds nothing but
  imports and `__all__` (checked on the installed file each time): an SDK whose `__init__`
  does anything else is imported as it ships.
- structlog imports rich (and pygments) when it is installed, for its console renderer and
  its locals' reprs in tracebacks; graphmem renders JSON with `repr` locals, as an install
  without rich does (`graphmem.logs`). `structlog_without_rich` (called by `graphmem.cli.main`
  before anything imports structlog) imports structlog while rich is hidden, then unhides
  it: ~4 MiB in a development install, nothing else changes.
- sse_starlette (imported by the SDK's lowlevel server) hooks uvicorn's shutdown if uvicorn
  is installed, loading it: a stdio server imports it with uvicorn hidden
  (`sse_without_uvicorn`, called by `graphmem serve` without `--http`).

None of this patches the SDK's or structlog's code: the modules are the same objects, loaded
later or not at all. tests/graphmem/test_lean_imports.py fails if the SDK's layout changes.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "LEAN_PACKAGES",
    "lean_sdk_packages",
    "only_imports",
    "structlog_without_rich",
]

# Parents first: `mcp.server`'s spec is found through `mcp`'s path.
LEAN_PACKAGES = ("mcp", "mcp.server")

_completing = threading.RLock()


def only_imports(init_file: Path) -> bool:
    """Whether a package's `__init__` does nothing but import names and set `__all__` (and
    so may run later, when a name it binds is first read, with the same result)."""
    try:
        tree = ast.parse(init_file.read_bytes(), filename=str(init_file))
    except (OSError, SyntaxError, ValueError):
        return False
    for statement in tree.body:
        if isinstance(statement, ast.Import | ast.ImportFrom):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # the docstring
        if isinstance(statement, ast.Assign | ast.AnnAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if all(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
        return False
    return True


def lean_sdk_packages() -> list[str]:
    """Register each of LEAN_PACKAGES not yet imported without running its `__init__`;
    returns those registered so."""
    registered = []
    for name in LEAN_PACKAGES:
        if name in sys.modules:
            continue
        module = _lean_package(name)
        if module is None:
            break  # a child is found through its parent: leave the rest to the import system
        registered.append(name)
    return registered


def _lean_package(name: str) -> ModuleType | None:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.origin is None:
        return None
    if spec.submodule_search_locations is None or not only_imports(Path(spec.origin)):
        return None
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    done = False

    def complete() -> None:
        nonlocal done
        with _completing:
            if not done:
                done = True
                del module.__dict__["__getattr__"]
                loader.exec_module(module)

    def __getattr__(attr: str) -> Any:  # PEP 562: the module's own
        # A submodule is the import system's to load (`from mcp import types` asks for it
        # here first); any other name is one the `__init__` binds.
        dunder = attr.startswith("__") and attr != "__all__"
        if dunder or importlib.util.find_spec(f"{name}.{attr}") is not None:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        complete()
        return getattr(module, attr)

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


@contextmanager
def _hidden(*names: str) -> Iterator[None]:
    """Make `import name` fail (as if not installed) inside the block, for those not loaded."""
    absent = [name for name in names if name not in sys.modules]
    for name in absent:
        # None is the import system's own "not installed" mark.
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in absent:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def _import_without(module: str, hidden: str) -> None:
    """Import `module` with `hidden` made absent, when neither is loaded yet; if `module`
    turns out to need it, nothing is kept and a later import loads both as shipped."""
    if module in sys.modules or hidden in sys.modules:
        return
    try:
        with _hidden(hidden):
            importlib.import_module(module)
    except ImportError:
        pass


def structlog_without_rich() -> None:
    """Import structlog (its dev and tracebacks modules look for rich once, at import) with
    rich hidden; a process that loaded structlog already keeps what it has."""
    _import_without("structlog", "rich")


def sse_without_uvicorn() -> None:
    """For a stdio server, which runs no uvicorn: import sse_starlette (which the SDK's
    streamable HTTP module imports at the top) with uvicorn hidden. sse_starlette hooks
    uvicorn's shutdown when uvicorn is installed, which imports uvicorn, click and
    watchfiles' reloader: ~3 MiB and ~50 modules. `serve --http` does not call this."""
    _import_without("sse_starlette.sse", "uvicorn")
