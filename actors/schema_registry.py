"""SchemaRegistryActor: loads schema files into force (SchemaRegistered/Retired), watches them.

The folders are read by actors.schema_files (the user's folder overrides the shipped one).
A file that cannot be used is reported as a SchemaProblem and skipped, and whatever was in force
from it stays in force: a broken edit changes nothing. A type goes out of force only when its
file is gone (or now defines another type), and only if that file lies in one of this
registry's folders (or in a folder it was told to retire from, such as the shipped default set
once turned off): another process sharing the log may load other folders. The registry
writes through the graph writer like any client, so every process and replica agrees on the
schemas in force; when two processes load different files for one type, the last to scan wins.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pykka
import structlog
import watchfiles

from actors.commands import RegisterSchemas
from actors.errors import CommandRejectedError
from actors.gateway import GraphGateway
from actors.schema_files import SUFFIX, Scan, SchemaProblem, scan_folders
from actors.supervisor import SupervisorHandle
from eventstore.events import Cause
from projections.entity_schema import SchemaLimits
from projections.schemas import SchemaRecord

__all__ = ["ScanReport", "SchemaProblem", "SchemaRegistryActor", "scan_folders"]

log = structlog.get_logger(__name__)

CAUSE = Cause(tool="schema_registry")
# The watcher groups a burst of writes (an editor's save) into one rescan.
WATCH_DEBOUNCE_MS = 300
WATCH_STEP_MS = 50
# How often the watcher wakes without changes; its first wake-up also means it is watching.
WATCH_TIMEOUT_MS = 1000
WATCH_JOIN_SECONDS = 5.0


@dataclass(frozen=True)
class ScanReport:
    """One scan: the valid types the folders define, what changed in force, what was skipped;
    `rejected` is the reason the change was refused (a before-hook veto), if it was."""

    types: tuple[str, ...]
    registered: tuple[str, ...]
    retired: tuple[str, ...]
    problems: tuple[SchemaProblem, ...]
    rejected: str | None = None


class _FilesChanged:
    """Told by the watcher thread: something in a folder changed."""


def plan_registration(
    scan: Scan, records: Iterable[SchemaRecord], folders: Sequence[Path]
) -> RegisterSchemas | None:
    """The command that brings the schemas in force in line with `scan`; None if they are."""
    in_force = {r.type_name: r for r in records if r.digest}  # a retired record has no digest
    ours = set(folders)
    problem_paths = {p.path for p in scan.problems}

    def frozen(record: SchemaRecord) -> bool:
        # Its file (or its folder) is broken: keep what is in force until it is fixed.
        source = Path(record.source)
        return bool(record.source) and (source in problem_paths or source.parent in problem_paths)

    registered = [
        definition
        for type_name, definition in sorted(scan.definitions.items())
        if (record := in_force.get(type_name)) is None
        or (record.digest != definition.digest and not frozen(record))
    ]
    retired = [
        type_name
        for type_name, record in sorted(in_force.items())
        if type_name not in scan.definitions
        and record.source
        and Path(record.source).parent in ours
        and not frozen(record)
    ]
    if not registered and not retired:
        return None
    return RegisterSchemas(registered=registered, retired=retired)


class SchemaRegistryActor(pykka.ThreadingActor):
    """Scans its folders on start and whenever the watcher sees a change."""

    def __init__(
        self,
        folders: Sequence[Path],
        graph: GraphGateway,
        reserved_tool_names: frozenset[str],
        watch: bool = True,
        supervision: SupervisorHandle | None = None,
        *,
        limits: SchemaLimits | None = None,
        retire_from: Sequence[Path] = (),
    ) -> None:
        super().__init__()
        self._supervision = supervision
        self._folders = tuple(Path(folder).expanduser().resolve() for folder in folders)
        # Folders not read but still this process's own: a type registered from one of them
        # is retired (the shipped default set, once turned off).
        self._owned = (
            *self._folders,
            *(Path(folder).expanduser().resolve() for folder in retire_from),
        )
        self._graph = graph
        self._reserved = reserved_tool_names
        self._watch = watch
        self._limits = limits or SchemaLimits()
        self._problems: tuple[SchemaProblem, ...] = ()
        self._stop_watching = threading.Event()
        self._watcher: threading.Thread | None = None

    # --- pykka hooks ----------------------------------------------------------------------

    def on_start(self) -> None:
        self.rescan()
        if self._watch:
            self._start_watcher()

    def on_stop(self) -> None:
        self._stop_watcher()

    def on_failure(self, *exc_info: Any) -> None:
        self._stop_watcher()
        if self._supervision is not None:
            self._supervision.report_failure(exc_info[1])

    def on_receive(self, message: Any) -> Any:
        if isinstance(message, _FilesChanged):
            # A failing tell would kill the actor, and with it hot reload: log and carry on.
            try:
                self.rescan()
            except Exception:
                log.exception("schema_rescan_failed")
            return None
        return super().on_receive(message)

    # --- the public surface (through a proxy) ---------------------------------------------

    def rescan(self) -> ScanReport:
        """Scan the folders and bring the schemas in force in line with them."""
        scan = scan_folders(self._folders, self._reserved, self._limits)
        self._log_new_problems(scan.problems)
        self._problems = tuple(scan.problems)
        records = self._graph.query_schemas_blocking(lambda schemas: schemas.records())
        command = plan_registration(scan, records, self._owned)
        report = ScanReport(tuple(sorted(scan.definitions)), (), (), self._problems)
        if command is None:
            return report
        try:
            result = self._graph.execute_blocking(command, CAUSE)
        except CommandRejectedError as rejection:
            log.warning("schemas_not_registered", reason=rejection.message)
            return ScanReport(report.types, (), (), self._problems, rejection.message)
        log.info(
            "schemas_registered",
            types=len(scan.definitions),
            registered=len(result.registered),
            retired=len(result.retired),
            problems=len(scan.problems),
        )
        return ScanReport(
            report.types, tuple(result.registered), tuple(result.retired), self._problems
        )

    def problems(self) -> list[SchemaProblem]:
        """The files skipped by the last scan, and why."""
        return list(self._problems)

    # --- watching -------------------------------------------------------------------------

    def _log_new_problems(self, problems: Iterable[SchemaProblem]) -> None:
        for problem in problems:
            if problem not in self._problems:
                log.warning("schema_file_skipped", file=str(problem.path), reason=problem.reason)

    def _start_watcher(self) -> None:
        folders = [folder for folder in self._folders if folder.is_dir()]
        if not folders:
            return
        self._watcher = threading.Thread(
            target=self._watch_loop, args=(folders,), name="schema-watcher", daemon=True
        )
        self._watcher.start()

    def _stop_watcher(self) -> None:
        self._stop_watching.set()
        watcher, self._watcher = self._watcher, None
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(WATCH_JOIN_SECONDS)

    def _watch_loop(self, folders: list[Path]) -> None:
        """Runs on the watcher thread: tells the actor to rescan after each change."""
        ready = False
        try:
            for changes in watchfiles.watch(
                *folders,
                watch_filter=lambda _change, path: path.endswith(SUFFIX),
                debounce=WATCH_DEBOUNCE_MS,
                step=WATCH_STEP_MS,
                rust_timeout=WATCH_TIMEOUT_MS,
                yield_on_timeout=True,
                stop_event=self._stop_watching,
                recursive=False,
                raise_interrupt=False,
            ):
                # The first wake-up, changes or not, rescans once more: a file written
                # between the start-up scan and the watcher being set up is not missed.
                if changes or not ready:
                    ready = True
                    self.actor_ref.tell(_FilesChanged())
        except pykka.ActorDeadError:
            pass  # the actor stopped while a change came in
        except Exception:  # a watcher that cannot run must not take the registry down
            log.exception("schema_watch_failed", folders=[str(f) for f in folders])
