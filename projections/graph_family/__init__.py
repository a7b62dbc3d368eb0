"""The graph family's reads (contract graph-memory §3, §8): pure functions over a
GraphProjection, with tunables passed in as plain values.

The public face of a package of private modules, each with one role:

- `_values`: node and edge output objects with decayed confidence and weight (`Reading`);
- `_tokens`, `_index`: keyword tokens and `FamilyIndex`, the derived index the fold keeps
  current (search tokens, listing orders, stats tallies);
- `_search`: keyword search; `_fuzzy`: fuzzy name matching after it; `_types`: entity type filters;
- `_maintenance`: graph_decay's report and graph_prune's selection;
- `_traversal`: graph_query; `_listing`: graph_entities; `_stats`: graph_stats;
  `_contradictions`: graph_contradictions; `_export`: graph_export's rows;
- `_merge_suggestions`: graph_merge_suggestions (over `Similarities`, an embeddings model);
- `_validate`: graph_validate; `_communities`: graph_communities; `_context`:
  graph_build_context's recent additions and hubs; `_conflict_view`: the one conflict view
  (replica writes, superseded edges, contradictions) of read_conflicts and graph_contradictions.
"""

from projections.graph_family._build import (
    FamilyIndexBuild,
    FamilyIndexBuildingError,
    family_index,
    family_index_built,
)
from projections.graph_family._communities import CommunityOptions, graph_communities
from projections.graph_family._conflict_view import VIEW_LIMIT, conflict_view, replica_write
from projections.graph_family._context import recent_additions, top_hubs
from projections.graph_family._contradictions import graph_contradictions
from projections.graph_family._export import EXPORT_FORMAT, EXPORT_VERSION, export_rows
from projections.graph_family._fuzzy import fuzzy_search
from projections.graph_family._index import FamilyIndex
from projections.graph_family._listing import SORT_KEYS, ListOptions, graph_entities
from projections.graph_family._maintenance import (
    DETAILS_LIMIT,
    DecayReport,
    EdgeDrop,
    NodeDrop,
    PruneSelection,
    PruneThresholds,
    decay_report,
    prune_selection,
)
from projections.graph_family._merge_suggestions import (
    MAX_LIMIT,
    Similarities,
    SuggestOptions,
    Weights,
    audit_lines,
    merge_suggestions,
)
from projections.graph_family._search import keyword_search
from projections.graph_family._stats import SCHEMA_VERSION, graph_stats
from projections.graph_family._tokens import tokens
from projections.graph_family._traversal import CONTEXT_LEVELS, QueryOptions, graph_query
from projections.graph_family._types import type_filter
from projections.graph_family._validate import graph_validate
from projections.graph_family._values import EdgeFacts, Reading

__all__ = [
    "CONTEXT_LEVELS",
    "DETAILS_LIMIT",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "MAX_LIMIT",
    "SCHEMA_VERSION",
    "SORT_KEYS",
    "VIEW_LIMIT",
    "CommunityOptions",
    "DecayReport",
    "EdgeDrop",
    "EdgeFacts",
    "FamilyIndex",
    "FamilyIndexBuild",
    "FamilyIndexBuildingError",
    "ListOptions",
    "NodeDrop",
    "PruneSelection",
    "PruneThresholds",
    "QueryOptions",
    "Reading",
    "Similarities",
    "SuggestOptions",
    "Weights",
    "audit_lines",
    "conflict_view",
    "decay_report",
    "export_rows",
    "family_index",
    "family_index_built",
    "fuzzy_search",
    "graph_communities",
    "graph_contradictions",
    "graph_entities",
    "graph_query",
    "graph_stats",
    "graph_validate",
    "keyword_search",
    "merge_suggestions",
    "prune_selection",
    "recent_additions",
    "replica_write",
    "tokens",
    "top_hubs",
    "type_filter",
]
