"""graph_cypher over a real `graphmem serve` process on stdio, both protocol eras: served with
the `cypher` extra, and not listed, with instructions saying how to enable it, when the
`ladybug` found first is not LadybugDB (PyPI `ladybug` 0.0.x is an unrelated CSV library)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, ClientSession

from graphmem.cypher import INSTALL_HINT, available
from tests.e2e.support import call, legacy_session, modern_client, value

pytestmark = pytest.mark.anyio

ERAS = ("legacy", "modern")


@asynccontextmanager
async def client_of(era: str, data_dir: Path, **env: str) -> AsyncIterator[ClientSession | Client]:
    if era == "legacy":
        async with legacy_session(data_dir, tools="memory,graph", **env) as session:
            yield session
    else:
        async with modern_client(data_dir, tools="memory,graph", **env) as client:
            yield client


def instructions_of(client: ClientSession | Client) -> str:
    if isinstance(client, ClientSession):
        result = client.initialize_result
        assert result is not None
        found = result.instructions
    else:
        found = client.instructions
    assert found is not None
    return found


def unrelated_ladybug(folder: Path) -> Path:
    """A folder that, first on the path, makes `ladybug` the unrelated 0.0.1 package."""
    info = folder / "ladybug-0.0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ladybug\nVersion: 0.0.1\n")
    return folder


@pytest.mark.skipif(not available(), reason="needs the cypher extra")
@pytest.mark.parametrize("era", ERAS)
async def test_a_served_process_answers_graph_cypher_from_its_log(tmp_path: Path, era: str) -> None:
    async with client_of(era, tmp_path) as client:
        await call(
            client,
            "create_entities",
            {"entities": [{"name": "Ada", "entityType": "Person", "observations": ["math"]}]},
        )
        answer: dict[str, Any] = value(
            await call(client, "graph_cypher", {"cypher": "MATCH (p:Person) RETURN p.name AS n"})
        )
        assert answer["results"] == [{"n": "Ada"}]
        assert "graph_cypher runs one read-only Cypher query" in instructions_of(client)


@pytest.mark.parametrize("era", ERAS)
async def test_without_ladybugdb_the_tool_is_not_listed_and_the_instructions_say_how_to_enable_it(
    tmp_path: Path, era: str
) -> None:
    shim = unrelated_ladybug(tmp_path / "shim")
    async with client_of(era, tmp_path / "data", PYTHONPATH=str(shim)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "graph_query" in names
        assert "graph_cypher" not in names
        assert INSTALL_HINT in instructions_of(client)
        result = await call(client, "graph_cypher", {"cypher": "RETURN 1"})
        assert result.is_error
        assert "graphmem[cypher]" in result.content[0].text  # type: ignore[union-attr]
