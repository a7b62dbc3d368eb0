"""Replication across machines over NATS JetStream (docs/design-notes.md, "Replication").

`names`: streams, subjects and headers on the hub. `nats_link`: the wire half of the
replicator (actors.replicator is the log half); imported only when GRAPHMEM_REPLICATE is set,
so a node without it never imports nats-py. `status`: what `graphmem replication status` and
`graphmem stats` show. `hub`: `graphmem hub`, a nats-server with JetStream.
"""
