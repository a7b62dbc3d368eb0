"""OAuth 2.1 for remote clients (GRAPHMEM_OAUTH): the HTTP service as a resource server whose
tokens come from an external authorization server (`introspection`) or from its own
single-user one (`provider`, `consent`, `state`), checked at the door by `gate`."""

from graphmem.http_service.oauth.gate import OAuthGate, Refusal, refusal
from graphmem.http_service.oauth.setup import (
    OAuthConfigError,
    OAuthPlan,
    OAuthService,
    plan_oauth,
    start_oauth,
)
from graphmem.http_service.oauth.state import OAuthStateError

__all__ = [
    "OAuthConfigError",
    "OAuthGate",
    "OAuthPlan",
    "OAuthService",
    "OAuthStateError",
    "Refusal",
    "plan_oauth",
    "refusal",
    "start_oauth",
]
