"""Settings: read once from the environment (and command-line overrides) at start-up."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

from eventstore.hlc import HybridLogicalClock, WallClock
from eventstore.log import Durability
from graphmem.limits import InputLimits
from projections.entity_schema import SchemaLimits


class SettingsError(ValueError):
    """A setting has a value graphmem cannot use; the message says which and what is allowed."""


# Tool families a profile may select (GRAPHMEM_TOOLS, --tools); `graph` comes with the graph family.
TOOL_FAMILIES = ("memory", "schema", "mesh", "graph")
DEFAULT_TOOLS = ("memory", "schema")
# Opt-in schema sets shipped as subfolders of the shipped schemas folder: MemoryMesh's RPG set,
# and the seed's smaller one with enums.
SCHEMA_SETS = ("rpg", "rpg-seed")
# A single JSON-RPC line may carry a large call (a 10 MB observation is refused by the tool,
# but it must first be read to be refused); past this, the line is refused with an error.
MAX_LINE_BYTES = 256 * 1024 * 1024


def shipped_schemas_dir() -> Path:
    """The schema files shipped with graphmem: inside the installed wheel, or the source tree."""
    installed = Path(__file__).resolve().parent / "_schemas"
    if installed.is_dir():
        return installed
    return Path(__file__).resolve().parent.parent / "schemas"


def parse_tools(value: str, where: str = "GRAPHMEM_TOOLS") -> tuple[str, ...]:
    """A comma-separated list of tool families, e.g. "memory,schema,mesh"."""
    names = tuple(dict.fromkeys(n.strip().lower() for n in value.split(",") if n.strip()))
    unknown = [n for n in names if n not in TOOL_FAMILIES]
    if unknown or not names:
        raise SettingsError(
            f"{where}={value!r} is not a list of tool families; use a comma-separated list "
            f"of: {', '.join(TOOL_FAMILIES)} (default {','.join(DEFAULT_TOOLS)})"
        )
    return names


# GRAPHMEM_OAUTH: who vouches for the bearer tokens of the HTTP service. "off": only the static
# tokens; "builtin": graphmem is its own single-user authorization server; "external": tokens
# come from another authorization server and are checked by its introspection endpoint.
OAUTH_MODES = ("off", "builtin", "external")


@dataclass(frozen=True)
class OAuthSettings:
    """OAuth 2.1 for remote clients (off unless GRAPHMEM_OAUTH is builtin or external)."""

    mode: str = "off"
    # The URL clients reach /mcp at (the tokens' audience); None: http://HOST:PORT/mcp.
    resource_url: str | None = None
    # The authorization server's issuer; None with builtin: the resource URL's origin.
    issuer_url: str | None = None
    # external: the RFC 7662 endpoint, and the credentials this service presents to it;
    # and/or the JWKS URL whose keys sign the server's JWT access tokens.
    introspection_url: str | None = None
    jwks_url: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    # Scopes a token must carry (and builtin grants).
    scopes: tuple[str, ...] = ("memory",)
    # builtin: the secret the owner types to approve a client (else the static token does).
    owner_secret: str | None = field(default=None, repr=False)
    # builtin: other resources (graphmem services using this one as their external server)
    # it may issue tokens for.
    audiences: tuple[str, ...] = ()
    access_token_seconds: float = 3600.0
    refresh_token_seconds: float = 30 * 86400.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OAuthSettings:
        mode = (env.get("GRAPHMEM_OAUTH") or "off").strip().lower()
        if mode not in OAUTH_MODES:
            raise SettingsError(
                f"GRAPHMEM_OAUTH={env['GRAPHMEM_OAUTH']!r} is not an OAuth mode; use one of: "
                f"{', '.join(OAUTH_MODES)} (default off: static bearer tokens only)"
            )
        urls = {
            name: _url(env, name)
            for name in (
                "GRAPHMEM_OAUTH_RESOURCE_URL",
                "GRAPHMEM_OAUTH_ISSUER_URL",
                "GRAPHMEM_OAUTH_INTROSPECTION_URL",
                "GRAPHMEM_OAUTH_JWKS_URL",
            )
        }
        checks = (urls["GRAPHMEM_OAUTH_INTROSPECTION_URL"], urls["GRAPHMEM_OAUTH_JWKS_URL"])
        if mode == "external" and (
            urls["GRAPHMEM_OAUTH_ISSUER_URL"] is None or checks == (None, None)
        ):
            raise SettingsError(
                "GRAPHMEM_OAUTH=external needs GRAPHMEM_OAUTH_ISSUER_URL (the authorization "
                "server's issuer) and a way to check its tokens: GRAPHMEM_OAUTH_INTROSPECTION_URL "
                "(its RFC 7662 endpoint) and/or GRAPHMEM_OAUTH_JWKS_URL (the keys that sign its "
                "JWT access tokens)"
            )
        scopes = tuple(dict.fromkeys(_items(env.get("GRAPHMEM_OAUTH_SCOPES", "memory"))))
        defaults = cls()
        return cls(
            mode=mode,
            resource_url=urls["GRAPHMEM_OAUTH_RESOURCE_URL"],
            issuer_url=urls["GRAPHMEM_OAUTH_ISSUER_URL"],
            introspection_url=urls["GRAPHMEM_OAUTH_INTROSPECTION_URL"],
            jwks_url=urls["GRAPHMEM_OAUTH_JWKS_URL"],
            client_id=env.get("GRAPHMEM_OAUTH_CLIENT_ID") or None,
            client_secret=env.get("GRAPHMEM_OAUTH_CLIENT_SECRET") or None,
            scopes=scopes,
            owner_secret=env.get("GRAPHMEM_OAUTH_OWNER_SECRET") or None,
            audiences=tuple(u.rstrip("/") for u in _items(env.get("GRAPHMEM_OAUTH_AUDIENCES", ""))),
            access_token_seconds=_seconds(
                env, "GRAPHMEM_OAUTH_ACCESS_TOKEN_SECONDS", defaults.access_token_seconds
            ),
            refresh_token_seconds=_seconds(
                env, "GRAPHMEM_OAUTH_REFRESH_TOKEN_SECONDS", defaults.refresh_token_seconds
            ),
        )


def _url(env: Mapping[str, str], name: str) -> str | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return None
    if not re.fullmatch(r"https?://[^\s/?#]+(/[^\s?#]*)?", raw):
        raise SettingsError(
            f"{name}={raw!r} is not an http(s) URL without query or fragment "
            "(e.g. https://memory.example.com/mcp)"
        )
    return raw.rstrip("/") if raw.count("/") > 2 else raw


@dataclass(frozen=True)
class HttpSettings:
    """The shared HTTP service's guards: who may call it, by which names, and what it holds."""

    # Bearer tokens: one unnamed (named "default") and/or a file of `name:token` lines.
    token: str | None = field(default=None, repr=False)
    token_file: Path | None = None
    # A token good for /health and /metrics only (a scraper's), besides the client tokens.
    metrics_token: str | None = field(default=None, repr=False)
    # Host and Origin values accepted besides those derived from the bind address.
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    # A session with no request in flight for this long is closed.
    session_idle_seconds: float = 300.0
    max_sessions: int = 1000
    max_sessions_per_client: int = 100
    # A connection must send a request's whole header within this many seconds.
    header_timeout_seconds: float = 10.0
    # Answer each POST with one JSON body instead of an SSE stream (the SDK's json_response).
    json_response: bool = False
    oauth: OAuthSettings = field(default_factory=OAuthSettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> HttpSettings:
        defaults = cls()
        token_file = env.get("GRAPHMEM_HTTP_TOKEN_FILE")
        return cls(
            token=env.get("GRAPHMEM_HTTP_TOKEN") or None,
            token_file=Path(token_file).expanduser() if token_file else None,
            metrics_token=env.get("GRAPHMEM_METRICS_TOKEN") or None,
            allowed_hosts=tuple(_items(env.get("GRAPHMEM_HTTP_ALLOWED_HOSTS", ""))),
            allowed_origins=tuple(_items(env.get("GRAPHMEM_HTTP_ALLOWED_ORIGINS", ""))),
            session_idle_seconds=_seconds(
                env, "GRAPHMEM_HTTP_SESSION_IDLE_SECONDS", defaults.session_idle_seconds
            ),
            max_sessions=_positive(env, "GRAPHMEM_HTTP_MAX_SESSIONS", defaults.max_sessions),
            max_sessions_per_client=_positive(
                env, "GRAPHMEM_HTTP_MAX_SESSIONS_PER_CLIENT", defaults.max_sessions_per_client
            ),
            header_timeout_seconds=_seconds(
                env, "GRAPHMEM_HTTP_HEADER_TIMEOUT_SECONDS", defaults.header_timeout_seconds
            ),
            json_response=_flag(env, "GRAPHMEM_HTTP_JSON_RESPONSE", default=False),
            oauth=OAuthSettings.from_env(env),
        )


# The embedders GRAPHMEM_EMBEDDER may name: the built-in lexical one, and the semantic one
# (an optional install; whether it is installed is checked where it is loaded, not here).
EMBEDDERS = ("hash", "semantic")
# GRAPHMEM_CLOCK_OFFSET_DAYS ages a graph for tests; a century is far past any decay horizon
# and keeps shifted stamps inside the clock's range.
MAX_CLOCK_OFFSET_DAYS = 36_500.0


@dataclass(frozen=True)
class GraphSettings:
    """The graph family's settings: its home folder, transcripts, embedder and test clock."""

    # None: <data dir>/graph-memory, resolved by Settings.graph_home (it follows --data-dir).
    home: Path | None = None
    # expanduser rather than Path.home(): it leaves "~" as is instead of raising without a home.
    transcripts_dir: Path = field(
        default_factory=lambda: Path(os.path.expanduser("~/.claude/projects"))
    )
    embedder: str = "hash"
    # Tests only: days added to every wall-clock reading (event stamps and every rule).
    clock_offset_days: float = 0.0
    # GRAPHMEM_DECAY_SCHEDULE=off: no scheduled decay runs (graph_decay still runs on demand).
    decay_schedule: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> GraphSettings:
        home = env.get("GRAPHMEM_GRAPH_HOME")
        transcripts = env.get("GRAPHMEM_TRANSCRIPTS_DIR")
        return cls(
            home=Path(home).expanduser() if home else None,
            transcripts_dir=(
                Path(transcripts).expanduser() if transcripts else cls().transcripts_dir
            ),
            embedder=_embedder(env.get("GRAPHMEM_EMBEDDER", "")),
            clock_offset_days=_clock_offset_days(env.get("GRAPHMEM_CLOCK_OFFSET_DAYS", "")),
            decay_schedule=_decay_schedule(env.get("GRAPHMEM_DECAY_SCHEDULE", "")),
        )

    def wall_clock(self) -> WallClock:
        """The one wall clock of the process: stamps and every time-based rule read it."""
        return WallClock.shifted_by_days(self.clock_offset_days)


# Node ids and group names become NATS subject tokens and stream-name parts.
_REPLICA_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")
_REPLICA_GROUP = re.compile(r"[A-Za-z0-9-]{1,32}")  # no "_": it separates group from node


@dataclass(frozen=True)
class ReplicationSettings:
    """Replication across machines over NATS JetStream (off unless `url` is set)."""

    url: str | None = None  # GRAPHMEM_REPLICATE / serve --replicate: nats://HOST:PORT[,...]
    group: str = "graphmem"  # several memories may share one hub, one group each
    creds: Path | None = None  # a NATS .creds file (JWT + nkey seed)
    tls_ca: Path | None = None  # the CA that signed the hub's certificate
    tls_cert: Path | None = None  # a client certificate and key, for mutual TLS
    tls_key: Path | None = None
    # Explicit limits of this node's stream on the hub: when full the hub refuses new events
    # (discard new) rather than dropping old ones; the log keeps them and retries.
    max_stream_bytes: int = 1 << 30
    stream_replicas: int = 1  # 3 on an R3 cluster
    # The members whose received-frontiers gate tombstone collection (graphmem compact).
    members: tuple[str, ...] = ()
    # How often the hub's stream list is read to find new peers.
    discover_seconds: float = 1.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ReplicationSettings:
        group = env.get("GRAPHMEM_REPLICA_GROUP") or "graphmem"
        if not _REPLICA_GROUP.fullmatch(group):
            raise SettingsError(
                f"GRAPHMEM_REPLICA_GROUP={group!r} must be 1 to 32 letters, digits or '-' "
                "(default graphmem)"
            )
        members = tuple(dict.fromkeys(_items(env.get("GRAPHMEM_REPLICA_MEMBERS", ""))))
        if bad := [m for m in members if not _REPLICA_TOKEN.fullmatch(m)]:
            raise SettingsError(
                f"GRAPHMEM_REPLICA_MEMBERS: {', '.join(map(repr, bad))} is not a node id "
                "(letters, digits, '-' or '_')"
            )

        def path(name: str) -> Path | None:
            raw = env.get(name)
            return Path(raw).expanduser() if raw else None

        return cls(
            url=(env.get("GRAPHMEM_REPLICATE") or "").strip() or None,
            group=group,
            creds=path("GRAPHMEM_REPLICA_CREDS"),
            tls_ca=path("GRAPHMEM_REPLICA_TLS_CA"),
            tls_cert=path("GRAPHMEM_REPLICA_TLS_CERT"),
            tls_key=path("GRAPHMEM_REPLICA_TLS_KEY"),
            max_stream_bytes=_positive(env, "GRAPHMEM_REPLICA_MAX_BYTES", cls.max_stream_bytes),
            stream_replicas=_positive(env, "GRAPHMEM_REPLICA_STREAM_REPLICAS", 1),
            members=members,
            discover_seconds=_seconds(env, "GRAPHMEM_REPLICA_DISCOVER_SECONDS", 1.0),
        )


def replica_token_problem(node_id: str) -> str | None:
    """Why `node_id` cannot name this node on a hub, or None."""
    if _REPLICA_TOKEN.fullmatch(node_id):
        return None
    return (
        f"node id {node_id!r} cannot name a NATS subject: set GRAPHMEM_NODE_ID to 1 to 64 "
        "letters, digits, '-' or '_'"
    )


@dataclass(frozen=True)
class Settings:
    """Everything configurable, with the defaults a fresh install runs on."""

    data_dir: Path
    node_id: str | None = None
    durability: Durability = Durability.EVERYSEC
    log_level: str | None = None  # None: INFO, or WARNING for a one-shot command on a terminal
    # GRAPHMEM_LOG_FILE: JSON log lines to this file, rotated by size, instead of stderr.
    log_file: Path | None = None
    log_file_max_bytes: int = 10 << 20
    log_file_backups: int = 5
    # Scheduled backups (GRAPHMEM_BACKUP_DIR): `serve` backs up every so many hours into
    # dated folders there, keeping the newest `backup_keep`.
    backup_dir: Path | None = None
    backup_every_hours: float = 24.0
    backup_keep: int = 7
    limits: InputLimits = field(default_factory=InputLimits)
    tools: tuple[str, ...] = DEFAULT_TOOLS
    # User schema folders, loaded after (and overriding) the shipped ones.
    schema_dirs: tuple[Path, ...] = ()
    schema_sets: tuple[str, ...] = ()
    # The shipped general-purpose set (person, project, ...); GRAPHMEM_DEFAULT_SCHEMAS=false
    # leaves it out, e.g. for a MemoryMesh user who brings their own set.
    default_schemas: bool = True
    watch_schemas: bool = True
    schema_limits: SchemaLimits = field(default_factory=SchemaLimits)
    # Hooks as "module:callable", besides those installed as `graphmem.hooks` entry points.
    hooks: tuple[str, ...] = ()
    # Events folded between two checkpoints of the read models; 0 turns checkpoints off.
    checkpoint_every: int = 100_000
    # Answer plain tools/call lines on stdio off the SDK's per-call pipeline (graphmem.wire).
    fast_calls: bool = True
    # Read by graphmem.early_handshake before any settings load; here it is only checked.
    early_handshake: bool = True
    # Serve a handshake-era stdio session's plain traffic without the SDK (graphmem.wire.front).
    lazy_sdk: bool = True
    # Keep the graph's read image beside the log and serve the official reads from it until
    # something else is asked (actors.graph_images): a spawned server that only reads never
    # holds the graph in memory.
    graph_image: bool = True
    # Seconds a serving writer waits idle after restoring the graph (a write, a graph_* call)
    # before it saves a checkpoint and its image and serves from the image again, handing part
    # of the graph's memory back; 0 (the default): it keeps the graph until it stops (the
    # next write would restore it, ~1.5 s at 300,000 entities, for ~13 % of the process).
    graph_image_idle: int = 0
    # Entities and relations written over the graph's image (changed, created, deleted)
    # before a child process compacts them into a new image, at least (an eighth of the
    # image's entities on larger graphs): what the writer's heap holds of the graph at most.
    graph_image_compact: int = 8_192
    http: HttpSettings = field(default_factory=HttpSettings)
    graph: GraphSettings = field(default_factory=GraphSettings)
    # Longest JSON-RPC line read on stdio; a longer one is refused with an error.
    max_line_bytes: int = MAX_LINE_BYTES
    replication: ReplicationSettings = field(default_factory=ReplicationSettings)

    @property
    def schema_folders(self) -> tuple[Path, ...]:
        """Every folder schemas load from, in order: shipped (unless turned off), opted-in
        sets, the user's."""
        shipped = shipped_schemas_dir()
        default = (shipped,) if self.default_schemas else ()
        return (*default, *(shipped / name for name in self.schema_sets), *self.schema_dirs)

    @property
    def retired_schema_folders(self) -> tuple[Path, ...]:
        """Shipped folders turned off: types registered from them go out of force."""
        return () if self.default_schemas else (shipped_schemas_dir(),)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        data_dir = env.get("GRAPHMEM_DIR") or platformdirs.user_data_dir("graphmem")
        durability_name = env.get("GRAPHMEM_DURABILITY") or Durability.EVERYSEC.value
        try:
            durability = Durability(durability_name.lower())
        except ValueError:
            allowed = ", ".join(d.value for d in Durability)
            raise SettingsError(
                f"GRAPHMEM_DURABILITY={durability_name!r} is not a durability mode; "
                f"use one of: {allowed}"
            ) from None
        defaults = InputLimits()
        limits = InputLimits(
            max_items=_positive(env, "GRAPHMEM_MAX_ITEMS", defaults.max_items),
            max_name_chars=_positive(env, "GRAPHMEM_MAX_NAME_CHARS", defaults.max_name_chars),
            max_content_chars=_positive(
                env, "GRAPHMEM_MAX_OBSERVATION_CHARS", defaults.max_content_chars
            ),
            max_query_chars=_positive(env, "GRAPHMEM_MAX_QUERY_CHARS", defaults.max_query_chars),
        )
        schema_dirs = env.get("GRAPHMEM_SCHEMAS_DIR")
        return cls(
            limits=limits,
            data_dir=Path(data_dir).expanduser(),
            node_id=env.get("GRAPHMEM_NODE_ID") or None,
            durability=durability,
            log_level=(env.get("GRAPHMEM_LOG_LEVEL") or "").upper() or None,
            log_file=Path(env["GRAPHMEM_LOG_FILE"]).expanduser()
            if env.get("GRAPHMEM_LOG_FILE")
            else None,
            log_file_max_bytes=_positive(env, "GRAPHMEM_LOG_FILE_MAX_BYTES", 10 << 20),
            log_file_backups=_non_negative(env, "GRAPHMEM_LOG_FILE_BACKUPS", 5),
            backup_dir=Path(env["GRAPHMEM_BACKUP_DIR"]).expanduser()
            if env.get("GRAPHMEM_BACKUP_DIR")
            else None,
            backup_every_hours=_seconds(env, "GRAPHMEM_BACKUP_EVERY_HOURS", 24.0, "hours"),
            backup_keep=_positive(env, "GRAPHMEM_BACKUP_KEEP", 7),
            tools=parse_tools(env["GRAPHMEM_TOOLS"])
            if env.get("GRAPHMEM_TOOLS")
            else DEFAULT_TOOLS,
            schema_dirs=(
                tuple(Path(p).expanduser() for p in schema_dirs.split(os.pathsep) if p)
                if schema_dirs is not None
                else (Path(platformdirs.user_config_dir("graphmem")) / "schemas",)
            ),
            schema_sets=_schema_sets(env.get("GRAPHMEM_SCHEMA_SETS", "")),
            default_schemas=_flag(env, "GRAPHMEM_DEFAULT_SCHEMAS", default=True),
            watch_schemas=_flag(env, "GRAPHMEM_WATCH_SCHEMAS", default=True),
            schema_limits=SchemaLimits(
                max_file_bytes=_positive(
                    env, "GRAPHMEM_MAX_SCHEMA_BYTES", SchemaLimits().max_file_bytes
                )
            ),
            hooks=tuple(_items(env.get("GRAPHMEM_HOOKS", ""))),
            checkpoint_every=_non_negative(env, "GRAPHMEM_CHECKPOINT_EVERY", 100_000),
            fast_calls=_flag(env, "GRAPHMEM_FAST_CALLS", default=True),
            early_handshake=_flag(env, "GRAPHMEM_EARLY_HANDSHAKE", default=True),
            lazy_sdk=_flag(env, "GRAPHMEM_LAZY_SDK", default=True),
            graph_image=_flag(env, "GRAPHMEM_GRAPH_IMAGE", default=True),
            graph_image_idle=_non_negative(env, "GRAPHMEM_GRAPH_IMAGE_IDLE", 0),
            graph_image_compact=_positive(env, "GRAPHMEM_GRAPH_IMAGE_COMPACT", 8_192),
            http=HttpSettings.from_env(env),
            graph=GraphSettings.from_env(env),
            max_line_bytes=_positive(env, "GRAPHMEM_MAX_LINE_BYTES", MAX_LINE_BYTES),
            replication=ReplicationSettings.from_env(env),
        )

    @property
    def graph_home(self) -> Path:
        """The graph family's folder (GRAPHMEM_GRAPH_HOME, else <data dir>/graph-memory)."""
        return self.graph.home if self.graph.home is not None else self.data_dir / "graph-memory"

    def hybrid_clock(self) -> HybridLogicalClock:
        """The clock a log opened for this process stamps with (see GraphSettings.wall_clock)."""
        return HybridLogicalClock(self.graph.wall_clock())

    def with_data_dir(self, data_dir: str | Path) -> Settings:
        return replace(self, data_dir=Path(data_dir).expanduser())

    def with_tools(self, tools: tuple[str, ...]) -> Settings:
        return replace(self, tools=tools)

    def with_replicate(self, url: str) -> Settings:
        return replace(self, replication=replace(self.replication, url=url))


def _non_negative(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = -1
    if value < 0:
        raise SettingsError(f"{name}={raw!r} must be a whole number, 0 or more (default {default})")
    return value


def _items(value: str) -> Iterable[str]:
    return (item.strip() for item in value.split(",") if item.strip())


def _schema_sets(value: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(n.lower() for n in _items(value)))
    unknown = [n for n in names if n not in SCHEMA_SETS]
    if unknown:
        raise SettingsError(
            f"GRAPHMEM_SCHEMA_SETS={value!r}: {', '.join(unknown)} is not a shipped schema "
            f"set; the sets are: {', '.join(SCHEMA_SETS)}"
        )
    return names


def _flag(env: Mapping[str, str], name: str, *, default: bool) -> bool:
    raw = env.get(name)
    if not raw:
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={raw!r} must be 1/true/yes/on or 0/false/no/off")


def _positive(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise SettingsError(f"{name}={raw!r} must be a positive whole number (default {default})")
    return value


def _seconds(env: Mapping[str, str], name: str, default: float, unit: str = "seconds") -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise SettingsError(
            f"{name}={raw!r} must be a positive number of {unit} (default {default:g})"
        )
    return value


def _embedder(raw: str) -> str:
    name = raw.strip().lower() or "hash"
    if name not in EMBEDDERS:
        raise SettingsError(
            f"GRAPHMEM_EMBEDDER={raw!r} is not an embedder; use one of: {', '.join(EMBEDDERS)} "
            "(default hash)"
        )
    return name


def _decay_schedule(raw: str) -> bool:
    name = raw.strip().lower() or "on"
    if name not in ("on", "off"):
        raise SettingsError(
            f"GRAPHMEM_DECAY_SCHEDULE={raw!r} must be on or off (default on: decay runs every "
            "decay.schedule_hours of the graph home's config.json)"
        )
    return name == "on"


def _clock_offset_days(raw: str) -> float:
    if not raw.strip():
        return 0.0
    try:
        value = float(raw.replace("_", ""))
    except ValueError:
        value = -1.0
    # Not negative: the hybrid clock never goes back, so a clock set behind the log's last
    # stamp would stamp events later than the "now" the rules read, and the two would disagree.
    if not 0.0 <= value <= MAX_CLOCK_OFFSET_DAYS:
        raise SettingsError(
            f"GRAPHMEM_CLOCK_OFFSET_DAYS={raw!r} must be a number of days from 0 to "
            f"{MAX_CLOCK_OFFSET_DAYS:g} (fractions allowed, default 0); it is for tests only"
        )
    return value
