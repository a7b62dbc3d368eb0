"""The optional C accelerators (hatch_build.EXTENSIONS): built where CI requires them, and
GRAPHMEM_PURE_PYTHON=1 at run time makes each module use its pure-Python twin."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hatch_build import EXTENSIONS


def test_graphmem_pure_python_at_run_time_makes_the_prefix_scan_the_python_path() -> None:
    code = "import projections.plain_prefix as p; print(p.COMPILED, p.PlainPrefix()._scan)"
    env = {**os.environ, "GRAPHMEM_PURE_PYTHON": "1"}
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert ran.stdout.split() == ["False", "None"]


@pytest.mark.skipif(os.environ.get("GRAPHMEM_REQUIRE_COMPILED") != "1", reason="not required")
@pytest.mark.parametrize("module", sorted(EXTENSIONS))
def test_every_accelerator_is_built_where_graphmem_require_compiled_is_set(module: str) -> None:
    importlib.import_module(module)  # an ImportError fails the test


def test_ci_and_the_readme_install_with_the_accelerators_required() -> None:
    # A C source that stopped compiling would otherwise install the fallback and pass unseen.
    root = Path(__file__).parent.parent
    line = re.compile(r"^.*pip install -e '[^']+' && scripts/check$", re.MULTILINE)
    readme = line.findall((root / "README.md").read_text("utf-8"))
    ci = line.findall((root / ".ci" / "run").read_text("utf-8"))
    assert readme == ci and len(ci) == 1
    assert " GRAPHMEM_REQUIRE_COMPILED=1 pip install -e " in ci[0]
