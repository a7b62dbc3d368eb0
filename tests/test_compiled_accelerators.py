"""The optional C accelerators (hatch_build.EXTENSIONS): built where CI requires them, and
GRAPHMEM_PURE_PYTHON=1 at run time makes each module use its pure-Python twin."""

from __future__ import annotations

import ast
import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def test_graphmem_pure_python_at_run_time_makes_the_prefix_scan_the_python_path() -> None:
    code = "import projections.plain_prefix as p; print(p.COMPILED, p.PlainPrefix()._scan)"
    env = {**os.environ, "GRAPHMEM_PURE_PYTHON": "1"}
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert ran.stdout.split() == ["False", "None"]


def extensions() -> list[str]:
    """hatch_build.EXTENSIONS' module names, read from its source (hatch_build is the build's,
    not a package the tests may import)."""
    for node in ast.parse((ROOT / "hatch_build.py").read_text("utf-8")).body:
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "EXTENSIONS":
            assert node.value is not None
            return sorted(ast.literal_eval(node.value))
    raise AssertionError("hatch_build.py has no EXTENSIONS")


def test_the_prefix_scan_is_among_the_accelerators_the_build_compiles() -> None:
    assert "projections._prefix_scan" in extensions()


@pytest.mark.skipif(os.environ.get("GRAPHMEM_REQUIRE_COMPILED") != "1", reason="not required")
@pytest.mark.parametrize("module", extensions())
def test_every_accelerator_is_built_where_graphmem_require_compiled_is_set(module: str) -> None:
    importlib.import_module(module)  # an ImportError fails the test


def test_ci_and_the_readme_install_with_the_accelerators_required() -> None:
    # A C source that stopped compiling would otherwise install the fallback and pass unseen.
    line = re.compile(r"^.*pip install -e '[^']+' && scripts/check$", re.MULTILINE)
    readme = line.findall((ROOT / "README.md").read_text("utf-8"))
    ci = line.findall((ROOT / ".ci" / "run").read_text("utf-8"))
    assert readme == ci and len(ci) == 1
    assert " GRAPHMEM_REQUIRE_COMPILED=1 pip install -e " in ci[0]
