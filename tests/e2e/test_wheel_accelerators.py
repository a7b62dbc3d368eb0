"""The wheel's C accelerators (hatch_build.py): with a compiler, the wheel holds them and is
tagged for this interpreter and platform; without one, the build still succeeds, says what was
left out and how to get it, and gives the pure-Python wheel, which runs the same code paths
through their fallbacks.

Offline, as tests/e2e/test_wheel_install.py: built with the dev environment's hatchling and
setuptools, no build isolation.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.test_compiled_accelerators import can_compile, extensions

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# As hatch_build.EXTENSIONS names them, as paths in the wheel.
ACCELERATORS = [name.replace(".", "/") for name in extensions()]


def build_wheel(out: Path, **env: str) -> tuple[Path, str]:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
         "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600, check=False, env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = out.glob("graphmem-*.whl")
    return wheel, done.stdout + done.stderr


def compiled_members(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return sorted(n for n in archive.namelist() if n.endswith(".so"))


@pytest.mark.skipif(not can_compile(), reason="no C compiler or Python headers here")
def test_with_a_compiler_the_wheel_holds_every_accelerator_and_is_tagged_for_this_platform(
    tmp_path: Path,
) -> None:
    wheel, _ = build_wheel(tmp_path)
    assert not wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert f"-cp{sys.version_info.major}{sys.version_info.minor}-" in wheel.name
    found = compiled_members(wheel)
    assert [m.split(".")[0] for m in found] == list(ACCELERATORS)


def test_without_a_compiler_the_build_warns_and_gives_the_pure_python_wheel(
    tmp_path: Path,
) -> None:
    # `false` as the compiler: every compile fails, as on a machine without gcc.
    wheel, output = build_wheel(tmp_path, CC="false", GRAPHMEM_REQUIRE_COMPILED="0")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    assert compiled_members(wheel) == []
    assert "the C accelerators were not compiled" in output
    assert "pure-Python fallback" in output


def test_graphmem_pure_python_builds_without_the_accelerators(tmp_path: Path) -> None:
    wheel, _ = build_wheel(tmp_path, GRAPHMEM_PURE_PYTHON="1")
    assert wheel.name.endswith("-py3-none-any.whl") and compiled_members(wheel) == []
