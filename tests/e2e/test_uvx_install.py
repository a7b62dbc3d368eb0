"""`uvx graphmem` from a built wheel: what a user runs without installing anything first.

uv puts the wheel and its dependencies into a throwaway environment of its own, so unlike
tests/e2e/test_wheel_install.py (offline, borrowing the dev environment's dependencies) this
one asks the package index for them, through uv as a user would. Where the index cannot be
reached at all the test is skipped, saying so; any other failure fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300
# What uv prints when the index cannot be reached (as opposed to a resolution that fails).
UNREACHABLE = ("error sending request", "dns error", "Connection refused", "network is unreachable")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("uvx-wheel")
    command = ["pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
    built = subprocess.run(
        [sys.executable, "-m", *command, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = dist.glob("graphmem-*.whl")
    return found


@pytest.fixture(scope="module")
def uv_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """uv with a cache of its own (never a developer's); the shell's certificate and proxy
    settings pass through (uv reaches the index as the user's pip would), graphmem's and
    uv's own settings do not."""
    home = tmp_path_factory.mktemp("uv-home")
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GRAPHMEM_", "UV_", "VIRTUAL_ENV", "PYTHON"))
    }
    return {
        **kept,
        "HOME": str(home),
        "UV_CACHE_DIR": str(home / "cache"),
        "UV_TOOL_DIR": str(home / "tools"),
        "UV_PYTHON": sys.executable,  # no interpreter download
        "UV_NO_PROGRESS": "1",
    }


def uvx(wheel: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "uv", "tool", "run", "--from", str(wheel), "graphmem", *args]


def test_uvx_runs_graphmem_from_the_wheel_and_it_says_its_version(
    wheel: Path, uv_env: dict[str, str], tmp_path: Path
) -> None:
    done = subprocess.run(
        uvx(wheel, "--version"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=uv_env,
        cwd=tmp_path,  # not the source tree, whose `graphmem` folder would be importable
        check=False,
    )
    if done.returncode != 0 and any(m in done.stderr for m in UNREACHABLE):
        pytest.skip(f"the package index cannot be reached from here: {done.stderr[-500:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert done.stdout.strip() == f"graphmem {version}"


async def test_uvx_graphmem_serve_answers_an_mcp_client_on_stdio(
    wheel: Path, uv_env: dict[str, str], tmp_path: Path
) -> None:
    warm = subprocess.run(
        uvx(wheel, "--version"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=uv_env,
        cwd=tmp_path,
        check=False,
    )
    if warm.returncode != 0 and any(m in warm.stderr for m in UNREACHABLE):
        pytest.skip("the package index cannot be reached from here")
    user_schemas = tmp_path / "no-user-schemas"
    user_schemas.mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=uvx(wheel, "serve")[1:],
        cwd=str(tmp_path),
        env={
            **uv_env,
            "GRAPHMEM_DIR": str(tmp_path / "data"),
            "GRAPHMEM_SCHEMAS_DIR": str(user_schemas),
            "GRAPHMEM_LOG_LEVEL": "WARNING",
        },
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        created = await session.call_tool(
            "create_entities",
            {"entities": [{"name": "Ada", "entityType": "t", "observations": ["uvx"]}]},
        )
    assert isinstance(created, types.CallToolResult)
    assert not created.is_error
