"""The graph family's reads (contract graph-memory §3, §8): pure functions over a
GraphProjection, with tunables passed in as plain values.

The public face of a package of private modules, each with one role:

- `_values`: node and edge output objects with decayed confidence and weight (`Reading`);
- `_tokens`, `_index`: keyword tokens and `FamilyIndex`, the derived index the fold keeps
  current (search tokens, listing orders, stats tallies);
- `_search`: keyword search; `_types`: entity type filters;
- `_traversal`: graph_query; `_listing`: graph_entities; `_stats`: graph_stats;
  `_contradictions`: graph_contradictions; `_export`: graph_export's rows;
- `_validate`: graph_validate; `_communities`: graph_communities; `_context`:
  graph_build_context's recent additions and hubs; `_conflict_view`: the one conflict view
  (replica writes, superseded edges, contradictions) of read_conflicts and graph_contradictions.
"""

from projections.graph_family._communities import CommunityOptions, graph_communities
from projections.graph_family._conflict_view import VIEW_LIMIT, conflict_view, replica_write
from projections.graph_family._context import recent_additions, top_hubs
from projections.graph_family._contradictions import graph_contradictions
from projections.graph_family._export import EXPORT_FORMAT, EXPORT_VERSION, export_rows
from projections.graph_family._index import FamilyIndex, family_index
from projections.graph_family._listing import SORT_KEYS, ListOptions, graph_entities
from projections.graph_family._search import keyword_search
from projections.graph_family._stats import SCHEMA_VERSION, graph_stats
from projections.graph_family._tokens import tokens
from projections.graph_family._traversal import CONTEXT_LEVELS, QueryOptions, graph_query
from projections.graph_family._types import type_filter
from projections.graph_family._validate import graph_validate
from projections.graph_family._values import EdgeFacts, Reading

__all__ = [
    "CONTEXT_LEVELS",
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "SCHEMA_VERSION",
    "SORT_KEYS",
    "VIEW_LIMIT",
    "CommunityOptions",
    "EdgeFacts",
    "FamilyIndex",
    "ListOptions",
    "QueryOptions",
    "Reading",
    "conflict_view",
    "export_rows",
    "family_index",
    "graph_communities",
    "graph_contradictions",
    "graph_entities",
    "graph_query",
    "graph_stats",
    "graph_validate",
    "keyword_search",
    "recent_additions",
    "replica_write",
    "tokens",
    "top_hubs",
    "type_filter",
]
