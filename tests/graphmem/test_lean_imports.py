"""The SDK's packages registered without their eager re-exports, and structlog without rich
(graphmem.lean_imports): nothing a name or an import resolves to changes, and the installed
SDK's layout is what the cut relies on. Each case runs in a fresh interpreter: this one has
loaded the SDK whole already."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphmem.lean_imports import LEAN_PACKAGES, only_imports


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("package", LEAN_PACKAGES)
def test_the_installed_sdk_packages_init_holds_only_imports_so_it_may_run_late(
    package: str,
) -> None:
    # If an SDK release puts anything else in these files, graphmem imports them as shipped
    # (heavier, still right): this fails so the cut is looked at again.
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None
    assert spec.submodule_search_locations is not None
    assert only_imports(Path(spec.origin)), f"{spec.origin} now does more than re-export"


def test_a_server_imported_lean_loads_neither_the_sdk_client_nor_its_framework() -> None:
    out = _run(
        """
        import sys
        from graphmem import lean_imports
        assert lean_imports.lean_sdk_packages() == ["mcp", "mcp.server"]
        import graphmem.server, graphmem.app, graphmem.cli.entry
        heavy = ("mcp.client", "mcp.server.mcpserver", "httpx2", "cryptography")
        print(sorted(name for name in heavy if name in sys.modules))
        """
    )
    assert out.split() == ["[]"]


def test_every_name_the_sdk_packages_re_export_still_resolves_to_the_same_object() -> None:
    out = _run(
        """
        import sys
        from graphmem import lean_imports
        lean_imports.lean_sdk_packages()
        lean_imports.structlog_without_rich()
        import graphmem.server
        from mcp import types
        import mcp_types
        assert types.Tool is mcp_types.Tool
        import mcp
        from mcp.client.session import ClientSession
        assert mcp.ClientSession is ClientSession  # the first such read runs mcp/__init__
        from mcp.server import MCPServer, Server
        from mcp.server.mcpserver import MCPServer as Framework
        from mcp.server.lowlevel import Server as LowLevel
        assert MCPServer is Framework and Server is LowLevel
        missing = [n for n in mcp.__all__ if not hasattr(mcp, n)]
        missing += [n for n in mcp.server.__all__ if not hasattr(mcp.server, n)]
        print("missing", missing)
        """
    )
    assert out.split() == ["missing", "[]"]


def test_a_missing_name_on_a_lean_package_is_an_attribute_error() -> None:
    out = _run(
        """
        from graphmem import lean_imports
        lean_imports.lean_sdk_packages()
        import mcp
        try:
            mcp.no_such_name
        except AttributeError as error:
            print("AttributeError", "no_such_name" in str(error))
        """
    )
    assert out.split() == ["AttributeError", "True"]


def test_an_init_that_does_more_than_import_is_not_deferred(tmp_path: Path) -> None:
    plain = tmp_path / "plain.py"
    plain.write_text('"""Doc."""\nfrom a import b\nimport c\n__all__ = ["b"]\n')
    assert only_imports(plain)
    for body in (
        "x = 1\n",
        "import a\na.setup()\n",
        "try:\n    import a\nexcept ImportError:\n    pass\n",
    ):
        busy = tmp_path / "busy.py"
        busy.write_text(body)
        assert not only_imports(busy), body
    assert not only_imports(tmp_path / "absent.py")


def test_structlog_imported_lean_leaves_rich_unloaded_and_still_importable() -> None:
    out = _run(
        """
        import sys
        from graphmem import lean_imports
        lean_imports.lean_sdk_packages()
        lean_imports.structlog_without_rich()
        import structlog.dev, structlog.tracebacks
        print("loaded", "rich" in sys.modules, "pygments" in sys.modules)
        print("seen", structlog.tracebacks.rich is None)
        try:
            import rich
        except ImportError:
            print("importable", "not-installed")
        else:
            print("importable", "yes")
        """
    )
    lines = out.splitlines()
    assert lines[0] == "loaded False False"
    assert lines[1] == "seen True"
    assert lines[2] in ("importable yes", "importable not-installed")


def test_a_stdio_server_imports_sse_starlette_without_loading_uvicorn_which_still_imports() -> None:
    out = _run(
        """
        import sys
        from graphmem import lean_imports
        lean_imports.lean_sdk_packages()
        lean_imports.structlog_without_rich()
        lean_imports.sse_without_uvicorn()
        import graphmem.server
        print("loaded", "sse_starlette.sse" in sys.modules, "uvicorn" in sys.modules)
        from uvicorn.server import Server
        print("importable", Server.__name__)
        """
    )
    assert out.splitlines() == ["loaded True False", "importable Server"]
