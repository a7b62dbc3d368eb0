"""A hook module for the end-to-end hook test, loaded by a server through GRAPHMEM_HOOKS."""

from __future__ import annotations

import json
import os

from actors.hooks import HookEvent, HookVetoError
from eventstore.events import EntityCreated


def policy(event: HookEvent) -> None:
    """Refuses entities named "Forbidden"; records every after-event in GRAPHMEM_TEST_HOOK_LOG."""
    if event.phase == "before":
        for created in event.events:
            if isinstance(created, EntityCreated) and created.name == "Forbidden":
                raise HookVetoError("Forbidden is a reserved name here; choose another name.")
        return
    path = os.environ.get("GRAPHMEM_TEST_HOOK_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            positions = [envelope.position for envelope in event.envelopes]
            log.write(json.dumps({"name": event.name, "positions": positions}) + "\n")
