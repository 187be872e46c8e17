"""Who may call the server, and how slowly: Host names, browser origins, the body read deadline.

    Host: localhost:8081           served (and 127.0.0.1, [::1], any port; --allow-host adds names)
    Host: evil.example:8081        400 Invalid host header   (DNS rebinding: a page re-pointing
                                                               its own name at 127.0.0.1)
    Origin: absent                 served (LTeX, language_tool_python, curl: no browser)
    Origin: http://localhost:8081  served when it is the server's own (the bundled page)
    Origin: https://any.site       403, before anything runs (a page's form or text/plain POST
                                   is "simple": browsers send it without asking first)

The Host check is Starlette's ``TrustedHostMiddleware`` and the answers to allowed cross-origin
pages are its ``CORSMiddleware``. Two small pieces are hand-written because neither library has
them: ``OriginGuard`` (CORSMiddleware only adds headers; it still runs a cross-origin simple
request) and ``BodyDeadline`` (uvicorn has no timeout on a request body that trickles in).
``CollapseSlashes`` serves ``//v2/check`` as ``/v2/check``: ltex-ls-plus appends "/v2/check" to
the server URI its users set, which LTeX's documentation gives with a trailing slash.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]")


class BodyTooSlow(Exception):
    """The request body did not arrive within the deadline (answered 408)."""


async def _json_error(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class OriginGuard:
    """Refuses (403) a request whose ``Origin`` header is present and is neither the server's own
    origin (``scheme://Host``) nor one of ``allowed`` (``*``: any)."""

    def __init__(self, app: ASGIApp, allowed: Sequence[str] = ()):
        self.app = app
        self.any = "*" in allowed
        self.allowed = {o.rstrip("/").lower() for o in allowed}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.any:
            origin = _header(scope, b"origin")
            if origin is not None:
                own = f"{scope.get('scheme', 'http')}://{_header(scope, b'host') or ''}".lower()
                if origin.lower() not in (own, *self.allowed):
                    await _json_error(send, 403, f"cross-origin request from {origin} refused; "
                                                 f"start the server with --allow-origin {origin} to allow it")
                    return
        await self.app(scope, receive, send)


class BodyDeadline:
    """Gives a request ``seconds`` from its first body read to receive the whole body; later,
    the read raises ``BodyTooSlow`` (the app answers 408 and the connection closes)."""

    def __init__(self, app: ASGIApp, seconds: float):
        self.app, self.seconds = app, seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.seconds <= 0:
            await self.app(scope, receive, send)
            return
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        complete = False

        async def timed_receive() -> Message:
            nonlocal deadline, complete
            if complete:  # after the body: a disconnect, whenever it comes
                return await receive()
            if deadline is None:
                deadline = loop.time() + self.seconds
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
            except asyncio.TimeoutError:
                raise BodyTooSlow(f"request body not received within {self.seconds:g} s") from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        await self.app(scope, timed_receive, send)


class CollapseSlashes:
    """``//v2//check`` is routed as ``/v2/check``."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "//" in scope["path"]:
            scope = {**scope, "path": re.sub("/{2,}", "/", scope["path"])}
            scope.pop("raw_path", None)
        await self.app(scope, receive, send)
