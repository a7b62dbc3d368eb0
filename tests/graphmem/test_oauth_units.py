"""OAuth mode's pure parts: the settings, the plan, the gate's verdict on a token, what an
introspection answer means, and the built-in server's state file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from mcp.server.auth.provider import AccessToken
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import AnyUrl

from graphmem.config import HttpSettings, OAuthSettings, SettingsError
from graphmem.http_service import load_tokens
from graphmem.http_service.oauth import OAuthConfigError, OAuthStateError, plan_oauth, refusal
from graphmem.http_service.oauth.gate import challenge
from graphmem.http_service.oauth.introspection import access_token_from
from graphmem.http_service.oauth.state import BuiltinState, TokenRecord

HERE = "http://127.0.0.1:8765/mcp"
SECRET = "an-owner-secret-0123456789abcdef"


def token(**fields: object) -> AccessToken:
    values: dict[str, object] = {
        "token": "t",
        "client_id": "c",
        "scopes": ["memory"],
        "expires_at": 2000,
        "resource": HERE,
    }
    values.update(fields)
    return AccessToken.model_validate(values)


def test_oauth_is_off_unless_the_setting_names_a_mode() -> None:
    assert OAuthSettings.from_env({}).mode == "off"
    with pytest.raises(SettingsError, match="builtin, external"):
        OAuthSettings.from_env({"GRAPHMEM_OAUTH": "google"})


def test_external_mode_needs_the_issuer_and_its_introspection_endpoint() -> None:
    with pytest.raises(SettingsError, match="GRAPHMEM_OAUTH_INTROSPECTION_URL"):
        OAuthSettings.from_env(
            {"GRAPHMEM_OAUTH": "external", "GRAPHMEM_OAUTH_ISSUER_URL": "https://as.example"}
        )


def test_a_url_setting_with_a_query_is_refused_with_an_example() -> None:
    with pytest.raises(SettingsError, match="without query or fragment"):
        OAuthSettings.from_env({"GRAPHMEM_OAUTH_RESOURCE_URL": "https://m.example/mcp?x=1"})


def test_builtin_mode_without_an_owner_secret_or_a_static_token_cannot_start() -> None:
    builtin = OAuthSettings(mode="builtin")
    with pytest.raises(OAuthConfigError, match="GRAPHMEM_OAUTH_OWNER_SECRET"):
        plan_oauth(builtin, "127.0.0.1", 8765, ())
    static = load_tokens(HttpSettings(token=SECRET))
    plan = plan_oauth(builtin, "127.0.0.1", 8765, static)
    assert plan is not None and plan.owner == static


def test_a_token_files_named_tokens_cannot_approve_clients(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    file.write_text(f"alice:{SECRET}\n")
    named = load_tokens(HttpSettings(token_file=file))
    with pytest.raises(OAuthConfigError, match="a token file's tokens do not"):
        plan_oauth(OAuthSettings(mode="builtin"), "127.0.0.1", 8765, named)


def test_the_plan_binds_tokens_to_the_bound_address_unless_a_resource_url_is_set() -> None:
    plan = plan_oauth(OAuthSettings(mode="builtin", owner_secret=SECRET), "::1", 9000, ())
    assert plan is not None
    assert plan.resource == "http://[::1]:9000/mcp"
    assert plan.issuer == "http://[::1]:9000"
    assert plan.metadata_url == "http://[::1]:9000/.well-known/oauth-protected-resource/mcp"
    with pytest.raises(OAuthConfigError, match="GRAPHMEM_OAUTH_RESOURCE_URL"):
        plan_oauth(OAuthSettings(mode="builtin", owner_secret=SECRET), "0.0.0.0", 9000, ())
    public = OAuthSettings(
        mode="builtin", owner_secret=SECRET, resource_url="https://memory.example/mcp"
    )
    planned = plan_oauth(public, "0.0.0.0", 9000, ())
    assert planned is not None and planned.issuer == "https://memory.example"


def test_oauth_beyond_loopback_needs_https() -> None:
    with pytest.raises(OAuthConfigError, match="needs https"):
        plan_oauth(OAuthSettings(mode="builtin", owner_secret=SECRET), "192.0.2.1", 80, ())


def test_the_gate_refuses_expired_foreign_and_unknown_tokens_and_short_scopes() -> None:
    def verdict(found: AccessToken | None) -> tuple[int, str] | None:
        refused = refusal(found, resource=HERE, scopes=("memory",), now=1000.0)
        return None if refused is None else (refused.status, refused.description)

    assert verdict(token()) is None
    assert verdict(token(resource=HERE + "/")) is None  # a trailing slash is the same URL
    assert verdict(token(expires_at=None)) is None
    assert verdict(None) == (401, "the token is unknown, revoked or expired")
    assert verdict(token(expires_at=1000)) == (
        401,
        "the token has expired; refresh it or sign in again",
    )
    foreign = verdict(token(resource="https://elsewhere.example/mcp"))
    assert foreign is not None and foreign[0] == 401 and "elsewhere.example" in foreign[1]
    assert verdict(token(resource=None)) == (
        401,
        f"the token was issued for no resource, not for {HERE}",
    )
    assert verdict(token(scopes=["other"])) == (403, "the token lacks scope memory")


def test_the_challenge_names_an_error_only_when_a_token_came() -> None:
    metadata = "http://h/.well-known/oauth-protected-resource/mcp"
    assert challenge(metadata, None) == f'Bearer resource_metadata="{metadata}"'
    refused = refusal(None, resource=HERE, scopes=(), now=0.0)
    assert challenge(metadata, refused).startswith('Bearer error="invalid_token", ')


def test_an_introspection_answer_gives_the_audience_that_is_this_service() -> None:
    answer = {
        "active": True,
        "aud": ["https://other.example", HERE + "/"],
        "scope": "memory extra",
        "exp": 1234,
        "client_id": "c1",
        "sub": "owner",
        "iss": "https://as.example/",
    }
    found = access_token_from(answer, "t", issuer="https://as.example", resource=HERE)
    assert found is not None
    assert (found.resource, found.scopes, found.expires_at) == (
        HERE + "/",
        ["memory", "extra"],
        1234,
    )
    elsewhere = access_token_from(
        {**answer, "aud": "https://other.example"}, "t", issuer="https://as.example", resource=HERE
    )
    assert elsewhere is not None and elsewhere.resource == "https://other.example"
    assert (
        access_token_from(
            {**answer, "active": False}, "t", issuer="https://as.example", resource=HERE
        )
        is None
    )
    assert access_token_from(answer, "t", issuer="https://evil.example", resource=HERE) is None


def client(client_id: str) -> OAuthClientInformationFull:
    return OAuthClientInformationFull(
        client_id=client_id, redirect_uris=[AnyUrl("http://127.0.0.1:9/cb")]
    )


def test_the_state_file_keeps_clients_and_token_digests_only(tmp_path: Path) -> None:
    path = tmp_path / "oauth.json"
    state = BuiltinState(path, lambda: 100.0)
    assert state.add_client(client("c1"))
    record = TokenRecord("access", "c1", ["memory"], 200, HERE, "g")
    state.add_tokens({"secret-access-token": record})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "secret-access-token" not in path.read_text()
    again = BuiltinState(path, lambda: 100.0)
    assert again.client("c1") == client("c1")
    assert again.token("secret-access-token", "access") == record
    assert again.token("secret-access-token", "refresh") is None
    later = BuiltinState(path, lambda: 300.0)
    later.add_tokens({})  # a write drops what has expired
    assert BuiltinState(path, lambda: 300.0).token("secret-access-token", "access") is None


def test_registrations_are_bounded_and_never_push_out_a_client_holding_a_live_token(
    tmp_path: Path,
) -> None:
    state = BuiltinState(tmp_path / "oauth.json", lambda: 100.0, max_clients=2)
    assert state.add_client(client("holder"))
    state.add_tokens({"t": TokenRecord("access", "holder", [], 200, HERE, "g")})
    assert state.add_client(client("idle"))
    assert state.add_client(client("newer"))  # pushes out "idle", not "holder"
    assert state.client("idle") is None and state.client("holder") is not None
    state.add_tokens({"u": TokenRecord("access", "newer", [], 200, HERE, "h")})
    assert not state.add_client(client("one too many"))
    assert state.client_count() == 2


def test_a_damaged_state_file_stops_start_up_saying_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "oauth.json"
    path.write_text("{not json")
    with pytest.raises(OAuthStateError, match="move it aside"):
        BuiltinState(path, lambda: 0.0)
