"""The search index's trigram filter never changes an answer: against a brute-force scan.

A state machine folds random entity events (creations, re-creations, type changes, added and
deleted observations, deletions, late arrivals from another node) into a graph, notes them in
an index built with tiny segments and few buckets (so segments are recomputed often and buckets
collide), rebuilds the index from scratch now and then (as after a start), and asks queries:
random ones (one or two characters, unicode, spaces), substrings of a field (which must match)
and strings spanning two fields (which must not, unless a field holds them).
"""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from eventstore.events import (
    AnyEvent,
    EntityCreated,
    EntityDeleted,
    EntityUpdated,
    Envelope,
    ObservationAdded,
    ObservationDeleted,
)
from projections import search as search_module
from projections.graph import GraphProjection
from projections.search import SearchProjection
from tests.helpers import substring_scan

# Letters whose lowercase differs in length (İ), expands (ß stays), CJK (three UTF-8 bytes),
# astral (four), a combining mark, a lone surrogate, unicode spaces; texts also hold separators
# and control whitespace, which queries never hold (the edge refuses control characters).
QUERY_CHARS = "abcAB0 İiß日本😀\u0307\udc80\xa0\u3000-"
TEXT_CHARS = QUERY_CHARS + "\t\n\x00\x01"
WORDS = ["meeting", "uid0001", "uid0002", "coffee", "日本語", "İstanbul", "a b", "ab"]

NAMES = st.sampled_from(["alice", "Bob", "ÉVA", "日本", "a b"])
TYPES = st.sampled_from(["person", "Team", "prs"])
CONTENTS = st.one_of(
    st.sampled_from(WORDS),
    st.text(alphabet=TEXT_CHARS, max_size=8),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=3).map(" ".join),
)
QUERIES = st.one_of(
    st.text(alphabet=QUERY_CHARS, min_size=1, max_size=4),
    st.sampled_from([*WORDS, "uid000", "eeting", "ice pers", "alicep", "本語", "i̇st"]),
)
EVENTS: st.SearchStrategy[AnyEvent] = st.one_of(
    st.builds(EntityCreated, name=NAMES, entity_type=TYPES),
    st.builds(EntityUpdated, name=NAMES, entity_type=TYPES),
    st.builds(EntityDeleted, name=NAMES),
    st.builds(ObservationAdded, entity=NAMES, content=CONTENTS),
    st.builds(ObservationAdded, entity=NAMES, content=CONTENTS),
    st.builds(ObservationDeleted, entity=NAMES, content=CONTENTS),
)


def stamped(events: list[AnyEvent], after: int) -> list[Envelope]:
    return [
        Envelope(
            position=after + i, origin="n1", origin_seq=after + i, hlc=after + i, tx=after, event=e
        )
        for i, e in enumerate(events, start=1)
    ]


EDITS = st.tuples(
    st.integers(0, 79),
    st.sampled_from(["add", "add", "forget", "retype", "delete", "recreate"]),
    CONTENTS,
)


@given(
    entities=st.lists(st.tuples(TYPES, CONTENTS, CONTENTS), min_size=17, max_size=80),
    edits=st.lists(EDITS, max_size=40),
    queries=st.lists(QUERIES, min_size=1, max_size=6),
    segment_size=st.integers(1, 3),
    block=st.sampled_from([1, 3, 8, 1024]),
    buckets=st.sampled_from([3, 31, 32749]),
)
def test_a_whole_graph_build_and_a_batch_of_edits_answer_as_a_brute_force_scan(
    entities: list[tuple[str, str, str]],
    edits: list[tuple[int, str, str]],
    queries: list[str],
    segment_size: int,
    block: int,
    buckets: int,
) -> None:
    """Builds over many segments (filled a block of segments at a time) and many segments
    edited at once (recomputed together), as after a start and after a large batch."""
    graph = GraphProjection()
    events: list[AnyEvent] = []
    for i, (entity_type, first, second) in enumerate(entities):
        events += [
            EntityCreated(name=f"e{i}", entity_type=entity_type),
            ObservationAdded(entity=f"e{i}", content=first),
            ObservationAdded(entity=f"e{i}", content=second),
        ]
    graph.apply_all(stamped(events, 0))
    names = [f"e{i}" for i in range(len(entities))]
    changes: list[AnyEvent] = []
    for i, kind, content in edits:
        name = f"e{i % len(entities)}"
        changes += {
            "add": [ObservationAdded(entity=name, content=content)],
            "forget": [ObservationDeleted(entity=name, content=entities[i % len(entities)][1])],
            "retype": [EntityUpdated(name=name, entity_type=content or "t")],
            "delete": [EntityDeleted(name=name)],
            "recreate": [EntityDeleted(name=name), EntityCreated(name=name, entity_type="t")],
        }[kind]
    with patch.object(search_module, "_BLOCK", block):
        search = SearchProjection(segment_size=segment_size, buckets=buckets)
        search.note_names(graph.entity_names())
        for query in [*queries, *names]:
            assert search.search(graph, query) == substring_scan(graph, query)
        batch = stamped(changes, graph.position)
        graph.apply_all(batch)
        search.note(batch)
        for query in [*queries, *names]:
            assert search.search(graph, query) == substring_scan(graph, query)


class SearchIndexMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.graph = GraphProjection()
        self.search = SearchProjection()
        self.segment_size = 1
        self.buckets = 1
        self.clock = 0
        self.seqs = {"n1": 0, "n2": 0}

    @initialize(segment_size=st.integers(1, 4), buckets=st.sampled_from([1, 3, 31, 32749]))
    def start(self, segment_size: int, buckets: int) -> None:
        self.segment_size, self.buckets = segment_size, buckets
        self.search = SearchProjection(segment_size=segment_size, buckets=buckets)

    @rule(
        events=st.lists(EVENTS, min_size=1, max_size=4),
        origin=st.sampled_from(["n1", "n1", "n2"]),
        late=st.booleans(),
    )
    def apply(self, events: list[AnyEvent], origin: str, late: bool) -> None:
        """One command's events; a late one carries an older clock (replication)."""
        self.clock += 1
        hlc = max(1, self.clock - 5) if late else self.clock
        envelopes = []
        for event in events:
            self.seqs[origin] += 1
            envelopes.append(
                Envelope(
                    position=self.graph.position + len(envelopes) + 1,
                    origin=origin,
                    origin_seq=self.seqs[origin],
                    hlc=hlc,
                    tx=self.seqs[origin],
                    event=event,
                )
            )
        self.graph.apply_all(envelopes)
        self.search.note(envelopes)

    @rule()
    def restart(self) -> None:
        """A fresh index over the whole graph, as the writer builds one after a start."""
        self.search = SearchProjection(segment_size=self.segment_size, buckets=self.buckets)
        self.search.note_names(self.graph.entity_names())

    @rule(budget=st.integers(1, 3))
    def warm(self, budget: int) -> None:
        """A step of the warm-up the writer does while idle."""
        self.search.warm(self.graph, budget)

    @rule(data=st.data())
    def restart_then_warm_while_writing(self, data: st.DataObject) -> None:
        """A fresh index warmed a step at a time while commands keep being applied, as the
        writer does after a start; whatever is left, the next search finishes."""
        self.restart()
        for _ in range(data.draw(st.integers(0, 8))):
            if data.draw(st.booleans()):
                self.search.warm(self.graph, data.draw(st.integers(1, 3)))
            else:
                self.apply(
                    data.draw(st.lists(EVENTS, min_size=1, max_size=3)),
                    data.draw(st.sampled_from(["n1", "n2"])),
                    data.draw(st.booleans()),
                )

    @rule(query=QUERIES)
    def query(self, query: str) -> None:
        assert self.search.search(self.graph, query) == substring_scan(self.graph, query)

    @rule(data=st.data())
    def query_inside_and_across_fields(self, data: st.DataObject) -> None:
        entities = list(self.graph.entities())
        if not entities:
            return
        entity = data.draw(st.sampled_from(entities))
        fields = [entity.name, entity.entity_type, *entity.observations]
        at = data.draw(st.integers(0, len(fields) - 1))
        joint = data.draw(st.sampled_from(["", " "]))
        text = fields[at] + (joint + fields[at + 1] if at + 1 < len(fields) else "")
        start = data.draw(st.integers(0, len(fields[at])))
        end = data.draw(st.integers(start, len(text)))
        query = text[start:end].replace("\x00", "").replace("\x01", "")
        query = "".join(c for c in query if c not in "\t\n")
        if query:
            assert self.search.search(self.graph, query) == substring_scan(self.graph, query)

    @invariant()
    def every_field_and_its_ends_find_their_entity(self) -> None:
        for entity in self.graph.entities():
            for field in (entity.name, entity.entity_type, *entity.observations):
                if not field or any(c in field for c in "\t\n\x00\x01"):
                    continue
                for query in {field, field[:2], field[-3:], field[-1:]}:
                    found = self.search.search(self.graph, query)
                    assert found == substring_scan(self.graph, query)
                    assert entity.name in found


SearchIndexMachine.TestCase.settings = settings(stateful_step_count=40)
TestSearchIndexEqualsABruteForceScan = SearchIndexMachine.TestCase
