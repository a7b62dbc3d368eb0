"""uvicorn's h11 protocol with a header-read timeout: a connection that dribbles is closed.

uvicorn times out a connection idle between requests (keep-alive) but not one that has sent
part of a request's header: a client sending a byte now and then, or nothing after
connecting, holds its connection forever. This counts from the first byte of each request
(or from the connection) and closes the connection unless the whole header is in by then.
"""

from __future__ import annotations

import asyncio

import structlog
from uvicorn.protocols.http.h11_impl import H11Protocol

log = structlog.get_logger(__name__)


def header_timeout_protocol(seconds: float) -> type[asyncio.Protocol]:
    """An H11Protocol class (uvicorn's `http` setting) closing slow headers after `seconds`."""

    class HeaderTimeoutProtocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self._awaiting_header() and self._header_timer is None:
                self._arm()
            super().data_received(data)
            if not self._awaiting_header():
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _awaiting_header(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(seconds, self._header_timed_out)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timed_out(self) -> None:
            self._header_timer = None
            if self._awaiting_header() and not self.transport.is_closing():
                client = self.client[0] if self.client else None
                log.info("http_header_timeout", client=client, seconds=seconds)
                self.transport.close()

    return HeaderTimeoutProtocol
