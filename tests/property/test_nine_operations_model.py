"""The six official mutations, decided and folded, behave like a plain model of the official
server's main branch: lists of entities (each with its observation list) and of relations, in
creation order. After every step the whole graph, open_nodes-style neighbourhoods and the
command's result must match the model's."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from actors.commands import (
    AddObservations,
    AddObservationsResult,
    AddObservationsResultItem,
    CommandResult,
    CreateEntities,
    CreateEntitiesResult,
    CreateRelations,
    CreateRelationsResult,
    DeleteEntities,
    DeleteEntitiesResult,
    DeleteObservations,
    DeleteObservationsResult,
    DeleteRelations,
    DeleteRelationsResult,
    EntityInput,
    ObservationDeletion,
    ObservationInput,
    RelationInput,
)
from actors.errors import CommandRejectedError
from projections.graph import EntityView, GraphProjection, RelationView
from tests.helpers import run

NAMES = st.sampled_from(["A", "B", "C", "D"])
CONTENTS = st.sampled_from(["x", "y", "z"])
TYPES = st.sampled_from(["t1", "t2"])
RELATION_TYPES = st.sampled_from(["r", "s"])
BATCH = 4

ENTITY_INPUTS = st.builds(EntityInput, NAMES, TYPES, st.lists(CONTENTS, max_size=3))
RELATION_INPUTS = st.builds(RelationInput, NAMES, NAMES, RELATION_TYPES)
OBSERVATION_INPUTS = st.builds(ObservationInput, NAMES, st.lists(CONTENTS, max_size=3))
DELETIONS = st.builds(ObservationDeletion, NAMES, st.lists(CONTENTS, max_size=3))

Triple = tuple[str, str, str]


class ModelRejectedError(Exception):
    pass


@dataclass
class Entity:
    name: str
    entity_type: str
    observations: list[str]


@dataclass
class Model:
    """The official KnowledgeGraphManager (main branch), minus the file."""

    entities: list[Entity] = field(default_factory=list)
    relations: list[Triple] = field(default_factory=list)

    def find(self, name: str) -> Entity | None:
        return next((e for e in self.entities if e.name == name), None)

    def create_entities(self, inputs: list[EntityInput]) -> CreateEntitiesResult:
        created = [
            e
            for index, e in enumerate(inputs)
            if self.find(e.name) is None and all(p.name != e.name for p in inputs[:index])
        ]
        self.entities += [Entity(e.name, e.entity_type, list(e.observations)) for e in created]
        skipped = [e.name for e in inputs if not any(c is e for c in created)]
        return CreateEntitiesResult(created, skipped)

    def create_relations(self, inputs: list[RelationInput]) -> CreateRelationsResult:
        for r in inputs:
            for end in (r.from_entity, r.to_entity):
                if self.find(end) is None:
                    raise ModelRejectedError(f"Entity with name {end} not found")
        created: list[RelationInput] = []
        skipped: list[RelationInput] = []
        for r in inputs:
            triple = (r.from_entity, r.to_entity, r.relation_type)
            seen = [(c.from_entity, c.to_entity, c.relation_type) for c in created]
            (skipped if triple in self.relations or triple in seen else created).append(r)
        self.relations += [(r.from_entity, r.to_entity, r.relation_type) for r in created]
        return CreateRelationsResult(created, skipped)

    def add_observations(self, inputs: list[ObservationInput]) -> AddObservationsResult:
        staged = [Entity(e.name, e.entity_type, list(e.observations)) for e in self.entities]
        results = []
        for item in inputs:
            entity = next((e for e in staged if e.name == item.entity_name), None)
            if entity is None:
                raise ModelRejectedError(f"Entity with name {item.entity_name} not found")
            added = [c for c in item.contents if c not in entity.observations]
            entity.observations += added
            results.append(AddObservationsResultItem(item.entity_name, added))
        self.entities = staged  # all or nothing
        return AddObservationsResult(results)

    def delete_entities(self, names: list[str]) -> DeleteEntitiesResult:
        distinct = list(dict.fromkeys(names))
        deleted = [n for n in distinct if self.find(n) is not None]
        not_found = [n for n in distinct if self.find(n) is None]
        self.entities = [e for e in self.entities if e.name not in names]
        self.relations = [r for r in self.relations if r[0] not in names and r[1] not in names]
        return DeleteEntitiesResult(len(names), len(deleted), not_found)

    def delete_observations(self, deletions: list[ObservationDeletion]) -> DeleteObservationsResult:
        requested = sum(len(d.observations) for d in deletions)
        deleted: set[tuple[str, str]] = set()
        not_found: list[str] = []
        for d in deletions:
            entity = self.find(d.entity_name)
            if entity is None:
                if d.entity_name not in not_found:
                    not_found.append(d.entity_name)
                continue
            deleted |= {(entity.name, o) for o in d.observations if o in entity.observations}
            entity.observations = [o for o in entity.observations if o not in d.observations]
        return DeleteObservationsResult(requested, len(deleted), not_found)

    def delete_relations(self, inputs: list[RelationInput]) -> DeleteRelationsResult:
        listed = {(r.from_entity, r.to_entity, r.relation_type) for r in inputs}
        before = len(self.relations)
        self.relations = [r for r in self.relations if r not in listed]
        return DeleteRelationsResult(len(inputs), before - len(self.relations))


class NineOperations(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.graph = GraphProjection()

    def check(self, command: object, expected: CommandResult | ModelRejectedError) -> None:
        before = self.graph.snapshot()
        try:
            result: CommandResult | ModelRejectedError = run(self.graph, command)  # type: ignore[arg-type]
        except CommandRejectedError as rejection:
            result = ModelRejectedError(rejection.message)
            assert self.graph.snapshot() == before, "a rejected command wrote something"
        if isinstance(expected, ModelRejectedError):
            assert isinstance(result, ModelRejectedError), result
            assert str(result) == str(expected)
        else:
            assert result == expected

    def model_says(self, operation: object, inputs: object) -> CommandResult | ModelRejectedError:
        try:
            return operation(inputs)  # type: ignore[operator,no-any-return]
        except ModelRejectedError as rejection:
            return rejection

    @rule(inputs=st.lists(ENTITY_INPUTS, max_size=BATCH))
    def create_entities(self, inputs: list[EntityInput]) -> None:
        self.check(CreateEntities(inputs), self.model_says(self.model.create_entities, inputs))

    @rule(inputs=st.lists(RELATION_INPUTS, max_size=BATCH))
    def create_relations(self, inputs: list[RelationInput]) -> None:
        self.check(CreateRelations(inputs), self.model_says(self.model.create_relations, inputs))

    @rule(inputs=st.lists(OBSERVATION_INPUTS, max_size=BATCH))
    def add_observations(self, inputs: list[ObservationInput]) -> None:
        self.check(AddObservations(inputs), self.model_says(self.model.add_observations, inputs))

    @rule(names=st.lists(NAMES, max_size=BATCH))
    def delete_entities(self, names: list[str]) -> None:
        self.check(DeleteEntities(names), self.model_says(self.model.delete_entities, names))

    @rule(inputs=st.lists(DELETIONS, max_size=BATCH))
    def delete_observations(self, inputs: list[ObservationDeletion]) -> None:
        expected = self.model_says(self.model.delete_observations, inputs)
        self.check(DeleteObservations(inputs), expected)

    @rule(inputs=st.lists(RELATION_INPUTS, max_size=BATCH))
    def delete_relations(self, inputs: list[RelationInput]) -> None:
        self.check(DeleteRelations(inputs), self.model_says(self.model.delete_relations, inputs))

    @invariant()
    def the_whole_graph_matches(self) -> None:
        assert list(self.graph.entities()) == [
            EntityView(e.name, e.entity_type, e.observations) for e in self.model.entities
        ]
        assert list(self.graph.relations()) == [RelationView(*r) for r in self.model.relations]
        assert self.graph.entity_count() == len(self.model.entities)
        assert self.graph.relation_count() == len(self.model.relations)

    @invariant()
    def open_nodes_neighbourhoods_match(self) -> None:
        for names in (["A"], ["B"], ["C"], ["D"], ["A", "C"], ["B", "D", "B"]):
            found = {e.name for e in self.model.entities if e.name in names}
            expected = [RelationView(*r) for r in self.model.relations if {r[0], r[1]} & found]
            assert self.graph.relations_of_any(names) == expected

    @invariant()
    def point_reads_match(self) -> None:
        for name in ("A", "B", "C", "D"):
            entity = self.model.find(name)
            assert self.graph.has_entity(name) == (entity is not None)
            assert self.graph.observations(name) == (entity.observations if entity else [])


NineOperations.TestCase.settings = settings(stateful_step_count=40)
test_nine_operations_match_the_model = NineOperations.TestCase
