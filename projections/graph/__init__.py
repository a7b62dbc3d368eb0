"""The graph projection: the CRDT fold of the log into entities, observations and relations.

The public face of a package of private modules, each with one role:

- `_records`: the fold's records (stamps, entity and relation records, adjacency) and
  `GraphState`, the complete fold state a projection holds;
- `_projection`: `GraphProjection`, which folds envelopes into its GraphState (the rules are
  in its docstring);
- `_reads`: its read methods over the records;
- `_codec`: the snapshot format, a GraphState to columnar msgpack and back;
- `_plain`: the snapshot of a log of plain creations (a bulk import's), built without a fold;
- `_prefix`: the snapshot of a log's plain prefix (a rebuild's direct path), likewise.

Nothing outside the package imports a private module.
"""

from projections.graph._codec import SnapshotError, decode_snapshot, encode_snapshot
from projections.graph._plain import PlainGraph, plain_snapshot
from projections.graph._prefix import PrefixGraph, prefix_snapshot, relation_keys, same_runs
from projections.graph._projection import GraphProjection, graph_neutral
from projections.graph._reads import FoldFollower
from projections.graph._records import GraphState, RelationKey
from projections.views import (
    EntityAttributes,
    EntityView,
    GraphSnapshot,
    RelationDetails,
    RelationView,
)

__all__ = [
    "EntityAttributes",
    "EntityView",
    "FoldFollower",
    "GraphProjection",
    "GraphSnapshot",
    "GraphState",
    "PlainGraph",
    "PrefixGraph",
    "RelationDetails",
    "RelationKey",
    "RelationView",
    "SnapshotError",
    "decode_snapshot",
    "encode_snapshot",
    "graph_neutral",
    "plain_snapshot",
    "prefix_snapshot",
    "relation_keys",
    "same_runs",
]
