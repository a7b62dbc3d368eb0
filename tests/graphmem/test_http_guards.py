"""The HTTP guards' pure parts: tokens, bind rules, allowed hosts and origins, id checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphmem.config import HttpSettings
from graphmem.http_service import TokenError, exposure_problem, load_tokens, security_settings
from graphmem.http_service.auth import match
from graphmem.http_service.ids import id_problem

LONG = "0123456789abcdef-long-enough"


def test_tokens_come_from_the_setting_and_the_file_each_with_its_name(tmp_path: Path) -> None:
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text(f"# team\nalice:{LONG}-a\n\n bob : {LONG}-b \n")
    tokens = load_tokens(HttpSettings(token=LONG, token_file=tokens_file))
    assert [t.name for t in tokens] == ["default", "alice", "bob"]
    assert match(tokens, f"{LONG}-b") == "bob"
    assert match(tokens, LONG) == "default"
    assert match(tokens, f"{LONG}-c") is None
    assert match(tokens, "") is None
    assert LONG not in repr(tokens)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("alice\n", "line 1 is not `name:token`"),
        (f"alice:{LONG}\nbob:short\n", "line 2: the token is shorter than 16"),
        (f"alice:{LONG}\nalice:{LONG}x\n", "repeated: alice"),
        ("# nothing\n", "holds no `name:token` line"),
    ],
)
def test_a_bad_token_file_says_what_is_wrong(tmp_path: Path, text: str, fragment: str) -> None:
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text(text)
    with pytest.raises(TokenError, match="GRAPHMEM_HTTP_TOKEN_FILE") as problem:
        load_tokens(HttpSettings(token_file=tokens_file))
    assert fragment in str(problem.value)
    assert LONG not in str(problem.value)


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.2", "::", "192.168.1.5", "memory.example"])
def test_every_host_but_the_loopback_names_needs_a_token(host: str) -> None:
    problem = exposure_problem(host, ())
    assert problem is not None and "GRAPHMEM_HTTP_TOKEN" in problem
    assert exposure_problem(host, load_tokens(HttpSettings(token=LONG))) is None


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1"])
def test_the_loopback_names_need_no_token(host: str) -> None:
    assert exposure_problem(host, ()) is None


def test_allowed_hosts_and_origins_derive_from_the_bind_address_and_the_settings() -> None:
    settings = security_settings(
        "10.0.0.5", ("memory.example", "proxy.example:443", "fe80::1"), ("https://app.example/",)
    )
    assert settings.enable_dns_rebinding_protection
    hosts = set(settings.allowed_hosts)
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "10.0.0.5", "10.0.0.5:*"} <= hosts
    assert {"memory.example", "memory.example:*", "proxy.example:443", "[fe80::1]:*"} <= hosts
    assert "proxy.example:443:*" not in hosts
    origins = set(settings.allowed_origins)
    assert {"http://10.0.0.5:*", "https://memory.example", "https://app.example"} <= origins


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', "an object"),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', "a boolean"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', "a fraction"),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', "null"),
        (b'{"jsonrpc":"2.0","id":[1],"method":"ping"}', "an array"),
    ],
)
def test_an_id_that_is_not_a_string_or_an_integer_is_a_problem(body: bytes, kind: str) -> None:
    problem = id_problem(body)
    assert problem is not None and kind in problem


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc":"2.0","id":7,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":"x","method":"ping"}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}',
        b"not json",
        b"[" * 5000 + b"]" * 5000,
    ],
)
def test_good_ids_and_bodies_the_sdk_answers_are_no_problem(body: bytes) -> None:
    assert id_problem(body) is None
