"""No lost writes: concurrent server processes on one data dir, and calls in flight at once.

The official server loses 35-86 % of the entities in these same scenarios (contract B3).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.support import call, legacy_session, value

pytestmark = pytest.mark.anyio

PER_WRITER = 50


def one(name: str) -> dict[str, Any]:
    return {"entities": [{"name": name, "entityType": "t", "observations": [f"about {name}"]}]}


async def names_in(data_dir: Path) -> list[str]:
    async with legacy_session(data_dir) as s:
        graph = value(await call(s, "read_graph", {}))
    return [e["name"] for e in graph["entities"]]


async def test_two_server_processes_writing_at_once_lose_nothing(tmp_path: Path) -> None:
    async def writer(prefix: str) -> None:
        async with legacy_session(tmp_path) as s:
            for i in range(PER_WRITER):
                result = await call(s, "create_entities", one(f"{prefix}{i}"))
                assert not result.is_error

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(writer, "a")
            group.start_soon(writer, "b")

    found = await names_in(tmp_path)
    expected = {f"{p}{i}" for p in "ab" for i in range(PER_WRITER)}
    assert set(found) == expected
    assert len(found) == len(expected)


async def test_a_process_sees_the_other_processes_writes_on_its_next_call(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as first, legacy_session(tmp_path) as second:
        await call(first, "create_entities", one("from-first"))
        seen = value(await call(second, "open_nodes", {"names": ["from-first"]}))
        assert [e["name"] for e in seen["entities"]] == ["from-first"]
        again = await call(second, "create_entities", one("from-first"))
        assert value(again) == []  # decided against the first process's write


async def test_eight_calls_in_flight_on_one_connection_lose_nothing(tmp_path: Path) -> None:
    async with legacy_session(tmp_path) as s:

        async def create(i: int) -> None:
            result = await call(s, "create_entities", one(f"e{i}"))
            assert not result.is_error

        with anyio.fail_after(120):
            for start in range(0, 96, 8):
                async with anyio.create_task_group() as group:
                    for i in range(start, start + 8):
                        group.start_soon(create, i)
        graph = value(await call(s, "read_graph", {}))
    assert sorted(e["name"] for e in graph["entities"]) == sorted(f"e{i}" for i in range(96))
