"""What the graph family's decisions write folds like any other write: order-independent and
idempotent, new fields and all.

Two nodes decide graph_relate (single and batch), boost, weaken and delete against their own
projection, at their own clock, syncing with each other now and then, so their writes are
concurrent: re-openings, supersessions, confirmations and deletions of the same edges. Every
order, grouping and repetition of the union of their envelopes must fold to one model,
attributes included (entity confidence, mentions, last seen, aliases; relation weight,
validity, evidence, ingestion and confirmation times).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.commands import Command
from actors.decide import decide
from actors.errors import CommandRejectedError
from actors.graph_commands import (
    BatchEntity,
    BatchRelation,
    GraphAdjust,
    GraphDelete,
    GraphRelate,
    GraphRelateBatch,
)
from eventstore.events import Envelope
from eventstore.hlc import stamp_of
from projections.graph import GraphProjection
from tests.property.test_graph_fold import FoldView, folded, observed

NAMES = st.sampled_from(["Ann", "ann", "Bo", "Cy"])
RELATIONS = st.sampled_from(["WORKS_ON", "works on", "KNOWS"])
WEIGHTS = st.sampled_from([0.3, 0.7, 1.0])
DATES = st.sampled_from([None, None, "2025-01-01", "2026-01-01"])
DAY = 86_400_000
T0 = 1_767_225_600_000

COMMANDS: st.SearchStrategy[Command] = st.one_of(
    st.builds(
        GraphRelate,
        from_name=NAMES,
        from_type=st.just("Person"),
        to_name=NAMES,
        to_type=st.sampled_from(["Project", "person"]),
        relation=RELATIONS,
        weight=WEIGHTS,
        evidence=st.sampled_from([None, "", "said so"]),
        valid_at=DATES,
        properties=st.sampled_from([{}, {"k": 1}, {"k": None, "aliases": ["x"]}]),
    ),
    st.builds(
        GraphRelateBatch,
        entities=st.lists(
            st.builds(
                BatchEntity,
                local_id=st.sampled_from(["e1", "e2"]),
                name=NAMES,
                entity_type=st.just("Person"),
                confidence=st.none() | WEIGHTS,
                properties=st.sampled_from([{}, {"aliases": "Nick"}, {"subtype": "rule"}]),
            ),
            max_size=2,
            unique_by=lambda e: e.local_id,
        ),
        relations=st.lists(
            st.builds(
                BatchRelation,
                from_ref=st.sampled_from(["e1", "Bo"]),
                to_ref=st.sampled_from(["e2", "Cy"]),
                relation=RELATIONS,
                weight=WEIGHTS,
                valid_at=DATES,
            ),
            max_size=2,
        ),
    ),
    st.builds(
        GraphAdjust,
        from_name=NAMES,
        to_name=NAMES,
        relation=RELATIONS,
        amount=st.sampled_from([0.1, 0.5]),
        weaken=st.booleans(),
        reason=st.sampled_from([None, "because"]),
    ),
    st.builds(GraphDelete, entity_id=NAMES),
)


class _Node:
    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.graph = GraphProjection()
        self.seq = 0
        self.written: list[Envelope] = []

    def run(self, command: Command, at: int, position: int) -> list[Envelope]:
        try:
            events = decide(self.graph, command, now_ms=at).events
        except CommandRejectedError:
            return []
        tx = self.seq + 1
        envelopes = []
        for event in events:
            self.seq += 1
            envelopes.append(
                Envelope(
                    position=position + len(envelopes),
                    origin=self.origin,
                    origin_seq=self.seq,
                    hlc=stamp_of(at, 0),
                    tx=tx,
                    event=event,
                )
            )
        self.graph.apply_all(envelopes)
        self.written.extend(envelopes)
        return envelopes


@settings(max_examples=150, deadline=None)
@given(
    st.data(),
    st.lists(
        st.tuples(st.sampled_from(["n1", "n2"]), COMMANDS, st.booleans()), min_size=3, max_size=20
    ),
)
def test_the_writes_of_concurrent_graph_decisions_fold_to_one_model_in_any_order(
    data: st.DataObject, steps: list[tuple[str, Command, bool]]
) -> None:
    nodes = {"n1": _Node("n1"), "n2": _Node("n2")}
    synced = {"n1": 0, "n2": 0}  # how much of the other node's writes each has folded
    everything: list[Envelope] = []
    for index, (origin, command, sync) in enumerate(steps):
        node = nodes[origin]
        other = nodes["n2" if origin == "n1" else "n1"]
        if sync:
            node.graph.apply_all(other.written[synced[origin] :])
            synced[origin] = len(other.written)
        # Clocks tie across nodes (same day) and move on a day per step.
        everything.extend(node.run(command, T0 + (index // 2) * DAY, len(everything) + 1))

    expected: FoldView = folded(everything)
    shuffled = data.draw(st.permutations(everything))
    repeated = data.draw(st.lists(st.sampled_from(everything), max_size=6)) if everything else []
    graph = GraphProjection()
    graph.apply_all(shuffled)
    graph.apply_all(repeated)  # a repeat changes nothing
    assert observed(graph) == expected
    for node in nodes.values():  # a node that has seen everything answers the same
        node.graph.apply_all(everything)
        assert observed(node.graph) == expected
