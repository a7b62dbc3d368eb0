"""The wheel users install: built from this tree, installed into a fresh virtual environment,
and run from there (`--version`, a real MCP handshake, the shipped schema sets).

Offline on purpose: the wheel is built with the hatchling of the dev environment (no build
isolation, so nothing is fetched), and the fresh environment borrows the dev environment's
installed dependencies through a `.pth` line, read after its own site-packages, so `graphmem`
itself can only come from the wheel (the test checks it does).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import mcp.types as types
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 300


def run(*args: str | Path, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        check=False,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def fresh_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with graphmem installed from a wheel built from this tree."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        dist,
        ROOT,
    )
    (wheel,) = dist.glob("graphmem-*.whl")
    env = base / "fresh"
    run(sys.executable, "-m", "venv", "--without-pip", env)
    python = env / "bin" / "python"
    run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel)
    site = Path(
        run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    (site / "zz_dev_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env


def test_the_installed_wheel_runs_from_its_own_environment_and_says_its_version(
    fresh_env: Path,
) -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert run(fresh_env / "bin" / "graphmem", "--version").strip() == f"graphmem {version}"
    where = run(
        fresh_env / "bin" / "python",
        "-c",
        "import graphmem, graphmem.config as c; print(graphmem.__file__); "
        "print(c.shipped_schemas_dir())",
        cwd=fresh_env,  # not the source tree: its `graphmem` folder must not be importable
    ).splitlines()
    assert all(line.startswith(str(fresh_env)) for line in where), where
    assert where[1].endswith("_schemas")


async def test_the_installed_wheel_serves_a_handshake_with_its_shipped_schema_sets(
    fresh_env: Path, tmp_path: Path
) -> None:
    user_schemas = tmp_path / "no-user-schemas"
    user_schemas.mkdir()
    params = StdioServerParameters(
        command=str(fresh_env / "bin" / "graphmem"),
        args=["serve"],
        cwd=str(fresh_env),
        env={
            "GRAPHMEM_DIR": str(tmp_path / "data"),
            "GRAPHMEM_SCHEMAS_DIR": str(user_schemas),
            "GRAPHMEM_SCHEMA_SETS": "rpg-seed",
            "GRAPHMEM_LOG_LEVEL": "WARNING",
        },
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        hello = await session.initialize()
        listed = await session.list_tools()
        created = await session.call_tool(
            "create_entities",
            {"entities": [{"name": "Ada", "entityType": "t", "observations": ["wheel"]}]},
        )
    assert hello.server_info.name
    names = {tool.name for tool in listed.tools}
    assert {"add_person", "add_npc", "create_entities"} <= names
    assert isinstance(created, types.CallToolResult)
    assert not created.is_error
