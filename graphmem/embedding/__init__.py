"""Embeddings for the graph family (contract §7): a derived read model, never events.

- `embedders`: the built-in lexical `hash` embedder and the loader of the `semantic` extra;
- `text`: an entity's embed text;
- `cache`: vectors persisted in the data dir, keyed by (embedder id, sha256 of the text);
- `vectors`: the in-memory float32 matrix and its exact top-k;
- `service`: the worker that keeps vectors current off the writer's thread, and the API the
  graph tools (graph_search, graph_reembed, merge suggestions) call.
"""
