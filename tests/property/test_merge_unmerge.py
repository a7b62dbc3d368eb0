"""graph_merge then graph_unmerge of the edges the merge moved gives the two entities' edges
back (issue 15, item 4).

Precisely, for any graph of graph_relate writes (supersession, symmetric types, self-loops,
re-assertions included), merging S into T and then splitting S off T again under S's own name
(the merge left it as T's alias; the split takes it back) with edges_to_move naming every edge
the merge moved:

- every edge of S that the merge moved is S's again under its old key, with its weight,
  properties, validity window, provenance, evidence, ingested_at and last_confirmed unchanged,
  and S has no other edge (unless another of S's edges was consolidated into it on T: the
  memory family can hold both directions of a symmetric type; it comes back consolidated);
- every edge of T that the merge did not touch is unchanged;
- what is not restored: the edges between S and T (dropped by the merge), and S's edges that
  the merge consolidated into one of T's: T's edge keeps the larger weight, the earlier
  ingested_at and last_confirmed at the merge, its other attributes its own. Entity attributes
  are not restored either (S comes back as a new entity; T keeps the summed mentions, the
  larger confidence and the adopted property keys).

The expected outcome is computed from a model of the merge's edge rule, independently of it.
A dry run, on the same graphs, answers exactly what the merge then does.
"""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from actors.commands import CreateRelations, RelationInput
from actors.decide import decide
from actors.graph_commands import BatchEntity, GraphRelate, GraphRelateBatch, Provenance
from actors.graph_merge_commands import EdgeToMove, GraphMerge, GraphUnmerge
from projections.graph import GraphProjection, RelationDetails, RelationKey, RelationView
from projections.naming import SYMMETRIC_RELATION_TYPES
from tests.actors.graph_support import DAY, T0, run_at

S, T = "Sam", "Tom"
NAMES = [S, T, "Xa", "Xb"]
HOUR = 3_600_000
MERGED_AT = T0 + 2 * DAY

Edge = tuple[RelationView, RelationDetails]

WRITES = st.lists(
    st.tuples(
        st.sampled_from(NAMES),
        st.sampled_from(NAMES),
        st.sampled_from(["WORKS_ON", "KNOWS", "USES", "ALIAS_OF"]),
        st.sampled_from([0.2, 0.4, 0.6, 0.8, 1.0]),
        st.sampled_from([None, "2025-01-01", "2025-06-01"]),
        st.sampled_from([None, "said so"]),
        st.sampled_from([None, "s1"]),
        st.sampled_from([False, False, True]),  # written by the memory family instead
    ),
    min_size=1,
    max_size=12,
)


Write = tuple[str, str, str, float, str | None, str | None, str | None, bool]


def written(writes: list[Write]) -> GraphProjection:
    """The writes at an hour each; the memory family's spell the relation in lower case (its
    edges weigh 1.0, and both directions of a symmetric type can exist)."""
    graph = GraphProjection()
    people = [BatchEntity(local_id=n, name=n, entity_type="Person") for n in NAMES]
    run_at(graph, GraphRelateBatch(entities=people), T0)
    for hour, write in enumerate(writes):
        source, target, relation, weight, valid_at, evidence, session, memory = write
        at = T0 + (hour + 1) * HOUR
        if memory:
            run_at(graph, CreateRelations([RelationInput(source, target, relation.lower())]), at)
            continue
        command = GraphRelate(
            from_name=source,
            from_type="Person",
            to_name=target,
            to_type="Person",
            relation=relation,
            weight=weight,
            valid_at=valid_at,
            evidence=evidence,
            provenance=Provenance(source_session=session),
        )
        run_at(graph, command, at)
    return graph


def edges_of(graph: GraphProjection, name: str) -> dict[RelationKey, Edge]:
    found: dict[RelationKey, Edge] = {}
    for view in graph.relations_of(name):
        key = (view.from_entity, view.to_entity, view.relation_type)
        details = graph.relation_details(*key)
        assert details is not None
        found[key] = (view, details)
    return found


def model_merge(
    sam: dict[RelationKey, Edge], tom: dict[RelationKey, Edge]
) -> tuple[list[RelationKey], dict[RelationKey, list[Edge]]]:
    """The merge's edge rule: S's edges in creation order, each dropped (between S and T),
    consolidated into the key T already holds (either direction for a symmetric type), or
    moved. Returns the moved keys (as on S) and, per key on T (one of T's own, or one S's
    edge was moved to), the S edges folded into it."""
    holds = set(tom)
    moved: list[RelationKey] = []
    folded: dict[RelationKey, list[Edge]] = {}
    for key, edge in sam.items():
        if {key[0], key[1]} == {S, T}:
            continue
        new = (T if key[0] == S else key[0], T if key[1] == S else key[1], key[2])
        reverse = (new[1], new[0], new[2])
        if new in holds:
            folded.setdefault(new, []).append(edge)
        elif key[2].upper() in SYMMETRIC_RELATION_TYPES and reverse in holds:
            folded.setdefault(reverse, []).append(edge)
        else:
            holds.add(new)
            moved.append(key)
    return moved, folded


def consolidated(edges: list[Edge]) -> Edge:
    """The target's edge (first) with the others folded in: the larger weight, the earlier
    ingestion, confirmed at the merge."""
    (view, details), weight = edges[0], max(v.weight for v, _ in edges)
    return (
        msgspec.structs.replace(view, weight=weight),
        msgspec.structs.replace(
            details,
            ingested_at=min(d.ingested_at for _, d in edges),
            last_confirmed=MERGED_AT,
        ),
    )


def item(key: RelationKey) -> EdgeToMove:
    """The unmerge item naming S's old edge `key` as the merge left it on T."""
    on_tom = (T if key[0] == S else key[0], T if key[1] == S else key[1], key[2])
    if on_tom[0] == T:
        return EdgeToMove(other_entity_id=on_tom[1], relation_type=key[2], direction="out")
    return EdgeToMove(other_entity_id=on_tom[0], relation_type=key[2], direction="in")


@given(WRITES)
def test_merge_then_unmerge_of_the_moved_edges_gives_the_two_entities_edges_back(
    writes: list[Write],
) -> None:
    graph = written(writes)
    sam, tom = edges_of(graph, S), edges_of(graph, T)
    moved, folded = model_merge(sam, tom)

    run_at(graph, GraphMerge(source_id=S, target_id=T, reason="same"), MERGED_AT)
    command = GraphUnmerge(
        entity_id=T,
        new_entity_name=S,
        new_entity_type="Person",
        edges_to_move=[item(key) for key in moved],
        reason="not the same",
    )
    run_at(graph, command, MERGED_AT + DAY)

    expected_sam: dict[RelationKey, Edge] = {}
    for key in moved:
        on_tom = (T if key[0] == S else key[0], T if key[1] == S else key[1], key[2])
        folded_in = folded.get(on_tom, [])
        expected_sam[key] = consolidated([sam[key], *folded_in]) if folded_in else sam[key]
    assert edges_of(graph, S) == expected_sam
    expected_tom: dict[RelationKey, Edge] = {}
    for key, edge in tom.items():
        if {key[0], key[1]} == {S, T}:
            continue  # dropped by the merge
        expected_tom[key] = edge if key not in folded else consolidated([edge, *folded[key]])
    assert edges_of(graph, T) == expected_tom


@given(WRITES)
def test_a_dry_run_writes_nothing_and_answers_exactly_what_the_merge_then_does(
    writes: list[Write],
) -> None:
    graph = written(writes)
    dry_run = GraphMerge(source_id=S, target_id=T, reason="r", dry_run=True)
    dry = decide(graph, dry_run, now_ms=MERGED_AT)
    real = run_at(graph, GraphMerge(source_id=S, target_id=T, reason="r"), MERGED_AT)
    assert dry.events == []
    assert dry.result == msgspec.structs.replace(real, dry_run=True)
