"""A GraphProjection fed events at chosen wall times, for the graph family's read tests."""

from __future__ import annotations

from typing import Any

from eventstore.events import (
    AnyEvent,
    DecayApplied,
    EntityCreated,
    Envelope,
    RelationCreated,
    RelationUpdated,
)
from eventstore.hlc import stamp_of
from projections.graph import GraphProjection
from projections.graph_time import DAY_MS

__all__ = ["DAY_MS", "T0", "Feed"]

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z


class Feed:
    """Events folded one by one, each a millisecond after the last unless `ms` says when."""

    def __init__(self) -> None:
        self.graph = GraphProjection()
        self.ms = T0
        self.envelopes: list[Envelope] = []

    def add(self, *events: AnyEvent, ms: int | None = None) -> Feed:
        for event in events:
            self.ms = self.ms + 1 if ms is None else max(ms, self.ms + 1)
            position = len(self.envelopes) + 1
            envelope = Envelope(
                position=position,
                origin="n1",
                origin_seq=position,
                hlc=stamp_of(self.ms),
                tx=position,
                event=event,
            )
            self.envelopes.append(envelope)
            self.graph.apply(envelope)
        return self

    def entity(self, name: str, entity_type: str = "Person", **attrs: Any) -> Feed:
        return self.add(EntityCreated(name=name, entity_type=entity_type, **attrs))

    def edge(
        self, from_entity: str, to_entity: str, relation_type: str = "KNOWS", **attrs: Any
    ) -> Feed:
        return self.add(
            RelationCreated(
                from_entity=from_entity, to_entity=to_entity, relation_type=relation_type, **attrs
            )
        )

    def update_edge(
        self, from_entity: str, to_entity: str, relation_type: str, **attrs: Any
    ) -> Feed:
        return self.add(
            RelationUpdated(
                from_entity=from_entity, to_entity=to_entity, relation_type=relation_type, **attrs
            )
        )

    def decay(self, at: int, **rates: Any) -> Feed:
        run = {"rate": 0.996, "rates": {"person": 0.998}, "edge_rate": 0.997, "floor": 0.01}
        return self.add(DecayApplied(at=at, **{**run, **rates}))

    def refolded(self) -> GraphProjection:
        """A fresh projection of the same events (its indexes built from scratch)."""
        graph = GraphProjection()
        graph.apply_all(self.envelopes)
        return graph


def days(n: float) -> int:
    return round(n * DAY_MS)
