"""The uvicorn pieces of ``editspec serve``: a header deadline, and a server that says when a
shutdown begins.

Header deadline: uvicorn's h11 protocol with a deadline on request headers (slow headers, idle
connections).
uvicorn closes a keep-alive connection idle after a response (``timeout_keep_alive``), but a
connection that never completes its first request's headers, or trickles them a byte at a
time, is held forever, and with ``limit_concurrency`` a few hundred of them would shut every
client out. Hand-written because uvicorn has no such option: a timer armed when the connection
opens and after each response closes the connection if no new request's headers have arrived
by then. (uvicorn's ``--http h11`` class is a documented setting: ``Config(http=<class>)``.)

Shutdown: ``uvicorn.Server`` whose signal handler also tells the app (on the event loop) that a
shutdown began, so that the app can answer 503 to what cannot finish in the grace period instead
of uvicorn cancelling it (a 500) when the period ends.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol


class HeaderDeadlineH11Protocol(H11Protocol):
    header_timeout: float = 10.0  # set on a subclass by ``with_header_timeout``

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def _arm(self) -> None:
        if self.header_timeout > 0:
            self.loop.call_later(self.header_timeout, self._headers_due, self.cycle)

    def _headers_due(self, cycle_when_armed) -> None:
        # a new request (complete headers) makes a new cycle: unchanged means none came
        if self.cycle is cycle_when_armed and not self.transport.is_closing():
            if self.cycle is None or self.cycle.response_complete:
                try:
                    self.conn.send(h11.ConnectionClosed())
                except h11.LocalProtocolError:
                    pass
                self.transport.close()


def with_header_timeout(seconds: float) -> type[HeaderDeadlineH11Protocol]:
    """The protocol class to give uvicorn (``Config(http=...)``) for a header deadline of ``seconds``."""
    return type("HeaderDeadlineH11Protocol", (HeaderDeadlineH11Protocol,), {"header_timeout": seconds})


class Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None]):
        super().__init__(config)
        self.on_exit = on_exit
        self.loop: asyncio.AbstractEventLoop | None = None

    async def serve(self, sockets=None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig, frame) -> None:
        super().handle_exit(sig, frame)
        if self.loop is not None:  # a signal handler: hand the call to the loop
            self.loop.call_soon_threadsafe(self.on_exit)
