"""The wheel's optional C accelerators, compiled by the package's own build.

graphmem is pure Python: every compiled module has a pure-Python twin that gives identical
results (property tests run both), so a machine without a C compiler or Python's headers still
installs it, only slower at what the module speeds up (a full rebuild). With a compiler, a wheel
holds the compiled modules and is tagged for this interpreter and platform; an editable install
compiles them in place, beside their sources.

GRAPHMEM_PURE_PYTHON=1 builds without them; GRAPHMEM_REQUIRE_COMPILED=1 makes a failed compile
fail the build (CI sets it, so a broken C source cannot pass unnoticed as the fallback).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface
from setuptools import Distribution, Extension
from setuptools.command.build_ext import build_ext

# Importable module name -> its C source, relative to the project root.
EXTENSIONS: dict[str, str] = {
    "projections._prefix_scan": "projections/_prefix_scan.c",
    "projections._prefix_write": "projections/_prefix_write.c",
    "projections._restored_keys": "projections/_restored_keys.c",
    "projections._trigrams": "projections/_trigrams.c",
}

_OPTIMISE = ["-O2"]


def _compile(root: Path, out_dir: Path, temp_dir: Path) -> dict[str, Path]:
    """Compiles every extension into `out_dir` (as a package tree); returns module -> file."""
    modules = [
        Extension(name, [str(root / source)], extra_compile_args=_OPTIMISE)
        for name, source in EXTENSIONS.items()
    ]
    command = build_ext(Distribution({"name": "graphmem-accelerators", "ext_modules": modules}))
    command.build_lib = str(out_dir)
    command.build_temp = str(temp_dir)
    command.ensure_finalized()
    command.run()
    return {name: Path(command.get_ext_fullpath(name)) for name in EXTENSIONS}


class CompiledAccelerators(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or not EXTENSIONS:
            return
        if os.environ.get("GRAPHMEM_PURE_PYTHON") == "1":
            self.app.display_info(
                "graphmem: GRAPHMEM_PURE_PYTHON=1, building without C accelerators"
            )
            return
        root = Path(self.root)
        self._scratch = Path(tempfile.mkdtemp(prefix="graphmem-build-"))
        # An editable install imports from the source tree: the compiled files go beside their
        # sources there. A wheel gets them from a scratch tree.
        out_dir = root if version == "editable" else self._scratch / "lib"
        try:
            built = _compile(root, out_dir, self._scratch / "temp")
        except Exception as error:  # a missing compiler or header shows up as many kinds
            if os.environ.get("GRAPHMEM_REQUIRE_COMPILED") == "1":
                raise
            self.app.display_warning(
                "graphmem: the C accelerators were not compiled "
                f"({type(error).__name__}: {error}); installing the pure-Python fallback, "
                "which gives the same results, slower (install a C compiler and the Python "
                "headers, e.g. `apt install gcc python3-dev`, then reinstall to get them)"
            )
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":
            for path in built.values():
                build_data["force_include"][str(path)] = str(path.relative_to(out_dir))

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        scratch = getattr(self, "_scratch", None)
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
