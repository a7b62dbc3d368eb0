"""The SDK's answer to a well-formed `initialize`, made without the SDK.

The answer is a pure function of the requested protocol version and of the server's identity:
the SDK negotiates the version (the one asked for when it speaks it, else its latest of the
handshake era: mcp.server.runner.ServerRunner._negotiate_initialize), and its per-version sieve
writes the InitializeResult's fields in key order. graphmem's capabilities are fixed (tools and
resources with listChanged, resources with subscribe: graphmem.server.MemoryServer), and the
server's identity is its name, title, version and the instructions of its tool profile.

A request is answered here only when it is plainly well formed (`plain_initialize`): the keys
and types every client sends, none the SDK might refuse or read differently. Anything else (a
missing clientInfo, a capability of the wrong type, `_meta`) goes to the SDK, which answers it
with its own error or result. tests/e2e/test_lazy_sdk.py holds the bytes to the SDK's, over a
real server, for every handshake-era version, an unsupported one and every tool profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from graphmem.protocol import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

__all__ = ["ServerIdentity", "initialize_line", "plain_initialize"]

_encode_json = msgspec.json.Encoder().encode

_PARAM_KEYS = frozenset({"protocolVersion", "capabilities", "clientInfo"})
_CLIENT_INFO_KEYS = frozenset({"name", "title", "version"})
# The client capabilities read here, each with the shape it is taken in; any other (tasks,
# extensions, a sub-capability of sampling or elicitation) is the SDK's to read.
_CAPABILITY_KEYS = frozenset({"roots", "sampling", "elicitation", "experimental"})


@dataclass(frozen=True)
class ServerIdentity:
    """What the initialize answer says of the server (MemoryServer's options)."""

    name: str
    title: str
    version: str
    instructions: str


def plain_initialize(params: object) -> str | None:
    """The protocol version the SDK would agree for these `initialize` params, when they are
    plainly well formed; None leaves the request to the SDK."""
    if not isinstance(params, Mapping) or params.keys() - _PARAM_KEYS:
        return None
    requested = params.get("protocolVersion")
    info = params.get("clientInfo")
    if not isinstance(requested, str) or not _client_info(info):
        return None
    if not _capabilities(params.get("capabilities")):
        return None
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


def _client_info(info: object) -> bool:
    if not isinstance(info, Mapping) or info.keys() - _CLIENT_INFO_KEYS:
        return False
    if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
        return False
    return "title" not in info or isinstance(info["title"], str)


def _capabilities(capabilities: object) -> bool:
    if not isinstance(capabilities, Mapping) or capabilities.keys() - _CAPABILITY_KEYS:
        return False
    roots = capabilities.get("roots", {})
    if not isinstance(roots, Mapping) or roots.keys() - {"listChanged"}:
        return False
    if not isinstance(roots.get("listChanged", False), bool):
        return False
    if capabilities.get("sampling", {}) != {} or capabilities.get("elicitation", {}) != {}:
        return False
    experimental = capabilities.get("experimental", {})
    return isinstance(experimental, Mapping) and all(
        isinstance(key, str) and isinstance(value, Mapping) for key, value in experimental.items()
    )


def initialize_result(identity: ServerIdentity, version: str) -> dict[str, Any]:
    """The InitializeResult the SDK writes at `version`, keys in its order."""
    server_info = {"name": identity.name, "title": identity.title, "version": identity.version}
    result: dict[str, Any] = {
        "capabilities": {
            "resources": {"listChanged": True, "subscribe": True},
            "tools": {"listChanged": True},
        },
    }
    if identity.instructions:
        result["instructions"] = identity.instructions
    result["protocolVersion"] = version
    result["serverInfo"] = server_info
    return result


def initialize_line(request_id: int | str, identity: ServerIdentity, version: str) -> bytes:
    """The SDK's response line to an `initialize` agreed at `version`."""
    result = initialize_result(identity, version)
    return _encode_json({"jsonrpc": "2.0", "id": request_id, "result": result})
