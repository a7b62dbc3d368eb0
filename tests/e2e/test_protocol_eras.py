"""Handshake era and 2026-07-28 era: capabilities, the resource, and change notifications."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from mcp.shared.subscriptions import ResourceUpdated

from tests.e2e.support import call, legacy_session, modern_client, text, value

pytestmark = pytest.mark.anyio

GRAPH_URI = "memory://knowledge-graph"
WAIT = 30.0


def zed() -> dict[str, Any]:
    return {"entities": [{"name": "Zed", "entityType": "t", "observations": []}]}


async def test_the_handshake_advertises_what_the_official_server_does(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        init = s.initialize_result
        assert init is not None
        caps = init.capabilities
        assert init.server_info.name == "memory-server"
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.resources is not None
        assert caps.resources.subscribe is True and caps.resources.list_changed is True
        assert caps.prompts is None
        assert init.instructions


async def test_the_nine_tools_are_listed_with_titles_and_annotations(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        assert set(tools) >= {
            "create_entities",
            "create_relations",
            "add_observations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "read_graph",
            "search_nodes",
            "open_nodes",
        }
        assert tools["read_graph"].title == "Read Graph"
        annotations = tools["delete_entities"].annotations
        assert annotations is not None and annotations.destructive_hint is True


async def test_resource_read_matches_read_graph(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:
        await call(s, "create_entities", zed())
        listed = await s.list_resources()
        assert [str(r.uri) for r in listed.resources] == [GRAPH_URI]
        read = await s.read_resource(GRAPH_URI)  # type: ignore[arg-type]
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert content.mime_type == "application/json"
        assert content.text == text(await call(s, "read_graph", {}))


async def test_handshake_era_subscribers_are_told_after_each_mutation(tmp_path: Path) -> None:
    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            updates.append(str(root.params.uri))
            arrived.set()

    async with legacy_session(tmp_path, message_handler=on_message) as s:
        await s.subscribe_resource(GRAPH_URI)  # type: ignore[arg-type]
        result = await call(s, "create_entities", zed())
        assert not result.is_error
        with anyio.fail_after(WAIT):
            await arrived.wait()
        assert updates == [GRAPH_URI]

        failed = await call(
            s, "add_observations", {"observations": [{"entityName": "X", "contents": ["y"]}]}
        )
        assert failed.is_error
        await call(s, "read_graph", {})
        assert updates == [GRAPH_URI]  # neither an error nor a read notifies

        await s.unsubscribe_resource(GRAPH_URI)  # type: ignore[arg-type]
        await call(
            s,
            "create_entities",
            {"entities": [{"name": "Y", "entityType": "t", "observations": []}]},
        )
        await call(s, "read_graph", {})
        assert updates == [GRAPH_URI]


async def test_modern_era_listeners_get_resource_updates(tmp_path: Path) -> None:
    async with modern_client(tmp_path) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_subscriptions=[GRAPH_URI]) as stream:
            events = stream.__aiter__()
            result = await call(client, "create_entities", zed())
            assert value(result) == zed()["entities"]
            with anyio.fail_after(WAIT):
                event = await events.__anext__()
            assert isinstance(event, ResourceUpdated)
            assert event.uri == GRAPH_URI


async def test_modern_era_tools_and_resource_work(tmp_path: Path) -> None:
    async with modern_client(tmp_path) as client:
        await call(client, "create_entities", zed())
        graph = value(await call(client, "read_graph", {}))
        assert [e["name"] for e in graph["entities"]] == ["Zed"]
        read = await client.read_resource(GRAPH_URI)  # type: ignore[arg-type]
        content = read.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert '"Zed"' in content.text
