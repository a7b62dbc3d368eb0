"""SearchProjection answers exactly what the official substring scan answers, in listing order."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.commands import (
    AddObservations,
    Command,
    CreateEntities,
    DeleteEntities,
    DeleteObservations,
    EntityInput,
    ObservationDeletion,
    ObservationInput,
)
from actors.decide import decide
from actors.errors import CommandRejectedError
from eventstore.events import EntityCreated, EntityDeleted, Envelope, ObservationAdded
from projections.graph import GraphProjection
from projections.search import BUCKETS, SearchProjection, _Segment
from tests.helpers import stamp, substring_scan


def applied(graph: GraphProjection, search: SearchProjection, *batches: list[Envelope]) -> None:
    """Fold each batch into the graph and note it in the index, as the writer does."""
    for envelopes in batches:
        graph.apply_all(envelopes)
        search.note(envelopes)


class Model:
    def __init__(self) -> None:
        self.graph = GraphProjection()
        self.search = SearchProjection()

    def run(self, command: Command) -> None:
        try:
            decision = decide(self.graph, command)
        except CommandRejectedError:
            return
        start = self.graph.position + 1
        envelopes = stamp(decision.events, start_seq=start, hlc=start)
        self.graph.apply_all(envelopes)
        self.search.note(envelopes)


NAMES = st.sampled_from(["Alice", "Bob", "Carol", "Dave", "Éva", "acme"])
WORDS = st.sampled_from(["likes coffee", "works at Acme", "İstanbul", "ß", "Tea", "a", ""])
QUERIES = st.sampled_from(["", "a", "ACME", "coffee", "alice", "e", "ß", "i̇", "tea", "zzz", "b"])

commands = st.one_of(
    st.builds(
        lambda name, obs: CreateEntities(entities=[EntityInput(name, "person", obs)]),
        NAMES,
        st.lists(WORDS, max_size=3),
    ),
    st.builds(
        lambda name, obs: AddObservations(observations=[ObservationInput(name, obs)]),
        NAMES,
        st.lists(WORDS, min_size=1, max_size=2),
    ),
    st.builds(
        lambda name, obs: DeleteObservations(deletions=[ObservationDeletion(name, obs)]),
        NAMES,
        st.lists(WORDS, min_size=1, max_size=2),
    ),
    st.builds(lambda name: DeleteEntities(entity_names=[name]), NAMES),
)


@given(st.lists(st.tuples(commands, QUERIES), max_size=25))
def test_search_equals_the_official_scan_after_any_history(
    steps: list[tuple[Command, str]],
) -> None:
    model = Model()
    for command, query in steps:
        model.run(command)
        assert model.search.search(model.graph, query) == substring_scan(model.graph, query)


def test_an_entity_keeps_its_place_when_it_gains_an_observation() -> None:
    model = Model()
    for name in ["first", "second"]:
        model.run(CreateEntities(entities=[EntityInput(name, "t", ["common"])]))
    model.run(AddObservations(observations=[ObservationInput("first", ["more common"])]))
    assert model.search.search(model.graph, "common") == ["first", "second"]


def test_a_late_older_creation_from_another_node_is_listed_in_stamp_order() -> None:
    graph, search = GraphProjection(), SearchProjection()
    late = stamp(
        [EntityCreated(name="old", entity_type="t"), ObservationAdded(entity="old", content="x")],
        origin="n2",
        start_seq=1,
        hlc=5,
        start_position=3,
    )
    early = stamp(
        [EntityCreated(name="new", entity_type="t"), ObservationAdded(entity="new", content="x")],
        origin="n1",
        start_seq=1,
        hlc=10,
    )
    for batch in (early, late):
        graph.apply_all(batch)
        search.note(batch)
        search.search(graph, "x")  # refresh between arrivals
    assert search.search(graph, "x") == ["old", "new"] == substring_scan(graph, "x")


# --- the trigram filter -------------------------------------------------------------------


def indexed(*entities: tuple[str, str, list[str]], segment_size: int = 4) -> Model:
    model = Model()
    model.search = SearchProjection(segment_size=segment_size)
    for name, entity_type, observations in entities:
        model.run(CreateEntities(entities=[EntityInput(name, entity_type, observations)]))
    return model


def scanned(model: Model, query: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], int]:
    """The answer to `query` and how many segments it scanned."""
    model.search.search(model.graph, "")  # bring the index up to date first
    calls = []
    original = _Segment.matches

    def counting(segment: _Segment, needle: str) -> list[str]:
        calls.append(segment)
        return original(segment, needle)

    monkeypatch.setattr(_Segment, "matches", counting)
    found = model.search.search(model.graph, query)
    monkeypatch.setattr(_Segment, "matches", original)
    return found, len(calls)


def tokens(count: int) -> list[tuple[str, str, list[str]]]:
    return [(f"e{i}", "person", ["weekly meeting", f"badge uid{i:06d}"]) for i in range(count)]


def test_a_selective_query_scans_only_the_segments_that_may_hold_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = indexed(*tokens(400), segment_size=16)
    found, segments = scanned(model, "UID000123", monkeypatch)
    assert found == ["e123"]
    assert segments <= 2  # of 25
    assert scanned(model, "no such token", monkeypatch) == ([], 0)


def test_a_broad_query_scans_every_segment_and_finds_every_entity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = indexed(*tokens(100), segment_size=16)
    found, segments = scanned(model, "Meeting", monkeypatch)
    assert found == [f"e{i}" for i in range(100)]
    assert segments == 7


@pytest.mark.parametrize("query", ["7", "q", "12", "a b", " ", "日", "日本", "ß"])
def test_queries_shorter_than_a_trigram_in_every_word_answer_exactly(query: str) -> None:
    model = indexed(
        ("日本語", "place", ["a b c", "12 and 7"]),
        ("qa", "Straße", ["日"]),
        ("other", "thing", ["nothing short"]),
    )
    assert model.search.search(model.graph, query) == substring_scan(model.graph, query)


@pytest.mark.parametrize("query", ["alphabeta", "alpha beta", "habe", "betagamma", "ta ga"])
def test_a_query_spanning_two_fields_or_two_entities_matches_neither(query: str) -> None:
    model = indexed(("alpha", "beta", ["gamma"]), ("gamma", "delta", []), segment_size=8)
    assert model.search.search(model.graph, query) == []


def test_an_edited_entity_is_found_by_its_new_text_and_not_its_old_one() -> None:
    model = indexed(*tokens(20), segment_size=4)
    model.search.search(model.graph, "")
    model.run(AddObservations(observations=[ObservationInput("e7", ["moved to Zanzibar"])]))
    model.run(DeleteObservations(deletions=[ObservationDeletion("e8", ["badge uid000008"])]))
    assert model.search.search(model.graph, "zanzibar") == ["e7"]
    assert model.search.search(model.graph, "uid000008") == []
    assert model.search.search(model.graph, "uid000007") == ["e7"]


def test_deleted_entities_leave_the_filter_once_their_segment_is_recomputed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = indexed(*tokens(16), segment_size=4)
    model.search.search(model.graph, "")
    model.run(DeleteEntities(entity_names=["e4", "e5"]))
    assert scanned(model, "uid000004", monkeypatch) == ([], 0)  # two of four: recomputed
    model.run(DeleteEntities(entity_names=["e8"]))
    assert scanned(model, "uid000008", monkeypatch) == ([], 1)  # one stale text: kept for now


def test_a_fresh_index_over_the_whole_graph_answers_as_the_one_that_followed_it() -> None:
    model = indexed(*tokens(50), segment_size=8)
    model.run(DeleteEntities(entity_names=["e3", "e30"]))
    model.run(CreateEntities(entities=[EntityInput("e3", "robot", ["back again"])]))
    rebuilt = SearchProjection(segment_size=8)
    rebuilt.note_names(model.graph.entity_names())
    for query in ["uid00003", "e3", "robot", "meeting", "uid000030", "again", "e"]:
        expected = substring_scan(model.graph, query)
        assert rebuilt.search(model.graph, query) == expected
        assert model.search.search(model.graph, query) == expected


def test_the_filter_holds_one_bit_per_segment_in_at_most_every_bucket() -> None:
    model = indexed(*tokens(1000), segment_size=16)
    model.search.search(model.graph, "")
    segments = 1000 // 16 + 1
    bound = sys.getsizeof([0] * BUCKETS) + BUCKETS * (sys.getsizeof(1 << segments))
    assert 0 < model.search.filter_bytes() <= bound


def test_a_recreated_entity_is_listed_last() -> None:
    model = indexed(("first", "t", ["common"]), ("second", "t", ["common"]))
    assert model.search.search(model.graph, "common") == ["first", "second"]
    model.run(DeleteEntities(entity_names=["first"]))
    model.run(CreateEntities(entities=[EntityInput("first", "t", ["common again"])]))
    assert model.search.search(model.graph, "common") == ["second", "first"]


def test_a_late_creation_older_than_an_alive_entity_leaves_it_in_its_place() -> None:
    graph, search = GraphProjection(), SearchProjection()
    for name, hlc in (("a", 2), ("b", 3)):
        batch = stamp(
            [EntityCreated(name=name, entity_type="t"), ObservationAdded(entity=name, content="x")],
            start_seq=hlc,
            hlc=hlc,
        )
        graph.apply_all(batch)
        search.note(batch)
    assert search.search(graph, "x") == ["a", "b"]
    late = stamp([EntityCreated(name="a", entity_type="u")], origin="n2", hlc=1, start_position=9)
    applied(graph, search, late)
    assert search.search(graph, "x") == ["a", "b"] == substring_scan(graph, "x")


def test_a_query_longer_than_the_filter_reads_is_answered_exactly() -> None:
    long = "word " * 100 + "tail"
    model = indexed(("a", "t", [long]), ("b", "t", ["word " * 100 + "other"]))
    assert model.search.search(model.graph, long) == ["a"]


def test_a_late_observation_before_one_that_is_its_prefix_is_found() -> None:
    """Bob with "c" is indexed, then an older "coffee" arrives (replication) and sorts first:
    the text "bob NUL person NUL c" becomes "... NUL coffee NUL c", which starts with the old
    text without merely extending it."""
    graph, search = GraphProjection(), SearchProjection(segment_size=1, buckets=31)
    applied(
        graph,
        search,
        stamp([EntityCreated(name="Bob", entity_type="person")], start_seq=1, hlc=1),
        stamp([ObservationAdded(entity="Bob", content="c")], start_seq=2, hlc=5),
    )
    assert search.search(graph, "c") == ["Bob"]
    late = stamp([ObservationAdded(entity="Bob", content="coffee")], start_seq=3, hlc=3)
    applied(graph, search, late)

    assert graph.observations("Bob") == ["coffee", "c"]
    assert search.search(graph, "coffee") == substring_scan(graph, "coffee") == ["Bob"]


def test_an_entity_that_comes_alive_older_during_a_warm_up_keeps_the_listing_order() -> None:
    """A warm-up step indexes alice; then 日本, deleted before, is created again with an older
    stamp (replication): it lists first, and the search answers in that order."""
    graph, search = GraphProjection(), SearchProjection(segment_size=1, buckets=1)
    applied(
        graph,
        search,
        stamp([EntityCreated(name="alice", entity_type="person")], start_seq=1, hlc=5),
        # A late deletion of a name never seen: its record goes after alice's.
        stamp([EntityDeleted(name="日本")], start_seq=2, hlc=1),
    )
    assert search.warm(graph, 1)  # alice indexed, the listing not finished
    late = stamp([EntityCreated(name="日本", entity_type="person")], start_seq=3, hlc=3)
    applied(graph, search, late)

    assert search.search(graph, "person") == substring_scan(graph, "person") == ["日本", "alice"]


def test_entities_created_during_a_warm_up_are_placed_in_creation_order() -> None:
    """The warm-up indexes Bob; then 日本, deleted before, is created again with a stamp between
    Bob's and alice's: it lists between them, and the search answers in that order (segments
    of three, so the build would otherwise meet alice and 日本 in one segment)."""
    graph, search = GraphProjection(), SearchProjection(segment_size=3, buckets=1)
    applied(
        graph,
        search,
        stamp([EntityCreated(name="Bob", entity_type="person")], start_seq=1, hlc=2),
        stamp([EntityCreated(name="alice", entity_type="person")], start_seq=2, hlc=6),
        stamp([EntityDeleted(name="日本")], start_seq=3, hlc=1),
    )
    assert search.warm(graph, 1)  # Bob read, the listing not finished
    late = stamp([EntityCreated(name="日本", entity_type="person")], start_seq=4, hlc=4)
    applied(graph, search, late)

    listed = substring_scan(graph, "person")
    assert search.search(graph, "person") == listed == ["Bob", "日本", "alice"]


@given(
    st.lists(
        st.sampled_from(["tea", "teatea", "coffee", "", "te", "a tea"]), min_size=1, max_size=9
    ),
    st.sampled_from(["tea", "te", "a", "coffee", "ea"]),
)
def test_a_segment_lists_each_text_holding_the_needle_once_in_order(
    texts: list[str], needle: str
) -> None:
    # Hits in adjacent texts, texts skipped between hits, several hits in one text.
    names = [f"n{i}" for i in range(len(texts))]
    segment = _Segment(0, names, list(texts))
    expected = [name for name, text in zip(names, texts, strict=True) if needle in text]
    assert segment.matches(needle) == expected


def test_a_built_index_holds_each_segment_as_one_packed_string_before_any_search() -> None:
    # A string per entity, left until a search scanned its segment, was ~220 bytes an entity
    # at a million against ~150 packed: a served graph's selective searches scan few.
    model = indexed(*tokens(40), segment_size=8)
    rebuilt = SearchProjection(segment_size=8)
    rebuilt.note_names(model.graph.entity_names())
    while rebuilt.warm(model.graph):
        pass
    segments = rebuilt._segments
    assert len(segments) == 5
    assert all(s.texts is None and s.joined is not None and s.fresh == [] for s in segments)
    for query in ["uid000017", "meeting", "e3", "person", "nothing"]:
        assert rebuilt.search(model.graph, query) == substring_scan(model.graph, query)


def test_a_built_index_keys_its_names_by_segment_only_once_an_edit_needs_them() -> None:
    # A dict slot an entity (~30 MiB at a million), needed only to place an edit.
    model = indexed(*tokens(40), segment_size=8)
    rebuilt = SearchProjection(segment_size=8)
    rebuilt.note_names(model.graph.entity_names())
    assert rebuilt.search(model.graph, "uid000012") == ["e12"]
    assert rebuilt._where is None

    model.search = rebuilt
    model.run(DeleteEntities(entity_names=["e12"]))
    model.run(CreateEntities(entities=[EntityInput("e41", "robot", ["uid000012 again"])]))
    model.run(AddObservations(observations=[ObservationInput("e3", ["robot friend"])]))
    for query in ["uid000012", "robot", "meeting", "e3", "e41"]:
        assert rebuilt.search(model.graph, query) == substring_scan(model.graph, query)
    assert rebuilt._where is not None and "e41" in rebuilt._where and "e12" not in rebuilt._where


def test_a_segment_that_writes_filled_is_packed_once_the_next_one_begins() -> None:
    # Appended one by one (a server filled through writes), a full segment held a string per
    # entity until a search scanned it; appends never go back to it, so it is packed.
    model = Model()
    model.search = SearchProjection(segment_size=8)
    for name, entity_type, observations in tokens(20):
        model.run(CreateEntities(entities=[EntityInput(name, entity_type, observations)]))
        assert model.search.search(model.graph, "qqqqq") == []  # scans no segment
    segments = model.search._segments
    assert len(segments) == 3
    assert all(s.texts is None and s.joined is not None for s in segments[:2])
    assert segments[2].texts is not None and len(segments[2].names) == 4
    for query in ["uid000017", "meeting", "e3", "person", "nothing"]:
        assert model.search.search(model.graph, query) == substring_scan(model.graph, query)
    # An edit of a packed segment unpacks it; the answers stay the scan's.
    model.run(AddObservations(observations=[ObservationInput("e3", ["robot friend"])]))
    model.run(DeleteEntities(entity_names=["e5"]))
    for query in ["robot", "e5", "meeting", "uid000003"]:
        assert model.search.search(model.graph, query) == substring_scan(model.graph, query)
