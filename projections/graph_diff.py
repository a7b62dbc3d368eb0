"""Graph diffs: the changes that turn one graph value into another, and applying them (pure).

A diff compares two `GraphSnapshot`s (the visible graph in listing order) and lists the edits
that turn the first into the second: entities added, removed, retyped; observation occurrences
added and removed (duplicates count, order is kept); relations added, removed, with attributes
changed. `apply_diff(diff_graphs(a, b), a) == b` holds exactly, listing order included, so
every edit that places something carries its index in the second graph's listing (`at`), and
an element whose place alone changed (it was re-created in between, and listings follow the
latest creation) gets a move.

The JSON form is one object per change, tagged by `op` (`graphmem diff --json` prints one per
line); names follow the official memory file (`entityType`, `from`, `to`, `relationType`):

    {"op":"add_entity","name":"Ann","entityType":"person","observations":["likes tea"],"at":4}
    {"op":"remove_entity","name":"Bob","entityType":"person","observations":[]}
    {"op":"move_entity","name":"Cy","at":2}
    {"op":"retype_entity","name":"Cy","before":"person","after":"robot"}
    {"op":"remove_observation","entity":"Cy","at":0,"content":"old"}   at: in the first graph
    {"op":"add_observation","entity":"Cy","at":1,"content":"new"}      at: in the second graph
    {"op":"add_relation","from":"Ann","to":"Cy","relationType":"knows","weight":1.0,"at":0}
    {"op":"remove_relation","from":"Ann","to":"Bob","relationType":"knows"}
    {"op":"move_relation","from":"Ann","to":"Cy","relationType":"knows","at":3}
    {"op":"change_relation","from":"Ann","to":"Cy","relationType":"knows",
     "attribute":"weight","before":1.0,"after":0.75}

Removed entities come first, in the first graph's order, then what changed about each entity
of the second graph, in its listing order (an entity's removed observations before its added
ones); then the relations, the same way.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from typing import Any, TypeVar

import msgspec

from projections.views import EntityView, GraphSnapshot, RelationView

__all__ = [
    "RELATION_ATTRIBUTES",
    "AddEntity",
    "AddObservation",
    "AddRelation",
    "Change",
    "ChangeRelation",
    "DiffError",
    "MoveEntity",
    "MoveRelation",
    "RemoveEntity",
    "RemoveObservation",
    "RemoveRelation",
    "RetypeEntity",
    "apply_diff",
    "decode_changes",
    "diff_graphs",
    "encode_change",
]

# RelationView field -> its name in the JSON form.
RELATION_ATTRIBUTES = {
    "weight": "weight",
    "properties": "properties",
    "valid_at": "validAt",
    "invalid_at": "invalidAt",
    "source_session": "sourceSession",
    "source_transcript": "sourceTranscript",
    "source_type": "sourceType",
}
_FIELD_OF = {wire: field for field, wire in RELATION_ATTRIBUTES.items()}


class DiffError(ValueError):
    """A diff does not fit the graph it is applied to (it was made from another one)."""


class _Change(msgspec.Struct, frozen=True, tag_field="op", omit_defaults=True):
    """Base of every change."""


class AddEntity(_Change, frozen=True, tag="add_entity", rename={"entity_type": "entityType"}):
    name: str
    entity_type: str
    observations: list[str]
    at: int


class RemoveEntity(_Change, frozen=True, tag="remove_entity", rename={"entity_type": "entityType"}):
    name: str
    entity_type: str
    observations: list[str]


class MoveEntity(_Change, frozen=True, tag="move_entity"):
    name: str
    at: int


class RetypeEntity(_Change, frozen=True, tag="retype_entity"):
    name: str
    before: str
    after: str


class AddObservation(_Change, frozen=True, tag="add_observation"):
    entity: str
    at: int  # in the second graph's list
    content: str


class RemoveObservation(_Change, frozen=True, tag="remove_observation"):
    entity: str
    at: int  # in the first graph's list
    content: str


_RELATION_KEY = {"from_entity": "from", "to_entity": "to", "relation_type": "relationType"}


class AddRelation(
    _Change,
    frozen=True,
    tag="add_relation",
    rename={**_RELATION_KEY, **RELATION_ATTRIBUTES},
):
    from_entity: str
    to_entity: str
    relation_type: str
    weight: float
    at: int
    properties: dict[str, Any] = {}
    valid_at: int | None = None
    invalid_at: int | None = None
    source_session: str | None = None
    source_transcript: str | None = None
    source_type: str | None = None


class RemoveRelation(_Change, frozen=True, tag="remove_relation", rename=_RELATION_KEY):
    from_entity: str
    to_entity: str
    relation_type: str


class MoveRelation(_Change, frozen=True, tag="move_relation", rename=_RELATION_KEY):
    from_entity: str
    to_entity: str
    relation_type: str
    at: int


class ChangeRelation(_Change, frozen=True, tag="change_relation", rename=_RELATION_KEY):
    from_entity: str
    to_entity: str
    relation_type: str
    attribute: str  # a RELATION_ATTRIBUTES wire name
    before: Any
    after: Any


Change = (
    AddEntity
    | RemoveEntity
    | MoveEntity
    | RetypeEntity
    | AddObservation
    | RemoveObservation
    | AddRelation
    | RemoveRelation
    | MoveRelation
    | ChangeRelation
)

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder(Change)


def encode_change(change: Change) -> bytes:
    """One change as a JSON object (no newline)."""
    return _ENCODER.encode(change)


def decode_changes(lines: Iterable[bytes | str]) -> list[Change]:
    """Changes from their JSON lines (blank lines skipped); a bad line is a DiffError."""
    changes = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            changes.append(_DECODER.decode(line))
        except msgspec.DecodeError as error:
            raise DiffError(f"line {number} is not a change: {error}") from None
    return changes


# --- diffing -------------------------------------------------------------------------------------

K = TypeVar("K")
RelationKey = tuple[str, str, str]


def _key(relation: RelationView) -> RelationKey:
    return (relation.from_entity, relation.to_entity, relation.relation_type)


def _moved(before: Sequence[K], after_index: dict[K, int]) -> set[K]:
    """The fewest common elements to move so that the rest keep their relative order: the
    complement of a longest increasing run of their places in the second listing."""
    common = [k for k in before if k in after_index]
    places = [after_index[k] for k in common]
    # Patience sorting: tails[i] is the smallest last place of a run of length i + 1.
    tails: list[int] = []
    tail_at: list[int] = []
    parent = [-1] * len(places)
    for i, place in enumerate(places):
        j = bisect_left(tails, place)
        if j == len(tails):
            tails.append(place)
            tail_at.append(i)
        else:
            tails[j] = place
            tail_at[j] = i
        parent[i] = tail_at[j - 1] if j else -1
    kept: set[K] = set()
    i = tail_at[-1] if tail_at else -1
    while i >= 0:
        kept.add(common[i])
        i = parent[i]
    return set(common) - kept


def _observation_changes(name: str, before: list[str], after: list[str]) -> list[Change]:
    if before == after:
        return []
    removed: list[Change] = []
    added: list[Change] = []
    # Exact, never heuristic: autojunk would drop frequent contents from the matching.
    matcher = SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed.extend(
                RemoveObservation(entity=name, at=i, content=before[i]) for i in range(i1, i2)
            )
        if tag in ("replace", "insert"):
            added.extend(AddObservation(entity=name, at=j, content=after[j]) for j in range(j1, j2))
    return removed + added


def _entity_changes(a: GraphSnapshot, b: GraphSnapshot) -> list[Change]:
    before = {e.name: e for e in a.entities}
    after_index = {e.name: i for i, e in enumerate(b.entities)}
    moved = _moved(list(before), after_index)
    changes: list[Change] = [
        RemoveEntity(name=e.name, entity_type=e.entity_type, observations=list(e.observations))
        for e in a.entities
        if e.name not in after_index
    ]
    for at, entity in enumerate(b.entities):
        old = before.get(entity.name)
        if old is None:
            changes.append(
                AddEntity(
                    name=entity.name,
                    entity_type=entity.entity_type,
                    observations=list(entity.observations),
                    at=at,
                )
            )
            continue
        if entity.name in moved:
            changes.append(MoveEntity(name=entity.name, at=at))
        if old.entity_type != entity.entity_type:
            changes.append(
                RetypeEntity(name=entity.name, before=old.entity_type, after=entity.entity_type)
            )
        changes.extend(_observation_changes(entity.name, old.observations, entity.observations))
    return changes


def _attributes(relation: RelationView) -> dict[str, Any]:
    return {wire: getattr(relation, field) for field, wire in RELATION_ATTRIBUTES.items()}


def _relation_changes(a: GraphSnapshot, b: GraphSnapshot) -> list[Change]:
    before = {_key(r): r for r in a.relations}
    after_index = {_key(r): i for i, r in enumerate(b.relations)}
    moved = _moved(list(before), after_index)
    changes: list[Change] = [
        RemoveRelation(from_entity=f, to_entity=t, relation_type=rt)
        for (f, t, rt) in before
        if (f, t, rt) not in after_index
    ]
    for at, relation in enumerate(b.relations):
        key = _key(relation)
        old = before.get(key)
        if old is None:
            changes.append(AddRelation(*key, at=at, **_as_fields(relation)))
            continue
        if key in moved:
            changes.append(MoveRelation(*key, at=at))
        if old != relation:
            new_values = _attributes(relation)
            for wire, value in _attributes(old).items():
                if value != new_values[wire]:
                    changes.append(
                        ChangeRelation(*key, attribute=wire, before=value, after=new_values[wire])
                    )
    return changes


def _as_fields(relation: RelationView) -> dict[str, Any]:
    return {field: getattr(relation, field) for field in RELATION_ATTRIBUTES}


def diff_graphs(a: GraphSnapshot, b: GraphSnapshot) -> list[Change]:
    """The changes that turn graph `a` into graph `b` (empty iff they are equal)."""
    return _entity_changes(a, b) + _relation_changes(a, b)


# --- applying ------------------------------------------------------------------------------------

T = TypeVar("T")


def _placed(stable: list[T], placements: list[tuple[int, T]], what: str) -> list[T]:
    """`stable` in order, with each placement inserted so that it ends up at its index."""
    placements.sort(key=lambda placement: placement[0])
    result: list[T] = []
    rest = iter(stable)
    for at, item in placements:
        while len(result) < at:
            following = next(rest, None)
            if following is None:
                raise DiffError(f"{what} placed at {at}, past the end of the listing")
            result.append(following)
        if len(result) != at:
            raise DiffError(f"two {what}s placed at {at}")
        result.append(item)
    result.extend(rest)
    return result


def _apply_observations(
    name: str,
    observations: list[str],
    removed: list[RemoveObservation],
    added: list[AddObservation],
) -> list[str]:
    drop = set()
    for change in removed:
        if not 0 <= change.at < len(observations) or observations[change.at] != change.content:
            raise DiffError(f"{name} has no observation {change.content!r} at {change.at}")
        drop.add(change.at)
    kept = [content for i, content in enumerate(observations) if i not in drop]
    return _placed(kept, [(c.at, c.content) for c in added], f"observation of {name}")


class _Patch:
    """The changes of one diff, sorted by what they apply to."""

    def __init__(self, changes: Iterable[Change]) -> None:
        self.entities: dict[str, AddEntity | RemoveEntity | MoveEntity] = {}
        self.types: dict[str, RetypeEntity] = {}
        self.removed: dict[str, list[RemoveObservation]] = {}
        self.added: dict[str, list[AddObservation]] = {}
        self.relations: dict[RelationKey, AddRelation | RemoveRelation | MoveRelation] = {}
        self.attributes: dict[RelationKey, list[ChangeRelation]] = {}
        for change in changes:
            self._sort(change)

    def _sort(self, change: Change) -> None:
        match change:
            case AddEntity() | RemoveEntity() | MoveEntity():
                _once(self.entities, change.name, change, "entity")
            case RetypeEntity():
                _once(self.types, change.name, change, "retyped entity")
            case RemoveObservation():
                self.removed.setdefault(change.entity, []).append(change)
            case AddObservation():
                self.added.setdefault(change.entity, []).append(change)
            case AddRelation() | RemoveRelation() | MoveRelation():
                key = (change.from_entity, change.to_entity, change.relation_type)
                _once(self.relations, key, change, "relation")
            case ChangeRelation():
                key = (change.from_entity, change.to_entity, change.relation_type)
                self.attributes.setdefault(key, []).append(change)


def _once(found: dict[Any, T], key: object, change: T, what: str) -> None:
    if key in found:
        raise DiffError(f"the diff places {what} {key!r} twice")
    found[key] = change


def _apply_entities(patch: _Patch, base: Sequence[EntityView]) -> list[EntityView]:
    present = {e.name: e for e in base}
    stable: list[EntityView] = []
    placements: list[tuple[int, EntityView]] = []
    for name, change in patch.entities.items():
        exists = name in present
        if exists == isinstance(change, AddEntity):
            raise DiffError(f"entity {name} {'exists' if exists else 'is missing'}")
        if isinstance(change, AddEntity):
            placements.append(
                (change.at, EntityView(name, change.entity_type, list(change.observations)))
            )
        elif isinstance(change, MoveEntity):
            placements.append((change.at, present[name]))
    for entity in base:
        if entity.name not in patch.entities:
            stable.append(entity)
    return [_edit_entity(patch, e) for e in _placed(stable, placements, "entity")]


def _edit_entity(patch: _Patch, entity: EntityView) -> EntityView:
    name = entity.name
    retype = patch.types.get(name)
    removed = patch.removed.get(name, [])
    added = patch.added.get(name, [])
    if retype is None and not removed and not added:
        return entity
    entity_type = entity.entity_type
    if retype is not None:
        if retype.before != entity_type:
            raise DiffError(f"entity {name} is a {entity_type}, not a {retype.before}")
        entity_type = retype.after
    observations = _apply_observations(name, entity.observations, removed, added)
    return EntityView(name, entity_type, observations)


def _apply_relations(patch: _Patch, base: Sequence[RelationView]) -> list[RelationView]:
    present = {_key(r): r for r in base}
    placements: list[tuple[int, RelationView]] = []
    for key, change in patch.relations.items():
        exists = key in present
        if exists == isinstance(change, AddRelation):
            raise DiffError(f"relation {key!r} {'exists' if exists else 'is missing'}")
        if isinstance(change, AddRelation):
            view = RelationView(*key, **{f: getattr(change, f) for f in RELATION_ATTRIBUTES})
            placements.append((change.at, view))
        elif isinstance(change, MoveRelation):
            placements.append((change.at, present[key]))
    stable = [r for r in base if _key(r) not in patch.relations]
    return [_edit_relation(patch, r) for r in _placed(stable, placements, "relation")]


def _edit_relation(patch: _Patch, relation: RelationView) -> RelationView:
    changes = patch.attributes.get(_key(relation))
    if not changes:
        return relation
    written: dict[str, Any] = {}
    for change in changes:
        field = _FIELD_OF.get(change.attribute)
        if field is None:
            raise DiffError(f"relations have no attribute {change.attribute!r}")
        if getattr(relation, field) != change.before:
            raise DiffError(
                f"relation {_key(relation)!r} has {change.attribute} "
                f"{getattr(relation, field)!r}, not {change.before!r}"
            )
        written[field] = change.after
    return msgspec.structs.replace(relation, **written)


def apply_diff(changes: Iterable[Change], base: GraphSnapshot) -> GraphSnapshot:
    """`base` with `changes` made: the second graph of the diff, if `base` is its first.
    Raises DiffError where the changes do not fit `base`."""
    patch = _Patch(changes)
    entities = _apply_entities(patch, base.entities)
    names = {e.name for e in entities}
    for name in (*patch.types, *patch.removed, *patch.added):
        if name not in names:
            raise DiffError(f"the diff edits entity {name}, which is missing")
    relations = _apply_relations(patch, base.relations)
    keys = {_key(r) for r in relations}
    for key in patch.attributes:
        if key not in keys:
            raise DiffError(f"the diff edits relation {key!r}, which is missing")
    return GraphSnapshot(tuple(entities), tuple(relations))
