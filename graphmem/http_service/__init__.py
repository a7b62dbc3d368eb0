"""The guards in front of the MCP SDK's streamable-HTTP app, for a service many clients share.

Outermost first: Host/Origin checks (`origins`), bearer tokens (`auth`), `/health` and
`/metrics` (`observability`), unusable JSON-RPC ids (`ids`), session limits (`sessions`); and
below them all, a header-read timeout in uvicorn's protocol (`header_timeout`); innermost,
next to the SDK's app, whole-graph answers written in slices (`answer_splicer`).
"""

from graphmem.http_service.answer_splicer import AnswerSplicer
from graphmem.http_service.auth import (
    LOOPBACK_NAMES,
    BearerAuth,
    NamedToken,
    TokenError,
    exposure_problem,
    load_tokens,
    metrics_token,
)
from graphmem.http_service.header_timeout import header_timeout_protocol
from graphmem.http_service.ids import InvalidIdCheck
from graphmem.http_service.observability import MetricsTokenGate, Observability
from graphmem.http_service.origins import HostCheck, security_settings
from graphmem.http_service.sessions import SessionGuard, SessionLimits

__all__ = [
    "LOOPBACK_NAMES",
    "AnswerSplicer",
    "BearerAuth",
    "HostCheck",
    "InvalidIdCheck",
    "MetricsTokenGate",
    "NamedToken",
    "Observability",
    "SessionGuard",
    "SessionLimits",
    "TokenError",
    "exposure_problem",
    "header_timeout_protocol",
    "load_tokens",
    "metrics_token",
    "security_settings",
]
