"""One-shot requests to the hub for the CLI: the members' reported frontiers, retirements.

Imports nats-py, so only the commands that need the hub import this module (lazily). Every
request is bounded: an unreachable hub is a clear error, never a hang.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import nats
from nats.js.errors import BucketNotFoundError, KeyNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from graphmem.config import ReplicationSettings
from graphmem.replication import names
from graphmem.replication.connect import auth_options, hub_urls

__all__ = ["HubUnreachableError", "read_membership", "retire"]

T = TypeVar("T")
TIMEOUT = 10.0


class HubUnreachableError(Exception):
    """The hub did not answer; the message says which and why."""


def read_membership(settings: ReplicationSettings) -> tuple[dict[str, dict[str, int]], list[str]]:
    """Every node's last reported frontier, and the retired nodes."""

    async def read(js: Any) -> tuple[dict[str, dict[str, int]], list[str]]:
        frontiers = {
            k: {o: int(s) for o, s in v.items()}
            for k, v in (await _all(js, names.frontier_bucket(settings.group))).items()
        }
        retired = sorted(await _all(js, names.retired_bucket(settings.group)))
        return frontiers, retired

    return _run(settings, read)


def retire(settings: ReplicationSettings, node: str) -> None:
    """Mark `node` departed: its frontier no longer holds back tombstone collection."""

    async def put(js: Any) -> None:
        kv = await _bucket(js, names.retired_bucket(settings.group), create=True)
        assert kv is not None
        await kv.put(node, json.dumps({"retired_at": time.time()}).encode())

    _run(settings, put)


async def _bucket(js: Any, name: str, *, create: bool) -> KeyValue | None:
    try:
        kv: KeyValue = await js.key_value(name)
        return kv
    except (BucketNotFoundError, NotFoundError):
        if not create:
            return None
        created: KeyValue = await js.create_key_value(bucket=name, history=1)
        return created


async def _all(js: Any, bucket: str) -> dict[str, Any]:
    kv = await _bucket(js, bucket, create=False)
    if kv is None:
        return {}
    # The keys come from the bucket's stream (its subjects), not from kv.keys(): nats-py's key
    # watcher can signal "no more" before entries already buffered are read (nats.py#842), and
    # a bucket read as emptier than it is would say a member never reported or was never
    # retired: the tombstone gate would give a wrong answer, and without a word.
    prefix = f"$KV.{bucket}."
    info = await js.stream_info(f"KV_{bucket}", subjects_filter=f"{prefix}>")
    found: dict[str, Any] = {}
    for subject in sorted(info.state.subjects or {}):
        key = subject.removeprefix(prefix)
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:  # deleted or purged: only its marker is left
            continue
        if entry.value:
            found[key] = json.loads(entry.value)
    return found


def _run(settings: ReplicationSettings, fn: Callable[[Any], Awaitable[T]]) -> T:
    if settings.url is None:
        raise HubUnreachableError("GRAPHMEM_REPLICATE is not set: there is no hub to ask")
    urls = hub_urls(settings)

    async def main() -> T:
        options: dict[str, Any] = {
            "servers": urls,
            "connect_timeout": 3,
            "allow_reconnect": False,
            "max_reconnect_attempts": 0,
        }
        options.update(auth_options(settings))
        nc = await nats.connect(**options)
        try:
            return await fn(nc.jetstream(timeout=5.0))
        finally:
            await nc.close()

    try:
        return asyncio.run(asyncio.wait_for(main(), TIMEOUT))
    except Exception as error:
        raise HubUnreachableError(
            f"the hub {urls} did not answer: {error or type(error).__name__}"
        ) from None
