"""The event store: the vocabulary of events, the hybrid logical clock and the event logs."""
