"""graphmem's own stdio wire, fenced off from the rest of the edge.

What lives here and why: the SDK's stdio transport costs a dozen thread hand-offs per call and
answers some faults with silence, so graphmem reads and writes the protocol pipes itself
(`stdio_transport`, `stdio_wire`), checks every line before any parser sees it (`wire_lines`,
`wire_guard`, with the nesting scan of `projections.json_depth` that the file readers share)
and answers the plain `tools/call` that dominates real traffic off the SDK's per-call pipeline
(`fast_calls`), byte for byte as the SDK would. Before the SDK is loaded at all, `front`
answers the rest of a handshake-era session's plain traffic (`initialize` through
`initialize_answer`, `ping`, `tools/list`...) and says when the SDK must be loaded; these
modules import nothing of the SDK (`graphmem.protocol` holds the few facts copied from it), and what
needs it (`sdk_reading`, `sdk_calls`) is imported once it is.

That last promise leans on SDK internals. When the `mcp` pin in pyproject.toml moves, re-check:

- the modules imported here from `mcp.shared` (`inbound.classify_inbound_request`,
  `jsonrpc_dispatcher.handler_exception_to_error_data`, `message.SessionMessage`) and from
  `mcp_types` (`methods.validate_client_request`) still exist with the same meaning, and the
  facts `graphmem.protocol` copies (versions, meta keys, request-id rules, the error line) and the
  initialize negotiation `initialize_answer` copies still hold (tests/graphmem/test_wire_front.py);
- how the SDK serialises a `CallToolResult` in each era (key order, `resultType`, `_meta`
  serverInfo stamp), which `FastCalls.encode` reproduces;
- which requests the SDK runs inline (`initialize`) or concurrently, which the ordering gate
  in `stdio_wire` assumes;
- `Server.run`'s signature and the `read_stream` it expects (`WireReadStream`).

The suite holds the wire to the SDK: `tests/e2e/test_fast_path.py` (fast path on and off,
byte-identical), `tests/e2e/test_lazy_sdk.py` (the SDK loaded lazily and at start,
byte-identical), `tests/e2e/test_golden_transcript.py`, `tests/e2e/test_wire_faults.py`,
`tests/e2e/test_wire_fuzz.py` and `tests/graphmem/test_fast_calls.py`. Run them first after a
bump; `GRAPHMEM_FAST_CALLS=0` sends every call through the SDK if the fast path must be
switched off while a difference is investigated.
"""
