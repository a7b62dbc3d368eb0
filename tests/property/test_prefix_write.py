"""The compiled writers of a plain prefix's checkpoints (projections/_prefix_write.c) against
their Python twins and the fold.

For any log of tests/property/test_plain_prefix.py, each implementation writes the fold's
snapshots byte for byte. For any columns (not only those a log gives: strings on either side
of every msgpack str length, non-ASCII, repeated names and contents, stamps at the ends of
int64, empty columns, origins written to again), the two write the same bytes; past 65,535
items (a 32-bit map or array header) too. Columns that do not fit together are refused with an
exception, never read past their end.
"""

from __future__ import annotations

import os
import subprocess
import sys
from array import array

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eventstore.events import Envelope
from projections.graph import PrefixGraph, prefix_snapshot, relation_keys
from projections.prefix_conflicts import conflicts_snapshot
from projections.prefix_write import COMPILED
from tests.property.test_plain_prefix import MODELS, every_case, folded, logs, read_directly

try:
    from projections import _prefix_write
except ImportError:  # not built: only the Python writers are tested
    _prefix_write = None  # type: ignore[assignment]

BOTH = [
    pytest.param(False, id="python"),
    pytest.param(
        True,
        id="compiled",
        marks=pytest.mark.skipif(_prefix_write is None, reason="the C writers are not built"),
    ),
]
needs_compiled = pytest.mark.skipif(_prefix_write is None, reason="the C writers are not built")
# Every msgpack int width's edges (fixint, 8, 16, 32, 64 bits, either sign), then any int64.
EDGES = [0, 127, 128, 255, 256, 65_535, 65_536, 2**32 - 1, 2**32, 2**63 - 1]
EDGES += [-1, -32, -33, -128, -129, -(2**15), -(2**15) - 1, -(2**31), -(2**31) - 1, -(2**63)]
INT64 = st.sampled_from(EDGES) | st.integers(-(2**63), 2**63 - 1)
# Lengths on either side of msgpack's str limits (fixstr 31, str8 255, str16 65,535 bytes).
LENGTHS = [0, 1, 31, 32, 255, 256, 65_535, 65_536]
STRINGS = st.one_of(
    st.sampled_from(["a", "b", "", "Zoë", "名前", "x" * 40]),
    st.text(max_size=40),
    st.builds(str.__mul__, st.sampled_from(["a", "é", "名", "🙂"]), st.sampled_from(LENGTHS)),
)


def both_snapshots(graph: PrefixGraph, compiled: bool) -> dict[str, bytes]:
    return {
        "graph": prefix_snapshot(graph, compiled=compiled),
        "conflicts": conflicts_snapshot(graph, compiled=compiled),
    }


@pytest.mark.parametrize("compiled", BOTH)
@settings(max_examples=300, deadline=None)
@given(envelopes=logs(), chunks=st.lists(st.integers(1, 30), max_size=8))
@example(envelopes=every_case(), chunks=[4])
def test_each_writer_writes_the_fold_s_graph_and_conflicts_snapshots_byte_for_byte(
    compiled: bool, envelopes: list[Envelope], chunks: list[int]
) -> None:
    prefix = read_directly(envelopes, chunks)
    fold = folded(envelopes[: prefix.position])
    written = both_snapshots(prefix.graph, compiled)
    assert written["graph"] == fold["graph"]
    assert written["conflicts"] == fold["conflicts"]
    assert {model.name for model in MODELS} >= set(written)


@st.composite
def columns(draw: st.DrawFn) -> PrefixGraph:
    """A PrefixGraph's columns as the scan could fill them and past it: any strings, any
    stamps, contents and relation keys written again (by the same origin or another)."""
    origins = [
        "",
        *draw(st.lists(STRINGS, max_size=3, unique=True).map(lambda o: [s for s in o if s])),
    ]
    names = draw(st.lists(STRINGS, max_size=12))
    n = len(names)
    stubs = sorted(draw(st.sets(st.integers(0, n - 1), max_size=n))) if n else []
    graph = PrefixGraph(position=draw(st.integers(0, 2**63 - 1)), origins=origins, names=names)
    graph.stubs = stubs
    graph.types = draw(st.lists(STRINGS, min_size=n, max_size=n))
    origin = st.integers(0, len(origins) - 1)
    for _ in range(n):
        graph.entity_hlc.append(draw(INT64))
        graph.entity_origin.append(draw(origin))
        graph.entity_seq.append(draw(INT64))
    if n:
        contents = st.one_of(st.sampled_from(["x", "y", "é"]), STRINGS)
        for entity, content in draw(
            st.lists(st.tuples(st.integers(0, n - 1), contents), max_size=30)
        ):
            graph.observed.append(entity)
            graph.contents.append(content)
            graph.observation_hlc.append(draw(INT64))
            graph.observation_origin.append(draw(origin))
            graph.observation_seq.append(draw(INT64))
        keys = st.tuples(
            st.integers(0, n - 1), st.integers(0, n - 1), st.sampled_from(["r", "s", "ü" * 40])
        )
        for source, target, kind in draw(st.lists(keys, max_size=30)):
            graph.sources.append(source)
            graph.targets.append(target)
            graph.relation_types.append(kind)
            graph.relation_hlc.append(draw(INT64))
            graph.relation_origin.append(draw(origin))
            graph.relation_seq.append(draw(INT64))
    kinds = [0] * (n - len(stubs)) + [1] * len(graph.observed) + [2] * len(graph.sources)
    graph.kinds = array("b", draw(st.permutations(kinds)))
    return graph


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(columns())
def test_the_compiled_and_python_writers_write_the_same_bytes_for_any_columns(
    graph: PrefixGraph,
) -> None:
    assert both_snapshots(graph, compiled=True) == both_snapshots(graph, compiled=False)


@needs_compiled
@settings(max_examples=200, deadline=None)
@given(columns())
def test_the_compiled_and_sorted_relation_keys_name_the_same_first_and_last_rows(
    graph: PrefixGraph,
) -> None:
    compiled, python = relation_keys(graph, compiled=True), relation_keys(graph, compiled=False)
    assert [c.tolist() for c in compiled] == [p.tolist() for p in python]


def big_graph(entities: int, observations: int) -> PrefixGraph:
    """Past 65,535 entries of the conflicts map and one entity's occurrence arrays."""
    graph = PrefixGraph(position=2**40, origins=["", "n1", "n2"])
    for i in range(entities):
        graph.names.append(f"entity-{i}")
        graph.types.append("t")
        graph.entity_hlc.append(i)
        graph.entity_origin.append(1)
        graph.entity_seq.append(i + 1)
    for i in range(observations):
        graph.observed.append(0)
        graph.contents.append(f"note {i % (observations // 2)}")  # each written twice
        graph.observation_hlc.append(entities + i)
        graph.observation_origin.append(1 if i < observations // 2 else 2)  # again: a dict
        graph.observation_seq.append(i)
    graph.kinds = array("b", [0] * entities + [1] * observations)
    return graph


@needs_compiled
def test_past_65535_items_the_writers_agree_on_the_32_bit_headers() -> None:
    graph = big_graph(70_000, 140_000)
    compiled = both_snapshots(graph, compiled=True)
    assert compiled == both_snapshots(graph, compiled=False)
    assert b"\xdf" in compiled["conflicts"][:12]  # the map: 70,000 entities + 70,000 contents


@needs_compiled
@pytest.mark.parametrize(
    ("column", "value", "error"),
    [
        ("observed", 99, IndexError),  # an entity index past the names
        ("sources", -1, IndexError),
        ("observation_origin", 7, IndexError),  # an origin id past the origins
    ],
)
def test_an_index_past_its_column_is_an_error_not_a_read_past_the_buffer(
    column: str, value: int, error: type[Exception]
) -> None:
    graph = big_graph(3, 4)
    graph.sources.append(0)
    graph.targets.append(1)
    graph.relation_types.append("r")
    graph.relation_hlc.append(10)
    graph.relation_origin.append(1)
    graph.relation_seq.append(10)
    graph.kinds.append(2)
    getattr(graph, column)[0] = value
    with pytest.raises(error):
        conflicts_snapshot(graph, compiled=True)


@needs_compiled
def test_columns_of_different_lengths_are_refused_with_a_value_error() -> None:
    graph = big_graph(3, 4)
    graph.observation_seq.pop()
    with pytest.raises(ValueError, match="observation_seq"):
        conflicts_snapshot(graph, compiled=True)
    graph = big_graph(3, 4)
    graph.kinds.append(1)
    with pytest.raises(ValueError, match="kinds"):
        conflicts_snapshot(graph, compiled=True)


@needs_compiled
def test_occurrences_that_do_not_fit_their_entities_are_refused() -> None:
    assert _prefix_write is not None
    stamps = (array("q", [1]), array("q", [1]), array("q", [1]))
    with pytest.raises(ValueError, match="ends"):
        _prefix_write.pack_occurrences(["x"], array("q", [0]), array("q", [2]), stamps)
    with pytest.raises(IndexError, match="order"):
        _prefix_write.pack_occurrences(["x"], array("q", [5]), array("q", [1]), stamps)
    with pytest.raises(TypeError, match="int64"):
        _prefix_write.pack_occurrences(["x"], array("i", [0]), array("q", [1]), stamps)


def test_graphmem_pure_python_makes_the_python_writers_the_default() -> None:
    probe = "from projections.prefix_write import COMPILED; print(COMPILED is None)"
    env = {**os.environ, "GRAPHMEM_PURE_PYTHON": "1"}
    ran = subprocess.run(
        [sys.executable, "-c", probe],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert ran.stdout.strip() == "True"
    if _prefix_write is not None and os.environ.get("GRAPHMEM_PURE_PYTHON") != "1":
        assert COMPILED is _prefix_write


@needs_compiled
def test_the_compiled_writers_run_a_thousand_times_hold_no_memory_and_no_references() -> None:
    # A reference or buffer the C code forgot shows up here as traced memory that grows with
    # the runs, or as a string's reference count that moved; failures take their own paths.
    import tracemalloc  # noqa: PLC0415 (this test's alone)

    assert _prefix_write is not None
    graph = big_graph(40, 60)
    broken = big_graph(3, 4)
    broken.observed[1] = 99
    held = [graph.names, graph.names[0], graph.contents, graph.contents[0], graph.kinds]
    counts = list(map(sys.getrefcount, held))

    def run() -> None:
        _prefix_write.conflicts_snapshot(graph)
        prefix_snapshot(graph, compiled=True)
        try:
            _prefix_write.conflicts_snapshot(broken)
        except IndexError:
            return
        raise AssertionError("an index past the names was written")

    def growth_by_window(windows: int, runs: int) -> list[int]:
        grown = []
        last = tracemalloc.get_traced_memory()[0]
        for _ in range(windows):
            for _ in range(runs):
                run()
            now = tracemalloc.get_traced_memory()[0]
            grown.append(now - last)
            last = now
        return grown

    tracemalloc.start()
    try:
        growth_by_window(1, 200)  # caches filled (UTF-8 of strings, numpy's, the allocator's)
        grown = growth_by_window(4, 1000)
    finally:
        tracemalloc.stop()
    # A leak grows every window by its bytes a run times 1000; what warms up later (the
    # interpreter's specialising, a test runner's own thread, which tracemalloc traces too)
    # grows one window or two by a few KiB and then stops, so the quietest window decides.
    assert min(grown) < 2048, grown  # a leak of even 4 bytes a run would be past this
    assert list(map(sys.getrefcount, held)) == counts


class Noisy(str):
    """A str whose comparison runs Python code (which could change the lists being read)."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)


@needs_compiled
def test_strings_that_are_not_plain_str_are_refused_before_any_of_their_code_runs() -> None:
    graph = big_graph(3, 4)
    graph.contents[0] = Noisy(graph.contents[0])
    with pytest.raises(TypeError, match="str"):
        conflicts_snapshot(graph, compiled=True)
    graph = big_graph(3, 4)
    graph.origins[1] = Noisy("n1")
    with pytest.raises(TypeError, match="origins"):
        conflicts_snapshot(graph, compiled=True)
