"""The optional C accelerators (hatch_build.EXTENSIONS): built where CI requires them, and
GRAPHMEM_PURE_PYTHON=1 at run time makes each module use its pure-Python twin."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def test_graphmem_pure_python_at_run_time_makes_the_prefix_scan_the_python_path() -> None:
    code = "import projections.plain_prefix as p; print(p.COMPILED, p.PlainPrefix()._scan)"
    env = {**os.environ, "GRAPHMEM_PURE_PYTHON": "1"}
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert ran.stdout.split() == ["False", "None"]


@pytest.mark.parametrize("module", ["projections.restored_keys", "projections.trigrams"])
def test_graphmem_pure_python_at_run_time_makes_the_module_run_its_python_twin(
    module: str,
) -> None:
    code = f"import {module} as m; print(m.COMPILED)"
    env = {**os.environ, "GRAPHMEM_PURE_PYTHON": "1"}
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    assert ran.stdout.split() == ["None"]


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


def can_compile() -> bool:
    """A C compiler and Python's headers: what hatch_build needs to compile the accelerators."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    return shutil.which(compiler) is not None and headers.exists()


# Where the install could compile them (CI, a developer's machine), a C source that stopped
# compiling must fail here rather than pass unseen as the pure-Python fallback; a machine
# without a compiler installs the fallback (hatch_build warns) and skips.
@pytest.mark.skipif(not can_compile(), reason="no C compiler or Python headers: fallback only")
@pytest.mark.skipif(os.environ.get("GRAPHMEM_PURE_PYTHON") == "1", reason="built without them")
@pytest.mark.parametrize("module", extensions())
def test_every_accelerator_is_built_where_a_c_compiler_and_the_python_headers_are_present(
    module: str,
) -> None:
    importlib.import_module(module)  # an ImportError fails the test: reinstall (`pip install -e .`)


# A benchmark of an archived revision (`--graphmem-rev`) runs it from its sources: without its
# accelerators compiled there it would be measured on the pure-Python twins.
@pytest.mark.skipif(not can_compile(), reason="no C compiler or Python headers: fallback only")
@pytest.mark.skipif(os.environ.get("GRAPHMEM_PURE_PYTHON") == "1", reason="built without them")
def test_an_archived_revision_benchmarked_gets_its_accelerators_compiled(tmp_path: Path) -> None:
    from bench.servers import compile_accelerators  # noqa: PLC0415 (the benchmarks' own)

    src = tmp_path / "src"
    skipped = shutil.ignore_patterns("*.so", "*.pyd", "__pycache__")
    shutil.copytree(ROOT / "projections", src / "projections", ignore=skipped)
    shutil.copy(ROOT / "hatch_build.py", src)
    assert compile_accelerators(src) == extensions()
    for module in extensions():
        assert list(src.glob(module.replace(".", "/") + ".*.so")) or list(
            src.glob(module.replace(".", "/") + ".*.pyd")
        )
    assert compile_accelerators(tmp_path / "empty") == []
