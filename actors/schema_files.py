"""Reading schema folders: a definition for each usable `*.schema.json`, a problem for the rest.

A scan reads every `*.schema.json` directly in each folder (no recursion), folders in order, a
later folder's type overriding an earlier one's. Files come from users, so reading them is
bounded: a file over the size limit, a document nested too deep or holding a number too long,
and a symlink that leads out of its folder are each a problem for that file alone, never an
exception that would stop the scan (and with it every other file's change).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from actors.commands import SchemaDefinition
from projections.bounded_json import JsonShapeError, decode
from projections.entity_schema import SchemaFileError, SchemaLimits, canonical_json, parse_schema

__all__ = ["SUFFIX", "Scan", "SchemaProblem", "scan_folders"]

SUFFIX = ".schema.json"


@dataclass(frozen=True)
class SchemaProblem:
    """A schema file (or folder) that was skipped, and why."""

    path: Path
    reason: str


@dataclass(frozen=True)
class Scan:
    """What the folders hold: a definition per valid type, and the problems found."""

    definitions: dict[str, SchemaDefinition]
    problems: list[SchemaProblem]


def scan_folders(
    folders: Sequence[Path],
    reserved_tool_names: frozenset[str],
    limits: SchemaLimits | None = None,
) -> Scan:
    """Read and validate every schema file of `folders` (pure but for reading files)."""
    limits = limits or SchemaLimits()
    definitions: dict[str, SchemaDefinition] = {}
    problems: list[SchemaProblem] = []
    for folder in folders:
        try:
            paths = _schema_files(folder, problems)
        except OSError as error:
            problems.append(SchemaProblem(folder, f"the folder cannot be read: {error}"))
            continue
        in_folder: dict[str, Path] = {}
        for path in paths:
            try:
                definition = _definition(path, reserved_tool_names, limits)
            except SchemaFileError as error:
                problems.append(SchemaProblem(path, str(error)))
                continue
            first = in_folder.setdefault(definition.type_name, path)
            if first != path:
                problems.append(
                    SchemaProblem(
                        path,
                        f"type {definition.type_name!r} is already defined by {first.name} in "
                        "this folder; rename the type or remove one of the files",
                    )
                )
                continue
            definitions[definition.type_name] = definition
    return Scan(definitions, problems)


def _schema_files(folder: Path, problems: list[SchemaProblem]) -> list[Path]:
    """The schema files of `folder`; a symlink leading out of it is noted in `problems` and
    left out, so a folder cannot be made to publish a file from elsewhere as tools."""
    if not folder.is_dir():
        return []
    inside = folder.resolve()
    found: list[Path] = []
    for path in sorted(p for p in folder.iterdir() if p.name.endswith(SUFFIX)):
        if path.is_symlink():
            try:
                target = path.resolve()
            except (OSError, RuntimeError) as error:  # RuntimeError: a symlink loop
                problems.append(SchemaProblem(path, f"the symlink cannot be followed: {error}"))
                continue
            if not target.is_relative_to(inside):
                problems.append(
                    SchemaProblem(
                        path,
                        f"a symlink to {target}, outside the schema folder {inside}; not "
                        "followed (copy the file into the folder to use it)",
                    )
                )
                continue
        if path.is_file():
            found.append(path)
    return found


def _definition(
    path: Path, reserved_tool_names: frozenset[str], limits: SchemaLimits
) -> SchemaDefinition:
    """Raises SchemaFileError saying why the file cannot be used."""
    try:
        text = _read(path, limits.max_file_bytes).decode("utf-8-sig")
    except OSError as error:
        raise SchemaFileError(f"the file cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise SchemaFileError(f"not valid UTF-8 (byte {error.start})") from None
    try:
        document = decode(text, constants=False)
    except json.JSONDecodeError as error:
        raise SchemaFileError(
            f"not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        ) from None
    except JsonShapeError as error:
        raise SchemaFileError(str(error)) from None
    schema = parse_schema(document, limits)
    clashes = [name for name in schema.tool_names if name in reserved_tool_names]
    if clashes:
        raise SchemaFileError(
            f"type {schema.type_name!r} would define tool {clashes[0]}, which a built-in "
            'tool already has; give the schema another "name"'
        )
    schema_json, digest = canonical_json(document)
    return SchemaDefinition(schema.type_name, schema_json, digest, str(path))


def _read(path: Path, limit: int) -> bytes:
    """The file's bytes; SchemaFileError if it holds more than `limit` (read no further: it
    may be huge, or still growing)."""
    with path.open("rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        try:
            size = f"{path.stat().st_size:,} bytes"
        except OSError:
            size = "larger"
        raise SchemaFileError(
            f"the file is {size}, over the {limit:,}-byte limit for schema files; shorten "
            "it (its descriptions) or raise GRAPHMEM_MAX_SCHEMA_BYTES"
        )
    return data
