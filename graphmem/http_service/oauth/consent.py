"""The built-in server's own pages: the owner's consent step, and token introspection.

Consent is where "single-user" is enforced: a client's authorize request reaches a code only
through a POST here carrying the owner's secret (GRAPHMEM_OAUTH_OWNER_SECRET, else one of the
static tokens). Whoever merely reaches the URL gets a form, never a token. The page may not be
framed (no click-jacking), and a request survives only a few wrong secrets.

Introspection (RFC 7662) lets another graphmem (GRAPHMEM_OAUTH=external) check tokens issued
here; the caller must authenticate as a confidential client registered here.
"""

from __future__ import annotations

import html

import structlog
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from graphmem.http_service.auth import NamedToken, match
from graphmem.http_service.oauth.provider import SingleUserProvider

log = structlog.get_logger(__name__)

CONSENT_PATH = "/consent"
INTROSPECTION_PATH = "/introspect"
_NO_FRAMING = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'; default-src 'none'",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


def _page(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><meta charset=utf-8><title>graphmem: approve a client</title>{body}",
        status_code=status,
        headers=_NO_FRAMING,
    )


def consent_routes(provider: SingleUserProvider, owner: tuple[NamedToken, ...]) -> list[Route]:
    """The consent page (GET shows it, POST decides) and the introspection endpoint."""

    async def consent(request: Request) -> Response:
        if request.method == "GET":
            request_id = request.query_params.get("request", "")
            return _form(provider, request_id)
        form = await request.form()
        request_id = str(form.get("request", ""))
        if provider.parked(request_id) is None:
            return _page(
                "<p>This approval request is unknown or has expired; start the "
                "connection from the client again.</p>",
                404,
            )
        if form.get("decision") == "deny":
            return RedirectResponse(provider.deny(request_id), 302, headers=_NO_FRAMING)
        if match(owner, str(form.get("secret", ""))) is None:
            provider.wrong_secret(request_id)
            log.warning("oauth_consent_wrong_secret", client=request.client and request.client.host)
            return _page(
                "<p>That is not the owner secret (GRAPHMEM_OAUTH_OWNER_SECRET, or the "
                "service's GRAPHMEM_HTTP_TOKEN when that is unset). Go back and try "
                "again; a few wrong tries cancel the request.</p>",
                403,
            )
        return RedirectResponse(provider.approve(request_id), 302, headers=_NO_FRAMING)

    authenticator = ClientAuthenticator(provider)

    async def introspect(request: Request) -> Response:
        try:
            client = await authenticator.authenticate_request(request)
        except AuthenticationError as error:
            client, reason = None, error.message
        else:
            reason = "introspection needs a confidential client (one with a client secret)"
        if client is None or not client.client_secret:
            return JSONResponse(
                {"error": "invalid_client", "error_description": reason},
                status_code=401,
                headers={"WWW-Authenticate": 'Basic realm="graphmem"'},
            )
        token = str((await request.form()).get("token", ""))
        return JSONResponse(await provider.introspect(token), headers={"Cache-Control": "no-store"})

    return [
        Route(CONSENT_PATH, consent, methods=["GET", "POST"]),
        Route(INTROSPECTION_PATH, introspect, methods=["POST"]),
    ]


def _form(provider: SingleUserProvider, request_id: str) -> HTMLResponse:
    pending = provider.parked(request_id)
    if pending is None:
        return _page(
            "<p>This approval request is unknown or has expired; start the "
            "connection from the client again.</p>",
            404,
        )
    client = pending.client
    e = html.escape
    scopes = " ".join(pending.params.scopes or provider.scopes)
    return _page(
        f"<h1>Approve {e(client.client_name or 'an unnamed client')}?</h1>"
        f"<p>Client id <code>{e(client.client_id or '')}</code> asks for access to the "
        f"memory at <code>{e(pending.resource)}</code> (scopes: {e(scopes)}); it will be "
        f"sent back to <code>{e(str(pending.params.redirect_uri))}</code>.</p>"
        f'<form method="post" action="{CONSENT_PATH}">'
        f'<input type="hidden" name="request" value="{e(request_id)}">'
        '<label>Owner secret <input type="password" name="secret" autofocus></label> '
        '<button name="decision" value="approve">Approve</button> '
        '<button name="decision" value="deny">Deny</button></form>'
    )
