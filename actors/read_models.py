"""ReadModels: every read model the graph writer keeps current, handed to model queries."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventstore.log import EventLog
from projections.conflicts import ConflictsProjection
from projections.graph import GraphProjection
from projections.history import HistoryProjection
from projections.schema_view import SchemaViewProjection
from projections.schemas import SchemaProjection
from projections.search import SearchProjection

__all__ = ["ModelsQuery", "ReadModels"]


class ReadModels:
    """Every read model the writer keeps current, for queries that need more than the graph.

    The conflict view is folded lazily, on its first use after a change: it costs as much as
    the graph fold, and neither start-up nor a query that does not read it should pay for it.
    """

    def __init__(
        self,
        graph: GraphProjection,
        search: SearchProjection,
        schemas: SchemaProjection,
        schema_view: SchemaViewProjection,
        conflicts: Callable[[], ConflictsProjection],
        *,
        history: Callable[[], HistoryProjection] = HistoryProjection,
        event_log: EventLog | None = None,
    ) -> None:
        self.graph = graph
        self.search = search
        self.schemas = schemas
        self.schema_view = schema_view
        self._conflicts = conflicts
        self._history = history
        # For reading events back (history) off the writer's thread.
        self.event_log = event_log

    @property
    def conflicts(self) -> ConflictsProjection:
        return self._conflicts()

    @property
    def history(self) -> HistoryProjection:
        """Folded lazily, like the conflict view."""
        return self._history()


ModelsQuery = Callable[[ReadModels], Any]
