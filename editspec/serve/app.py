"""The Starlette app of ``editspec serve``: native JSON API, LanguageTool's ``/v2``, a web page.

    POST /v1/correct  {"texts": ["She go home."]}
        -> {"corrections": [{"input": "She go home.", "output": "She goes home.", "edits": [
               {"start": 4, "end": 6, "original": "go", "correction": "goes", "type": "R:VERB:SVA",
                "rule": "EDITSPEC_R_VERB_SVA", "message": "Possible subject–verb agreement error"}]}]}
    POST /v2/check    language=en-US&text=She go home.   (LanguageTool's form; see languagetool.py)
    level             "default" or "picky" (/v1: a field; /v2: LanguageTool's parameter): picky where
                      the models have its settings (``editspec serve`` offers every level they can run)
    GET  /v2/languages, GET /health, GET / (the page)

Every text goes through one ``Batcher`` around one ``Corrector``: ``correct_detailed`` on the
batch, then ERRANT types for the edits, on the worker thread (never on the event loop, so that
``/health`` and other requests are answered while the model works). What one text may cost is
bounded (``bounds.py``: over-long sentences and runs are left as written). Offsets in ``/v1``
are Python string indices (code points); ``/v2`` counts UTF-16 units as LanguageTool does.

Bad input is one JSON error ``{"error": "..."}`` and never fails another request: 413 when the
texts of a request hold more than ``max_chars`` characters (or the body is larger than any such
request can be), 400 for a malformed body, a missing field, JSON nested too deep, bytes that are
not UTF-8, a lone surrogate, or an unknown language; 408 for a body that trickles in slower than
``body_timeout``; 403/400 for a foreign browser origin or Host name (``guard.py``); 503 for a
request that cannot finish before a shutdown's grace period ends. A client that leaves before
its answer costs one log line, and its texts are dropped if their batch has not started. The app
never opens a file a request names: the model and page are fixed when it starts.

The endpoints are module-level handlers in one table (``ROUTES``); what they share (the batcher,
the shutdown, the limits, the page) is the app's ``app.state``, set by ``create_app``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import AsyncIterator, Callable, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from editspec.config import LEVELS
from editspec.errors import EditspecError
from editspec.serve import bounds, languagetool
from editspec.serve.batching import Batcher
from editspec.serve.guard import LOCAL_HOSTS, BodyDeadline, BodyTooSlow, CollapseSlashes, OriginGuard
from editspec.post import error_types
from editspec.post.diff import Correction

DEFAULT_MAX_CHARS = 20_000  # LanguageTool's own limit for a free check
DEFAULT_MAX_SENTENCE_CHARS = 1_000  # longer: left as written (bounds.py)
log = logging.getLogger("uvicorn.error").getChild("editspec")  # printed with uvicorn's own lines


class HTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ClientLeft(Exception):
    """The client disconnected before its answer was ready."""


class Shutdown:
    """A shutdown in progress: requests not answered by ``deadline`` get 503 instead of waiting
    for uvicorn to cancel them (which would answer 500) at the end of the grace period."""

    def __init__(self) -> None:
        self.started = False
        self.expired = asyncio.Event()

    def begin(self, grace: float) -> None:
        """Called on the event loop when SIGTERM arrives (cli/serve.py); idempotent."""
        if not self.started:
            self.started = True
            # answer 503 with time to spare before uvicorn cancels what is left at ``grace``
            asyncio.get_running_loop().call_later(max(0.0, min(grace * 0.8, grace - 1.0)), self.expired.set)


def edit_dict(edit, error_type: str) -> dict:
    return {"start": edit.start, "end": edit.end, "original": edit.original, "correction": edit.correction,
            "type": error_type, "rule": error_types.rule_id(error_type),
            "message": edit.message or error_types.message(error_type), "shortMessage": error_types.short_message(error_type),
            "confidence": edit.confidence, **({"alternatives": list(edit.alternatives)} if edit.alternatives is not None else {})}


def level_of(request: Request, value, strict: bool = True) -> str:
    """The level a request asks for (None or "": the server's default); 400 for an unknown one, and
    for one these models cannot run when ``strict`` (else the default: LanguageTool's clients send
    level=picky to any server, and LanguageTool answers it with what it has)."""
    levels = request.app.state.batchers
    if value is None or value == "":
        return next(iter(levels))
    if not isinstance(value, str) or value not in LEVELS:
        raise HTTPError(400, f"unknown level {value!r}: use default or picky")
    if value not in levels:
        if not strict:
            return next(iter(levels))
        raise HTTPError(400, f"level {value} is not available: this server's models have no settings for it")
    return value


def check_unicode(texts: Sequence[str]) -> None:
    """400 for a text that is not Unicode text (a lone surrogate, as JSON's "\\ud800" makes)."""
    for t in texts:
        try:
            t.encode("utf-8")
        except UnicodeEncodeError as e:
            raise HTTPError(400, f"text holds a lone surrogate (U+{ord(t[e.start]):04X} at index {e.start}): "
                                 f"not valid Unicode text")


def parse_json(raw: str, what: str):
    try:
        return json.loads(raw)
    except RecursionError:
        raise HTTPError(400, f"{what} is JSON nested too deep")


def check_size(request: Request, texts: Sequence[str]) -> None:
    max_chars = request.app.state.max_chars
    if sum(len(t) for t in texts) > max_chars:
        raise HTTPError(413, f"text too long: more than {max_chars} characters in one request")


async def body(request: Request) -> bytes:
    """The request body, refused (413) as soon as it is larger than any allowed request can be."""
    max_bytes = request.app.state.max_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise HTTPError(413, f"request body over {max_bytes} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise HTTPError(413, f"request body over {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def disconnected(request: Request) -> None:
    """Returns once the client has gone (after its body was read)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def check(request: Request, texts: list[str], level: str | None = None) -> list[bounds.Checked]:
    """The batcher's results for ``texts`` (at ``level``; None: the server's default), unless the
    client leaves or the shutdown's deadline comes first (then its texts are dropped if their batch
    has not started)."""
    batchers, shutdown = request.app.state.batchers, request.app.state.shutdown
    batcher = batchers[level] if level is not None else request.app.state.batcher
    if shutdown.started:
        raise HTTPError(503, "server is shutting down; try again shortly")
    work = asyncio.ensure_future(batcher.submit(texts))
    gone = asyncio.ensure_future(disconnected(request))
    late = asyncio.ensure_future(shutdown.expired.wait())
    try:
        await asyncio.wait({work, gone, late}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        late.cancel()
    if work.done():
        try:
            return work.result()
        except Exception as e:  # this request's texts failed the model; no other request did
            log.error("correction failed for one request (%d texts): %s: %s", len(texts), type(e).__name__, e)
            raise HTTPError(500, f"correction failed: {type(e).__name__}")
    work.cancel()
    if late.done() and not gone.done():
        raise HTTPError(503, "server is shutting down; the request could not finish in time")
    raise ClientLeft()


# -- the endpoints --

async def index(request: Request) -> Response:
    return HTMLResponse(request.app.state.page)


async def health(request: Request) -> Response:
    state = request.app.state
    return JSONResponse({"status": "shutting down" if state.shutdown.started else "ready", **state.info,
                         "batches": state.batcher.batches, "texts": state.batcher.texts})


async def correct_v1(request: Request) -> Response:
    raw = await body(request)
    try:
        payload = parse_json(raw.decode("utf-8"), "request body")
    except UnicodeDecodeError:
        raise HTTPError(400, "request body is not UTF-8")
    except ValueError:
        raise HTTPError(400, 'request body is not JSON; send {"texts": ["..."]}')
    if not isinstance(payload, dict) or "texts" not in payload:
        raise HTTPError(400, 'missing field: send {"texts": ["..."]}, a list of strings')
    texts = payload["texts"]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise HTTPError(400, "'texts' must be a list of strings")
    level = level_of(request, payload.get("level"))
    check_size(request, texts)
    check_unicode(texts)
    results = await check(request, texts, level)
    return JSONResponse({"corrections": [
        {"input": r.correction.input, "output": r.correction.output,
         "edits": [edit_dict(e, t) for e, t in zip(r.correction.edits, r.types)]}
        for r in results]})


async def languages_v2(request: Request) -> Response:
    return JSONResponse(languagetool.languages())


async def check_v2(request: Request) -> Response:
    raw = await body(request) if request.method == "POST" else b""
    try:
        params = languagetool.parameters(request.scope.get("query_string", b""), raw)
        code, name = languagetool.language(params.get("language"))
        doc = languagetool.document(params.get("text"), params.get("data"))
        options = languagetool.Options.from_params(params)
        level = level_of(request, params.get("level"), strict=False)
    except RecursionError:
        raise HTTPError(400, "'data' is JSON nested too deep")
    except EditspecError as e:
        raise HTTPError(400, str(e))
    check_size(request, [doc.text])
    check_unicode([doc.document])  # the text and its markup: all of it is echoed back
    [result] = await check(request, [doc.text], level)
    found = languagetool.matches(doc, result.correction, result.types, result.sentences, options)
    return JSONResponse(languagetool.response(code, name, found))


ROUTES = [
    Route("/", index),
    Route("/health", health),
    Route("/v1/correct", correct_v1, methods=["POST"]),
    Route("/v2/languages", languages_v2),
    Route("/v2/check", check_v2, methods=["GET", "POST"]),
]


# -- errors as answers --

async def http_error(request: Request, exc: HTTPError) -> Response:
    return JSONResponse({"error": str(exc)}, status_code=exc.status)


async def too_slow(request: Request, exc: BodyTooSlow) -> Response:
    return JSONResponse({"error": str(exc)}, status_code=408, headers={"Connection": "close"})


async def client_left(request: Request, exc: Exception) -> Response:
    client = f"{request.client.host}:{request.client.port}" if request.client else "a client"
    log.info("%s left before its answer (%s %s); its work was dropped", client, request.method, request.url.path)
    return Response(status_code=499)  # never sent: nobody is listening


EXCEPTION_HANDLERS = {HTTPError: http_error, BodyTooSlow: too_slow, ClientLeft: client_left,
                      ClientDisconnect: client_left}


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    for batcher in app.state.batchers.values():
        await batcher.start()
    try:
        yield
    finally:
        # after uvicorn has let the requests in flight finish; after a SIGTERM every request
        # has had its answer (200 or 503), so a batch still running is left to exit with us
        for batcher in app.state.batchers.values():
            await batcher.stop(abandon=app.state.shutdown.started)


@dataclass(frozen=True)
class Limits:
    """What the server takes: ``max_chars`` a request, ``max_sentence_chars`` a sentence, a body
    sent within ``body_timeout`` seconds; up to ``max_batch`` texts a batch, waiting ``max_wait``
    seconds for more; ``allow_hosts`` the Host names served (None: localhost's; ``*``: any),
    ``allow_origins`` the browser origins besides the server's own (``*``: any)."""

    max_chars: int = DEFAULT_MAX_CHARS
    max_sentence_chars: int = DEFAULT_MAX_SENTENCE_CHARS
    body_timeout: float = 10.0
    max_batch: int = 32
    max_wait: float = 0.002
    allow_hosts: Sequence[str] | None = None
    allow_origins: Sequence[str] = ()


def create_app(correct_detailed: Callable[[list[str]], list[Correction]], limits: Limits = Limits(), *,
               info: dict | None = None, levels: Sequence[str] = ("default",)) -> Starlette:
    """The app around ``correct_detailed`` (``Corrector.correct_detailed``), loaded beforehand,
    within ``limits``: ``ROUTES`` with the app's state (batcher, shutdown, limits, page) in
    ``app.state``. ``levels``: those a request may ask for (``level``), the first the default
    (``correct_detailed`` called without a level), each other ``correct_detailed(texts,
    level=name)`` in a batcher of its own."""
    hosts = list(limits.allow_hosts) if limits.allow_hosts is not None else list(LOCAL_HOSTS)
    origins = list(limits.allow_origins)
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=hosts), Middleware(OriginGuard, allowed=origins)]
    if origins:
        middleware.append(Middleware(CORSMiddleware, allow_origins=origins,
                                     allow_methods=["GET", "POST"], allow_headers=["Content-Type"]))
    middleware += [Middleware(BodyDeadline, seconds=limits.body_timeout), Middleware(CollapseSlashes)]
    app = Starlette(routes=ROUTES, middleware=middleware, lifespan=lifespan, exception_handlers=EXCEPTION_HANDLERS)
    app.state.batchers = {}
    for k, name in enumerate(levels):
        run = correct_detailed if k == 0 else functools.partial(correct_detailed, level=name)
        app.state.batchers[name] = Batcher(bounds.checker(run, limits.max_sentence_chars),
                                           max_texts=limits.max_batch, max_wait=limits.max_wait)
    app.state.batcher = app.state.batchers[levels[0]]
    app.state.info = {**(info or {}), "levels": list(levels)}
    app.state.shutdown = Shutdown()
    app.state.max_chars = limits.max_chars
    app.state.max_bytes = 12 * limits.max_chars + 65_536  # a 4-byte character percent-encoded is 12 bytes
    app.state.page = resources.files("editspec.serve").joinpath("page/index.html").read_text(encoding="utf-8")
    return app
