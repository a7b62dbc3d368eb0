"""The tool families and which tools a profile exposes, static and generated from schemas."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from actors.gateway import GraphGateway
from graphmem.cypher import available as cypher_available
from graphmem.tools.base import ToolSpec
from graphmem.tools.definition import ToolDefinition
from graphmem.tools.dynamic import dynamic_tools
from graphmem.tools.graph_cypher_tool import GRAPH_CYPHER_TOOLS
from graphmem.tools.graph_tools import GRAPH_TOOLS
from graphmem.tools.history_tools import HISTORY_TOOLS
from graphmem.tools.memory import MEMORY_TOOLS
from graphmem.tools.memory_extensions import MEMORY_EXTENSION_TOOLS
from graphmem.tools.mesh import MESH_TOOLS
from graphmem.tools.schema_checks import SCHEMA_STATIC_TOOLS
from projections.entity_schema import EntitySchema
from projections.schemas import SchemaProjection

__all__ = [
    "MESH_TOOL_NAMES",
    "STATIC_TOOL_NAMES",
    "ToolCatalog",
    "static_tools",
]

# The static tools of MemoryMesh (the `mesh` family).
MESH_TOOL_NAMES = (
    "add_nodes",
    "update_nodes",
    "delete_nodes",
    "add_edges",
    "update_edges",
    "delete_edges",
    "add_metadata",
    "delete_metadata",
    "read_graph",
    "search_nodes",
    "open_nodes",
)

# Every static tool name of every family: a schema type whose add_/update_/delete_ tool would
# take one of these names is refused, whatever the profile, so enabling a family later never
# makes two tools share a name.
STATIC_TOOL_NAMES = frozenset(
    {
        spec.tool.name
        for spec in (
            *MEMORY_TOOLS,
            *MEMORY_EXTENSION_TOOLS,
            *HISTORY_TOOLS,
            *SCHEMA_STATIC_TOOLS,
            *GRAPH_TOOLS,
            *GRAPH_CYPHER_TOOLS,
        )
    }
    | set(MESH_TOOL_NAMES)
)


def static_tools(families: Iterable[str]) -> dict[str, ToolSpec]:
    """The static tools of the selected families, by name. Where the memory and mesh families
    share a name (read_graph, search_nodes, open_nodes) the mesh tool answers: a profile names
    mesh only to get MemoryMesh's shapes."""
    chosen = frozenset(families)
    specs: dict[str, ToolSpec] = {}
    if "memory" in chosen:
        specs.update(
            (spec.tool.name, spec)
            for spec in (*MEMORY_TOOLS, *MEMORY_EXTENSION_TOOLS, *HISTORY_TOOLS)
        )
    if "mesh" in chosen:
        specs.update((spec.tool.name, spec) for spec in MESH_TOOLS)
    if "schema" in chosen:
        specs.update((spec.tool.name, spec) for spec in SCHEMA_STATIC_TOOLS)
    if "graph" in chosen:
        specs.update((spec.tool.name, spec) for spec in GRAPH_TOOLS)
        if cypher_available():  # graph_cypher needs the `cypher` extra (contract §1.1)
            specs.update((spec.tool.name, spec) for spec in GRAPH_CYPHER_TOOLS)
    return specs


SchemasSince = tuple[int, list[EntitySchema] | None]


def _schemas_since(known: int | None) -> Callable[[SchemaProjection], SchemasSince]:
    """The schema view's revision, and the schemas in force only when that revision is new."""

    def query(schemas: SchemaProjection) -> SchemasSince:
        revision = schemas.revision
        return revision, (None if revision == known else schemas.schemas())

    return query


class ToolCatalog:
    """The tools one server exposes: its profile's static tools and, with the schema family,
    three per schema in force, rebuilt only when the schema view's revision changes."""

    def __init__(self, families: Iterable[str]) -> None:
        self.families = tuple(dict.fromkeys(families))
        self.static = static_tools(self.families)
        self.uses_schemas = "schema" in self.families
        self._revision: int | None = None
        self._specs = self.static
        self._tools = [spec.tool for spec in self._specs.values()]

    @property
    def revision(self) -> int | None:
        """The schema view's revision the current tools were built for (None: not yet)."""
        return self._revision

    async def refresh(self, graph: GraphGateway) -> None:
        """Bring the dynamic tools up to the schemas in force: one query to the writer, and a
        rebuild only when the schemas changed since the last one."""
        if self.uses_schemas:
            self.update(*await graph.query_schemas(_schemas_since(self._revision)))

    def update(self, revision: int, schemas: Sequence[EntitySchema] | None) -> None:
        """Rebuild for `schemas` at `revision`; None means unchanged since the revision known."""
        if not self.uses_schemas or schemas is None or revision == self._revision:
            return
        specs = dict(self.static)
        for spec in dynamic_tools(schemas):
            # The registry refuses types whose tools take a static name; should one come in
            # from a log written elsewhere, the static tool keeps its name.
            specs.setdefault(spec.tool.name, spec)
        self._specs = specs
        self._tools = [spec.tool for spec in specs.values()]
        self._revision = revision

    def get(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    def has(self, name: str) -> bool:
        """Whether `name` is a tool of this server (as of the last refresh)."""
        return name in self._specs

    def names(self) -> list[str]:
        return list(self._specs)

    def tools(self) -> list[ToolDefinition]:
        return list(self._tools)
