"""Read models folded from the event log: pure and deterministic."""
