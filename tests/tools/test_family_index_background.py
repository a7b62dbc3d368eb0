"""The graph family's index is built in the background once a server answers its first
request, and a graph read that arrives meanwhile is told so (or answered, once it is built).

At 1,000,000 entities the index took ~210 s to build in the first graph read, and every
graph call meanwhile answered the generic "did not finish within 60 s". The build is held
here by a step that makes no progress until the test opens the gate (the writer goes on
answering between steps, as it does between real ones).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors import graph_writer
from graphmem import tool_runner as runner_module
from projections.graph_family import FamilyIndexBuild
from tests.tools.graph_write_support import graph_client, tool_error, tool_value
from tests.tools.support import call
from tests.tools.test_graph_read_tools import memory_tool, relate

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class HeldBuild:
    """FamilyIndexBuild.step, making no progress past `after` entries until `gate` opens."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, after: int = 0) -> None:
        self.gate = threading.Event()
        self.steps_held = 0
        original = FamilyIndexBuild.step

        def step(build: FamilyIndexBuild, budget: int) -> Any:
            if not self.gate.is_set() and build.done >= after:
                self.steps_held += 1
                return False
            return original(build, budget)

        monkeypatch.setattr(FamilyIndexBuild, "step", step)


async def test_a_graph_read_during_the_index_build_says_it_is_being_built_then_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = HeldBuild(monkeypatch)
    # The call's wait for the build: a small share of its 60 s bound, so the refusal comes soon.
    monkeypatch.setattr(runner_module, "INDEX_WAIT_SHARE", 0.01)
    async with graph_client("legacy", tmp_path) as client:
        # Writes go on while the index is built: the writer answers between steps.
        await relate(client, "Alice", "Bob", "knows", weight=0.5)
        await memory_tool(
            client,
            "create_entities",
            {"entities": [{"name": "Loner", "entityType": "Fact", "observations": []}]},
        )
        refused = await tool_error(client, "graph_stats", {})
        assert held.steps_held > 0
        assert refused.startswith("graph_stats: the graph family's index is being built (")
        assert "retry in a few seconds" in refused

        held.gate.set()
        monkeypatch.setattr(runner_module, "INDEX_WAIT_SHARE", 0.5)
        answer = await tool_value(client, "graph_stats", {})

    assert answer["nodes"]["total"] == 3
    assert answer["edges"]["total"] == 1


async def test_the_index_built_a_few_entries_per_step_reads_as_one_built_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with graph_client("legacy", tmp_path) as client:
        for i in range(4):
            await relate(client, f"P{i}", f"Q{i}", "knows", weight=0.2 + i / 10)
    # After a restart, steps of one entry, held after three: the writes below land in the
    # middle of the build, and what they touch is re-derived on the index's first refresh.
    monkeypatch.setattr(graph_writer, "FAMILY_INDEX_STEP", 1)
    held = HeldBuild(monkeypatch, after=3)
    async with graph_client("legacy", tmp_path) as client:
        await relate(client, "P0", "R", "knows", weight=0.9)
        await call(client, "delete_entities", {"entityNames": ["Q1", "P3"]})
        await relate(client, "P2", "Q3", "likes", weight=0.4)
        assert held.steps_held > 0  # the build was under way all along
        held.gate.set()
        stepped = await tool_value(client, "graph_stats", {})
        entities = await tool_value(client, "graph_entities", {})
    monkeypatch.setattr(graph_writer, "FAMILY_INDEX_STEP", 10_000)
    async with graph_client("legacy", tmp_path) as client:  # built in one step
        whole = await tool_value(client, "graph_stats", {})
        whole_entities = await tool_value(client, "graph_entities", {})

    assert stepped["nodes"] == whole["nodes"] and stepped["edges"] == whole["edges"]
    assert stepped["nodes"]["total"] == 7 and stepped["edges"]["total"] == 4
    assert entities == whole_entities


class HeldAssembly:
    """FamilyIndexBuild.assemble, held (bounded) until `gate` opens once it has begun."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.gate = threading.Event()
        self.begun = threading.Event()
        original = FamilyIndexBuild.assemble

        def assemble(build: FamilyIndexBuild) -> Any:
            self.begun.set()
            if not self.gate.wait(HELD_AT_MOST):
                raise TimeoutError("the test never opened the assembly's gate")
            return original(build)

        monkeypatch.setattr(FamilyIndexBuild, "assemble", assemble)


HELD_AT_MOST = 30.0


async def test_the_writer_answers_while_the_index_is_assembled_and_the_index_has_what_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # At 1,000,000 entities the assembly of the derived entries (tallies, columns, sorted
    # orders) took over a minute; done on the writer, every request meanwhile timed out.
    async with graph_client("legacy", tmp_path) as client:
        for i in range(3):
            await relate(client, f"P{i}", f"Q{i}", "knows", weight=0.5)
    held = HeldAssembly(monkeypatch)
    monkeypatch.setattr(runner_module, "INDEX_WAIT_SHARE", 0.01)
    async with graph_client("legacy", tmp_path) as client:
        await call(client, "read_graph", {})  # a first request: the build starts
        assert await anyio.to_thread.run_sync(held.begun.wait, HELD_AT_MOST)
        # The assembly is held: a writer doing it could answer none of these.
        await relate(client, "P0", "R", "knows", weight=0.9)
        await call(client, "delete_entities", {"entityNames": ["Q1"]})
        refused = await tool_error(client, "graph_stats", {})
        assert refused.startswith("graph_stats: the graph family's index is being built (")
        held.gate.set()
        monkeypatch.setattr(runner_module, "INDEX_WAIT_SHARE", 0.5)
        answer = await tool_value(client, "graph_stats", {})
        entities = await tool_value(client, "graph_entities", {})
    monkeypatch.undo()  # the same log again, the index assembled as it comes
    async with graph_client("legacy", tmp_path) as client:
        whole = await tool_value(client, "graph_stats", {})
        whole_entities = await tool_value(client, "graph_entities", {})

    assert answer["nodes"]["total"] == 6 and answer["edges"]["total"] == 3
    assert answer["nodes"] == whole["nodes"] and answer["edges"] == whole["edges"]
    assert entities == whole_entities
