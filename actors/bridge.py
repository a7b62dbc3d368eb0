"""Replies that cross from an actor thread back to asyncio or to a blocked thread.

pykka futures block whoever waits on them, and `await future` blocks the event loop, so an
actor is asked with a plain `tell` carrying one of these replies; the actor settles it from its
own thread. Every wait on a reply is bounded by the caller.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class Reply(Protocol[T_contra]):
    """Where an actor sends the outcome of one request."""

    def ok(self, value: T_contra) -> None: ...

    def fail(self, error: BaseException) -> None: ...


def _settle(future: asyncio.Future[Any], error: BaseException | None, value: Any) -> None:
    if future.done():  # the caller gave up (timeout or cancellation)
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


class AsyncReply(Generic[T]):
    """Settles an asyncio future on its own loop, from any thread."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.future: asyncio.Future[T] = self._loop.create_future()

    def ok(self, value: T) -> None:
        self._call(None, value)

    def fail(self, error: BaseException) -> None:
        self._call(error, None)

    def _call(self, error: BaseException | None, value: Any) -> None:
        # RuntimeError: the loop closed at shutdown; nobody is waiting any more.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(_settle, self.future, error, value)

    async def wait(self, timeout: float) -> T:
        return await asyncio.wait_for(self.future, timeout)


class BlockingReply(Generic[T]):
    """A reply a plain thread (CLI, tests, benchmarks) waits on."""

    def __init__(self) -> None:
        self.future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def ok(self, value: T) -> None:
        if not self.future.done():
            self.future.set_result(value)

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)

    def wait(self, timeout: float) -> T:
        return self.future.result(timeout)
