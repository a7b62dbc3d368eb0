"""Shared test helpers: stamping events into envelopes, and deciding commands into a graph."""

from __future__ import annotations

from collections.abc import Iterable

from actors.commands import (
    Command,
    CommandResult,
    CreateEntities,
    CreateRelations,
    EntityInput,
    RelationInput,
)
from actors.decide import decide
from eventstore.events import AnyEvent, Envelope
from projections.graph import GraphProjection


def stamp(
    events: Iterable[AnyEvent],
    *,
    origin: str = "n1",
    start_seq: int = 1,
    hlc: int | None = None,
    start_position: int | None = None,
) -> list[Envelope]:
    """Envelopes for one command's events, as a log would stamp them: one clock tick (`hlc`,
    default `start_seq`) and one tx for all, consecutive origin_seq and positions."""
    tick = start_seq if hlc is None else hlc
    first_position = start_seq if start_position is None else start_position
    return [
        Envelope(
            position=first_position + offset,
            origin=origin,
            origin_seq=start_seq + offset,
            hlc=tick,
            tx=start_seq,
            event=event,
        )
        for offset, event in enumerate(events)
    ]


def run(graph: GraphProjection, command: Command) -> CommandResult:
    """Decide `command` against `graph`, stamp its events after the graph's position and apply
    them; return the result. A rejection propagates and leaves the graph untouched."""
    decision = decide(graph, command)
    start = graph.position + 1
    graph.apply_all(stamp(decision.events, start_seq=start, hlc=start))
    return decision.result


def entity(name: str, entity_type: str = "person", *observations: str) -> EntityInput:
    return EntityInput(name, entity_type, list(observations))


def relation(from_entity: str, to_entity: str, relation_type: str) -> RelationInput:
    return RelationInput(from_entity, to_entity, relation_type)


def graph_with(
    *entities: EntityInput, relations: tuple[RelationInput, ...] = ()
) -> GraphProjection:
    """A graph holding `entities` and then `relations`, created through decide."""
    graph = GraphProjection()
    run(graph, CreateEntities(list(entities)))
    if relations:
        run(graph, CreateRelations(list(relations)))
    return graph


def substring_scan(graph: GraphProjection, query: str) -> list[str]:
    """search_nodes the official way: alive entities, in listing order, whose name, type or an
    observation contains `query` (case-insensitive)."""
    q = query.lower()
    return [
        e.name
        for e in graph.entities()
        if q in e.name.lower()
        or q in e.entity_type.lower()
        or any(q in o.lower() for o in e.observations)
    ]
