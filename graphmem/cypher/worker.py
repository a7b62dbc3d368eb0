"""The Cypher worker process: holds the LadybugDB projection of the graph and answers frames
on its stdin/stdout (`python -m graphmem.cypher.worker`). The service process never imports
the engine: a read query can crash it (`RETURN map(NULL, NULL)` is a segfault) or exhaust
memory, and here that costs this process only.

Its limits are the third read-only layer: an address-space limit set before the engine
loads, an empty working directory given by the parent, and nothing else open. The engine
layer is here too: every user query runs on its own connection inside
`BEGIN TRANSACTION READ ONLY`, with the engine's timeout and one thread.

Frames: a 4-byte big-endian length, then msgpack. Requests are maps with an `op`:
`load` (the whole projection, columns), `apply` (changes), `query`, `ping`. Every answer is
`{ok: true, ...}` or `{ok: false, kind, error}`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import gc
import importlib
import math
import os
import resource
import struct
import sys
import time
import uuid
from typing import Any, BinaryIO

import msgspec

__all__ = ["main"]

GIB = 1 << 30
ADDRESS_SPACE = int(os.environ.get("GRAPHMEM_CYPHER_AS_BYTES", 6 * GIB))
BUFFER_POOL = 1 * GIB
MAX_DB_SIZE = 2 * GIB
EPOCH = dt.datetime(1970, 1, 1)

TIME_COLUMNS = frozenset(
    {"first_seen", "last_seen", "valid_at", "invalid_at", "ingested_at", "last_confirmed"}
)

SCHEMA = (
    "CREATE NODE TABLE Entity(name STRING PRIMARY KEY, id STRING, type STRING, subtype STRING,"
    " confidence DOUBLE, times_mentioned INT64, first_seen TIMESTAMP, last_seen TIMESTAMP,"
    " source_file STRING, aliases STRING[], properties MAP(STRING, STRING),"
    " observations STRING[])",
    "CREATE REL TABLE RELATES(FROM Entity TO Entity, type STRING, weight DOUBLE,"
    " valid_at TIMESTAMP, invalid_at TIMESTAMP, ingested_at TIMESTAMP,"
    " last_confirmed TIMESTAMP, source_session STRING, source_transcript STRING,"
    " source_type STRING, evidence STRING, properties MAP(STRING, STRING))",
)

UPSERT_ENTITY = (
    "MERGE (e:Entity {name: $name}) SET e.id = $id, e.type = $type, e.subtype = $subtype,"
    " e.confidence = $confidence, e.times_mentioned = $times_mentioned,"
    " e.first_seen = $first_seen, e.last_seen = $last_seen, e.source_file = $source_file,"
    " e.aliases = CAST($aliases AS STRING[]),"
    " e.properties = map(CAST($keys AS STRING[]), CAST($values AS STRING[])),"
    " e.observations = CAST($observations AS STRING[])"
)
CREATE_RELATION = (
    "MATCH (a:Entity {name: $from}), (b:Entity {name: $to}) CREATE (a)-[:RELATES {"
    "type: $type, weight: $weight, valid_at: $valid_at, invalid_at: $invalid_at,"
    " ingested_at: $ingested_at, last_confirmed: $last_confirmed,"
    " source_session: $source_session, source_transcript: $source_transcript,"
    " source_type: $source_type, evidence: $evidence,"
    " properties: map(CAST($keys AS STRING[]), CAST($values AS STRING[]))}]->(b)"
    " RETURN count(*)"
)
DELETE_RELATION = (
    "MATCH (:Entity {name: $from})-[r:RELATES {type: $type}]->(:Entity {name: $to}) DELETE r"
)


def _engine_module(name: str) -> Any:
    # Imported here only, in the worker process: the module itself must load without the
    # extra (type checks, the service's imports of its constants).
    return importlib.import_module(name)


def _time(ms: int | None) -> dt.datetime | None:
    # Naive UTC: the engine drops a zone's offset silently.
    return None if ms is None else EPOCH + dt.timedelta(milliseconds=ms)


class Projection:
    def __init__(self, timeout_ms: int) -> None:
        ladybug = _engine_module("ladybug")
        self._db = ladybug.Database(
            ":memory:", buffer_pool_size=BUFFER_POOL, max_db_size=MAX_DB_SIZE, max_num_threads=2
        )
        self._writer = ladybug.Connection(self._db)
        for statement in SCHEMA:
            self._writer.execute(statement)
        self._reader = ladybug.Connection(self._db)
        self._reader.set_query_timeout(timeout_ms)
        # A user query never takes both threads: changes get through beside a slow one.
        self._reader.set_max_threads_for_exec(1)

    def load(
        self, entities: dict[str, list[Any]] | None, relations: dict[str, list[Any]] | None
    ) -> None:
        pa = _engine_module("pyarrow")
        gc.disable()  # the tables' Python lists are dropped right after; nothing to collect
        try:
            self._copy(pa, entities, relations)
        finally:
            gc.enable()

    def _copy(
        self, pa: Any, entities: dict[str, list[Any]] | None, relations: dict[str, list[Any]] | None
    ) -> None:
        # The engine finds an Arrow table by its variable name in the caller's frame.
        if entities and entities["name"]:
            entity_rows = _arrow(pa, entities)  # noqa: F841 - read by name by COPY
            self._writer.execute("COPY Entity FROM entity_rows")
        if relations and relations["from"]:
            relation_rows = _arrow(pa, relations)  # noqa: F841 - read by name by COPY
            self._writer.execute("COPY RELATES FROM relation_rows")

    def apply(self, request: dict[str, Any]) -> int:
        """Changes in one transaction: resets (the entity and its edges go), entity rows,
        deleted relation keys, created relations. The relations whose ends are missing."""
        missing = 0
        self._writer.execute("BEGIN TRANSACTION")
        try:
            for name in request.get("reset", ()):
                self._writer.execute(
                    "MATCH (e:Entity {name: $name}) DETACH DELETE e", {"name": name}
                )
            for row in _rows(request.get("entities")):
                self._writer.execute(UPSERT_ENTITY, _params(row))
            for key in request.get("delete_relations", ()):
                self._writer.execute(
                    DELETE_RELATION, {"from": key[0], "to": key[1], "type": key[2]}
                )
            for row in _rows(request.get("relations")):
                result = self._writer.execute(CREATE_RELATION, _params(row))
                # A missing end creates nothing, silently: counted, so the service can tell.
                missing += 0 if result.get_next()[0] == 1 else 1
            self._writer.execute("COMMIT")
        except BaseException:
            self._writer.execute("ROLLBACK")
            raise
        return missing

    def query(self, cypher: str, params: dict[str, Any], max_rows: int) -> dict[str, Any]:
        started = time.perf_counter()
        self._reader.execute("BEGIN TRANSACTION READ ONLY")
        try:
            result = self._reader.execute(cypher, params)
            columns = result.get_column_names()
            rows: list[dict[str, Any]] = []
            truncated = False
            while result.has_next():
                if len(rows) == max_rows:
                    truncated = True
                    break
                values = result.get_next()
                rows.append({c: _plain(v) for c, v in zip(columns, values, strict=True)})
        finally:
            # An interrupted query was already rolled back by the engine.
            with contextlib.suppress(RuntimeError):
                self._reader.execute("ROLLBACK")
        elapsed = (time.perf_counter() - started) * 1000
        return {"results": rows, "truncated": truncated, "execution_time_ms": round(elapsed, 3)}


def _arrow(pa: Any, columns: dict[str, list[Any]]) -> Any:
    """Columns as an Arrow table in the table's column order."""
    arrays = {}
    for name, values in columns.items():
        if name in TIME_COLUMNS:
            arrays[name] = pa.array(values, pa.timestamp("ms"))
        elif name == "properties":
            arrays[name] = pa.array(
                [list(zip(k, v, strict=True)) for k, v in values], pa.map_(pa.string(), pa.string())
            )
        elif name in {"aliases", "observations"}:
            arrays[name] = pa.array(values, pa.list_(pa.string()))
        elif name in {"confidence", "weight"}:
            arrays[name] = pa.array(values, pa.float64())
        elif name == "times_mentioned":
            arrays[name] = pa.array(values, pa.int64())
        else:
            arrays[name] = pa.array(values, pa.string())
    return pa.table(arrays)


def _rows(columns: dict[str, list[Any]] | None) -> list[dict[str, Any]]:
    if not columns:
        return []
    names = list(columns)
    return [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def _params(row: dict[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {k: (_time(v) if k in TIME_COLUMNS else v) for k, v in row.items()}
    keys, values = params.pop("properties")
    params["keys"], params["values"] = list(keys), list(values)
    return params


def _plain(value: Any) -> Any:
    """A result value as JSON: times as ISO UTC with milliseconds, nodes and relations as
    their properties (the engine's internal `_ID`, `_SRC` ... keys dropped, `_LABEL` kept as
    `_label`)."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, dict):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if key == "_LABEL":
                plain["_label"] = item
            elif not (isinstance(key, str) and key.startswith("_")):
                plain[str(key)] = _plain(item)
        return plain
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return str(value)


# --- the frame loop ---------------------------------------------------------------------------


def read_frame(stream: BinaryIO) -> Any | None:
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">I", head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return msgspec.msgpack.decode(body)


def write_frame(stream: BinaryIO, value: Any) -> None:
    body = msgspec.msgpack.encode(value)
    stream.write(struct.pack(">I", len(body)) + body)
    stream.flush()


def _answer(projection: Projection, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op == "ping":
        return {"ok": True}
    if op == "load":  # either table or both: a build sends the entities first
        projection.load(request.get("entities"), request.get("relations"))
        return {"ok": True}
    if op == "apply":
        return {"ok": True, "missing": projection.apply(request)}
    if op == "query":
        try:
            answer = projection.query(request["cypher"], request["params"], request["max_rows"])
        except RuntimeError as problem:
            text = str(problem)
            kind = "timeout" if "Interrupted" in text else "engine"
            return {"ok": False, "kind": kind, "error": text}
        except MemoryError as problem:
            return {"ok": False, "kind": "memory", "error": f"out of memory: {problem}"}
        return {"ok": True, **answer}
    return {"ok": False, "kind": "protocol", "error": f"unknown op {op!r}"}


def main() -> int:
    # The protocol owns the original stdout; anything the engine prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    stdin = sys.stdin.buffer
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    timeout_ms = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    projection = Projection(timeout_ms)
    write_frame(out, {"ok": True, "ready": True})
    while True:
        request = read_frame(stdin)
        if request is None:
            return 0
        try:
            answer = _answer(projection, request)
        except Exception as problem:  # reported to the service, which rebuilds if it must
            answer = {
                "ok": False,
                "kind": "worker",
                "error": f"{type(problem).__name__}: {problem}",
            }
        write_frame(out, answer)


if __name__ == "__main__":
    sys.exit(main())
