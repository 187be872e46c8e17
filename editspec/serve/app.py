"""The Starlette app of ``editspec serve``: native JSON API, LanguageTool's ``/v2``, a web page.

    POST /v1/correct  {"texts": ["She go home."]}
        -> {"corrections": [{"input": "She go home.", "output": "She goes home.", "edits": [
               {"start": 4, "end": 6, "original": "go", "correction": "goes", "type": "R:VERB:SVA",
                "rule": "EDITSPEC_R_VERB_SVA", "message": "Possible subject–verb agreement error"}]}]}
    POST /v2/check    language=en-US&text=She go home.   (LanguageTool's form; see languagetool.py)
    GET  /v2/languages, GET /health, GET / (the page)

Every text goes through one ``Batcher`` around one ``Corrector``: ``correct_detailed`` on the
batch, then ERRANT types for the edits, on the worker thread. Offsets in ``/v1`` are Python
string indices (code points); ``/v2`` counts UTF-16 units as LanguageTool does.

Bad input is one JSON error ``{"error": "..."}``: 413 when the texts of a request hold more than
``max_chars`` characters (or the body is larger than any such request can be), 400 for a
malformed body, a missing field, bytes that are not UTF-8, or an unknown language. The app never
opens a file a request names: the model and page are fixed when it starts.
"""

from __future__ import annotations

import json
import urllib.parse
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any, Callable, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from editspec.errors import EditspecError
from editspec.serve import languagetool
from editspec.serve.batching import Batcher
from editspec.text import error_types
from editspec.text.diff import Correction

DEFAULT_MAX_CHARS = 20_000  # LanguageTool's own limit for a free check


class HTTPError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def classified(correct_detailed: Callable[[list[str]], list[Correction]]) -> Callable:
    """``texts -> [(Correction, [type of each edit])]``: what the batcher runs."""
    def run(texts: list[str]) -> list[tuple[Correction, list[str]]]:
        corrections = correct_detailed(texts)
        return list(zip(corrections, error_types.classify(corrections)))
    return run


def edit_dict(edit, error_type: str) -> dict:
    return {"start": edit.start, "end": edit.end, "original": edit.original, "correction": edit.correction,
            "type": error_type, "rule": error_types.rule_id(error_type),
            "message": error_types.message(error_type), "shortMessage": error_types.short_message(error_type)}


def create_app(correct_detailed: Callable[[list[str]], list[Correction]], *, info: dict | None = None,
               max_chars: int = DEFAULT_MAX_CHARS, max_batch: int = 32, max_wait: float = 0.002,
               cors_origins: Sequence[str] = ()) -> Starlette:
    """The app around ``correct_detailed`` (``Corrector.correct_detailed``), loaded beforehand."""
    batcher = Batcher(classified(correct_detailed), max_texts=max_batch, max_wait=max_wait)
    max_bytes = 12 * max_chars + 65_536  # a 4-byte character percent-encoded is 12 bytes
    page = resources.files("editspec.serve").joinpath("page/index.html").read_text(encoding="utf-8")

    @asynccontextmanager
    async def lifespan(app):
        await batcher.start()
        try:
            yield
        finally:
            await batcher.stop()  # after uvicorn has let the requests in flight finish

    def check_size(texts: Sequence[str]) -> None:
        if sum(len(t) for t in texts) > max_chars:
            raise HTTPError(413, f"text too long: more than {max_chars} characters in one request")

    async def body(request: Request) -> bytes:
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

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ready", **(info or {}), "batches": batcher.batches,
                             "texts": batcher.texts})

    async def correct_v1(request: Request) -> Response:
        raw = await body(request)
        try:
            payload = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise HTTPError(400, "request body is not UTF-8")
        except ValueError:
            raise HTTPError(400, 'request body is not JSON; send {"texts": ["..."]}')
        texts = payload.get("texts") if isinstance(payload, dict) else None
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise HTTPError(400, 'missing field: send {"texts": ["..."]}, a list of strings')
        check_size(texts)
        results = await batcher.submit(texts)
        return JSONResponse({"corrections": [
            {"input": c.input, "output": c.output, "edits": [edit_dict(e, t) for e, t in zip(c.edits, types)]}
            for c, types in results]})

    async def languages_v2(request: Request) -> Response:
        return JSONResponse(languagetool.languages())

    async def check_v2(request: Request) -> Response:
        params = form(request.scope.get("query_string", b""), "")
        if request.method == "POST":
            params.update(form(await body(request), request.headers.get("content-type", "")))
        try:
            code, name = languagetool.language(params.get("language"))
            doc = languagetool.document(params.get("text"), params.get("data"))
        except EditspecError as e:
            raise HTTPError(400, str(e))
        check_size([doc.text])
        [(correction, types)] = await batcher.submit([doc.text])
        found = languagetool.matches(
            doc, correction, types,
            enabled=languagetool.rule_set(params.get("enabledRules")),
            disabled=languagetool.rule_set(params.get("disabledRules")),
            enabled_only=params.get("enabledOnly", "").lower() == "true",
            enabled_categories=languagetool.rule_set(params.get("enabledCategories")),
            disabled_categories=languagetool.rule_set(params.get("disabledCategories")))
        return JSONResponse(languagetool.response(code, name, found))

    async def http_error(request: Request, exc: HTTPError) -> Response:
        return JSONResponse({"error": str(exc)}, status_code=exc.status)

    middleware = []
    if cors_origins:
        middleware.append(Middleware(CORSMiddleware, allow_origins=list(cors_origins),
                                     allow_methods=["GET", "POST"], allow_headers=["Content-Type"]))
    routes = [Route("/", index), Route("/health", health), Route("/v1/correct", correct_v1, methods=["POST"]),
              Route("/v2/languages", languages_v2), Route("/v2/check", check_v2, methods=["GET", "POST"])]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan,
                    exception_handlers={HTTPError: http_error})
    app.state.batcher = batcher
    return app


def form(raw: bytes, content_type: str) -> dict[str, Any]:
    """The fields of an ``application/x-www-form-urlencoded`` body, decoded strictly as UTF-8."""
    kind = content_type.split(";")[0].strip().lower()
    if kind not in ("", "application/x-www-form-urlencoded"):
        raise HTTPError(400, "send the form as application/x-www-form-urlencoded")
    try:
        return dict(urllib.parse.parse_qsl(raw.decode("utf-8"), keep_blank_values=True,
                                           encoding="utf-8", errors="strict"))
    except UnicodeDecodeError:
        raise HTTPError(400, "request body is not UTF-8")
    except ValueError as e:
        raise HTTPError(400, f"malformed form body: {e}")
