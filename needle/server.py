"""Needle over HTTP: hayhooks serves the endpoint wrappers in `server/pipelines/`, plus MCP routes and token auth.

Every endpoint (HTTP route, MCP tool, chat completion) calls the one `Needle` facade of this process through
the functions below, which add what a network caller needs and a shell does not: argument types and limits,
containment of file reads, byte caps, and errors mapped to status codes with messages a person can act on.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, Field

from needle.app import Needle, docid
from needle.collections import Collection, CollectionError
from needle.settings import PROJECT_ROOT

if TYPE_CHECKING:
    from fastapi import FastAPI

logger = logging.getLogger(__name__)

SERVER_PIPELINES_DIR = PROJECT_ROOT / "server" / "pipelines"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1416
TOKEN_ENV = "NEEDLE_API_TOKEN"
GENERATOR_URL_ENV = "NEEDLE_GENERATOR_URL"
GENERATOR_MODEL_ENV = "NEEDLE_GENERATOR_MODEL"
GENERATOR_KEY_ENV = "NEEDLE_GENERATOR_API_KEY"
MAX_QUERY_CHARS = 2000
MAX_LIMIT = 1000
MAX_REF_CHARS = 1024
MULTI_GET_MAX_FILES = 100
MULTI_GET_MAX_TOTAL_BYTES = 2_000_000
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")

# The request types every endpoint shares; hayhooks turns them into the request model and OpenAPI schema.
Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, strict=True)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, strict=True)]
MinScore = Annotated[float, Field(ge=0.0, strict=True)]
CollectionNames = list[Annotated[str, Field(min_length=1, max_length=64, strict=True)]] | None
Ref = Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS, strict=True)]
LineNumber = Annotated[int, Field(ge=1, strict=True)]
LineCount = Annotated[int, Field(ge=1, le=100_000, strict=True)]
ByteCap = Annotated[int, Field(ge=1, le=1_000_000, strict=True)]


class Hit(BaseModel):
    """One search result: the file, the lines of the matching chunk and its text."""

    docid: str = Field(description="Short id of the file, accepted by `get` as `#abc123`")
    collection: str
    path: str = Field(description="Path of the file inside its collection")
    title: str
    heading_path: list[str] = Field(description="Headings above the chunk, outermost first")
    start_line: int = Field(description="First line of the chunk in the file (1-based)")
    end_line: int = Field(description="Last line of the chunk in the file (inclusive)")
    score: float = Field(description="Final score (0..1 for search and vsearch; fused rank score for query)")
    snippet: str = Field(description="Lines around the best match, headed `@@ -start,count +start,count @@ path`")
    text: str = Field(description="The whole matching chunk")
    explain: dict[str, Any] | None = Field(None, description="Rank and score at every stage, when asked for")


class SearchAnswer(BaseModel):
    """Results and how far they can be trusted."""

    label: str = Field(
        description="PASS, NO_RESULTS (nothing relevant enough), IRRELEVANT (no result judged relevant) "
        "or HALLUCINATION_RISK (similar-looking results judged irrelevant: do not answer from them)"
    )
    results: list[Hit]


class FileText(BaseModel):
    """A file, or a range of its lines."""

    docid: str
    collection: str
    path: str
    from_line: int
    to_line: int
    total_lines: int
    bytes: int = Field(description="Size of the whole file in bytes")
    text: str


class SkippedFile(BaseModel):
    """A file `multi_get` matched but did not return, and why."""

    path: str
    reason: str


class FileBatch(BaseModel):
    """What `multi_get` read, and what it skipped."""

    files: list[FileText]
    skipped: list[SkippedFile]


class NeedleHTTPError(Exception):
    """A failure with the status code and message a caller gets (turned into an `HTTPException`)."""

    def __init__(self, status_code: int, message: str) -> None:
        """
        :param status_code: The HTTP status.
        :param message: One line a person can act on; never a stack trace.
        """
        super().__init__(message)
        self.status_code = status_code
        self.message = message


_needle: Needle | None = None
_needle_lock = threading.Lock()
_run_locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)


def get_needle() -> Needle:
    """The one `Needle` of this process: one store, each graph loaded and warmed once."""
    global _needle
    with _needle_lock:
        if _needle is None:
            _needle = Needle()
        return _needle


def warm(name: str) -> Any:
    """Load and warm a graph at start-up (wrapper `setup()`); returns the pipeline."""
    with errors():
        return get_needle().pipeline(name)


@contextmanager
def _serialised(name: str) -> Iterator[None]:
    # Haystack does not promise that one Pipeline object runs safely on several threads at once (components
    # keep state between runs), so runs of one graph take turns; different graphs run side by side.
    with _run_locks[name]:
        yield


def _http_error(error: BaseException) -> NeedleHTTPError:
    from haystack.core.errors import PipelineRuntimeError

    from needle.index_info import IndexMismatchError
    from needle.loader import PipelineError
    from needle.models import MissingModelError
    from needle.settings import ConfigError

    if isinstance(error, NeedleHTTPError):
        return error
    if isinstance(error, PipelineRuntimeError):
        cause = error.__cause__
        if isinstance(cause, (ValueError, TypeError)) and not isinstance(cause, (PipelineError, ConfigError)):
            return NeedleHTTPError(400, str(cause))
        if cause is None:
            return NeedleHTTPError(500, "the search graph failed; see the server log")
        return _http_error(cause)
    if isinstance(error, CollectionError):
        missing = str(error).startswith(("no file", "no indexed file", "no collection named"))
        return NeedleHTTPError(404 if missing else 400, str(error))
    if isinstance(error, (PipelineError, ConfigError)):
        return NeedleHTTPError(500, f"server misconfigured: {error}")
    if isinstance(error, (ValueError, TypeError)):
        return NeedleHTTPError(400, str(error))
    if isinstance(error, IndexMismatchError):
        return NeedleHTTPError(409, str(error))
    if isinstance(error, MissingModelError):
        return NeedleHTTPError(503, str(error))
    if isinstance(error, RuntimeError) and "already open" in str(error):
        return NeedleHTTPError(503, str(error))
    return NeedleHTTPError(500, "internal error; see the server log")


@contextmanager
def errors() -> Iterator[None]:
    """
    Turn Needle's exceptions into `HTTPException`s: user mistakes 4xx, server trouble 5xx, no stack traces.

    :raises HTTPException: For any exception raised inside the block.
    """
    from fastapi import HTTPException

    try:
        yield
    except HTTPException:
        raise
    except Exception as error:
        mapped = _http_error(error)
        if mapped.status_code >= 500:
            logger.error("Request failed: %s", error, exc_info=error)
        raise HTTPException(status_code=mapped.status_code, detail=mapped.message) from None


def search(
    mode: str,
    query: str,
    collections: list[str] | None,
    limit: int,
    min_score: float,
    explain: bool = False,
    **switches: bool | None,
) -> SearchAnswer:
    """
    Run one of the query graphs (`search`, `vsearch`, `query`).

    :param switches: `expand`, `rerank`, `chunks` for the graphs that take them.
    :returns: The label and the hits, best first.
    :raises HTTPException: 400 on a bad query or unknown collection, 409 on an index built with other settings.
    """
    with errors(), _serialised(mode):
        needle = get_needle()
        answer = needle.ask(
            query, mode=mode, top_k=limit, collections=collections or None, min_score=min_score, **switches
        )
    return SearchAnswer(
        label=answer["label"],
        results=[
            Hit(
                docid=f"#{r.docid}", collection=r.collection, path=r.path, title=r.title, heading_path=r.heading_path,
                start_line=r.start_line, end_line=r.end_line, score=r.score, snippet=r.snippet or r.text, text=r.text,
                explain=r.explain() if explain else None,
            )
            for r in answer["results"]
        ],
    )


def check_ref(ref: str) -> str:
    """
    Refuse file references that could only be meant to leave a collection, before any lookup.

    :raises NeedleHTTPError: 400 on NUL or control characters, percent-escapes, absolute paths and `..`.
    """
    if any(ord(c) < 32 for c in ref):
        raise NeedleHTTPError(400, "a file reference must not contain NUL or control characters")
    if _PERCENT_ESCAPE.search(ref):
        raise NeedleHTTPError(400, f"{ref!r} is URL-encoded; give the plain path, e.g. notes/howto/file.md")
    if ref.startswith(("/", "\\", "~")):
        raise NeedleHTTPError(400, f"{ref!r} is absolute; give a path inside a collection, e.g. notes/howto/file.md")
    if ".." in re.split(r"[/\\:]", ref):
        raise NeedleHTTPError(400, f"{ref!r} contains '..'; paths must stay inside a collection")
    return ref


def _file_text(collection: Collection, path: Path, from_line: int = 1, max_lines: int | None = None) -> FileText:
    rel = path.relative_to(Path(collection.root).resolve()).as_posix()
    raw = path.read_bytes()
    lines = raw.decode("utf-8", errors="replace").splitlines()
    if lines and from_line > len(lines):
        shown = f"{collection.name}/{rel}"
        raise NeedleHTTPError(400, f"{shown} has {len(lines)} lines; from_line {from_line} is past the end")
    end = len(lines) if max_lines is None else min(len(lines), from_line + max_lines - 1)
    return FileText(
        docid=f"#{docid(f'{collection.name}:{rel}')}", collection=collection.name, path=rel, from_line=from_line,
        to_line=end, total_lines=len(lines), bytes=len(raw), text="\n".join(lines[from_line - 1 : end]),
    )


def get_file(ref: str, from_line: int = 1, max_lines: int | None = None) -> FileText:
    """
    Read a file of a collection, or some of its lines.

    :param ref: `collection/path`, `collection:path`, a path inside some collection, or `#docid`.
    :returns: The text and where it is.
    :raises HTTPException: 400 for references that leave a collection, 404 for files that do not exist.
    """
    with errors():
        collection, path = get_needle().resolve(check_ref(ref))
        return _file_text(collection, path, from_line, max_lines)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _walk(collection: Collection) -> Iterator[tuple[str, Path]]:
    root = Path(collection.root)
    pruned = {e.strip("/") for e in collection.exclude}
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in pruned)
        for name in sorted(files):
            path = Path(folder) / name
            yield path.relative_to(root).as_posix(), path


def _match(pattern: str) -> list[tuple[Collection, str, Path]]:
    check_ref(pattern)
    collections = get_needle().collections.load()
    name, sep, rest = pattern.partition("/")
    selected = [collections[name]] if sep and name in collections else list(collections.values())
    glob = rest if sep and name in collections else pattern
    regex = _glob_regex(glob)
    return [(c, rel, p) for c in selected for rel, p in _walk(c) if regex.match(rel)]


def multi_get(pattern: str | None, refs: list[str] | None, max_bytes: int) -> FileBatch:
    """
    Read several files: those a glob matches, or a list of references; files over `max_bytes` are skipped.

    :returns: The files read and the files skipped, each with a reason.
    :raises HTTPException: 400 when both or neither of `pattern` and `refs` are given or a reference leaves
        its collection, 404 when a reference names no file.
    """
    if (pattern is None) == (refs is None):
        message = "give either 'pattern' (a glob such as notes/howto/*.md) or 'refs', not both"
        raise _as_http(NeedleHTTPError(400, message))
    with errors():
        if pattern is not None:
            found = _match(pattern)
        else:
            found = []
            for ref in refs or []:
                collection, path = get_needle().resolve(check_ref(ref))
                found.append((collection, path.relative_to(Path(collection.root).resolve()).as_posix(), path))
        files: list[FileText] = []
        skipped: list[SkippedFile] = []
        total = 0
        for collection, rel, path in found:
            shown = f"{collection.name}/{rel}"
            root = Path(collection.root).resolve()
            real = path.resolve()
            if root not in real.parents:
                skipped.append(SkippedFile(path=shown, reason="a link that leads outside the collection"))
                continue
            if len(files) >= MULTI_GET_MAX_FILES:
                reason = f"more than {MULTI_GET_MAX_FILES} files matched; narrow the pattern"
                skipped.append(SkippedFile(path=shown, reason=reason))
                continue
            size = real.stat().st_size
            if size > max_bytes:
                reason = f"{size} bytes is over max_bytes={max_bytes}; raise max_bytes or use get with from_line"
                skipped.append(SkippedFile(path=shown, reason=reason))
                continue
            if total + size > MULTI_GET_MAX_TOTAL_BYTES:
                reason = f"the response reached {MULTI_GET_MAX_TOTAL_BYTES} bytes"
                skipped.append(SkippedFile(path=shown, reason=reason))
                continue
            files.append(_file_text(collection, real))
            total += size
        return FileBatch(files=files, skipped=skipped)


def _as_http(error: NeedleHTTPError) -> Exception:
    from fastapi import HTTPException

    return HTTPException(status_code=error.status_code, detail=error.message)


def status() -> dict[str, Any]:
    """Collections with file and chunk counts, the models and where the index lives."""
    with errors():
        return get_needle().status()


def index(collections: list[str] | None) -> dict[str, Any]:
    """
    Index collections (all when none are named): new and changed files are embedded, removed ones leave.

    :returns: The run's report.
    :raises HTTPException: 400 for an unknown collection, 409 for an index built with other settings.
    """
    with errors(), _serialised("ingest"):
        return get_needle().index(collections or None)


def generator_from_env() -> Any:
    """
    The chat generator named by `NEEDLE_GENERATOR_URL` (an OpenAI-compatible server), or `None`.

    `NEEDLE_GENERATOR_MODEL` names the model (default `default`), `NEEDLE_GENERATOR_API_KEY` the key if the
    server needs one.
    """
    url = os.environ.get(GENERATOR_URL_ENV, "").strip()
    if not url:
        return None
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    return OpenAIChatGenerator(
        api_key=Secret.from_token(os.environ.get(GENERATOR_KEY_ENV) or "unused"),
        model=os.environ.get(GENERATOR_MODEL_ENV, "default"),
        api_base_url=url,
        timeout=60.0,
        max_retries=0,
    )


_ANSWER_RULES = (
    "Answer the question using only the numbered notes below. Cite every claim with the note's number in "
    "brackets, like [1] or [2][3]. If the notes do not contain the answer, say so."
)


def _last_user_text(messages: list[dict]) -> str:
    for message in reversed(messages or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            if isinstance(content, str) and content.strip():
                return content.strip()
    raise NeedleHTTPError(400, "the chat needs a user message with text to answer")


def answer(generator: Any, messages: list[dict], limit: int = 5) -> str:
    """
    Answer the last user message from retrieved notes, citing them as [1], [2] mapped to path and lines.

    :raises HTTPException: 400 when no generator is configured or there is no question, 502 when the
        generator cannot be reached or fails.
    """
    if generator is None:
        raise _as_http(NeedleHTTPError(
            400,
            f"no answer generator is configured: set {GENERATOR_URL_ENV} to an OpenAI-compatible server "
            f"(e.g. http://127.0.0.1:8080/v1) and {GENERATOR_MODEL_ENV} to its model, then restart `needle serve`; "
            "the search endpoints work without one",
        ))
    try:
        question = _last_user_text(messages)
    except NeedleHTTPError as error:
        raise _as_http(error) from None
    hits = search("query", question[:MAX_QUERY_CHARS], None, limit, 0.0).results
    if not hits:
        return "Nothing in your notes matches that question."
    sources = [f"[{n}] {h.collection}/{h.path}:{h.start_line}-{h.end_line}" for n, h in enumerate(hits, 1)]
    context = "\n\n".join(f"{s}\n{h.text}" for s, h in zip(sources, hits))
    from haystack.dataclasses import ChatMessage

    prompt = [
        ChatMessage.from_system(_ANSWER_RULES),
        ChatMessage.from_user(f"Notes:\n\n{context}\n\nQuestion: {question}"),
    ]
    try:
        reply = generator.run(messages=prompt)["replies"][0].text or ""
    except Exception as error:
        logger.warning("Generator failed: %s", error)
        url = os.environ.get(GENERATOR_URL_ENV, "")
        raise _as_http(NeedleHTTPError(502, f"the answer generator at {url} failed: {error}")) from None
    return reply.strip() + "\n\nSources:\n" + "\n".join(sources)


class BearerTokenMiddleware:
    """Requires `Authorization: Bearer <token>` on every HTTP request, MCP routes included (401 otherwise)."""

    def __init__(self, app: Any, token: str) -> None:
        """
        :param app: The ASGI app to protect.
        :param token: The expected token.
        """
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Pass authorised requests on; answer others with 401."""
        if scope["type"] in ("http", "websocket"):
            provided = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(provided, self.expected):
                detail = f"missing or wrong token: send 'Authorization: Bearer <token>' with the value of {TOKEN_ENV}"
                body = json.dumps({"detail": detail}).encode()
                await send({
                    "type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")],
                })
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _validation_message(errors_: list[dict]) -> str:
    parts = []
    for error in errors_:
        loc = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body", "run_req"))
        parts.append(f"{loc or 'body'}: {error.get('msg', 'invalid')}")
    return "; ".join(parts)


def create_app(host: str = DEFAULT_HOST, token: str | None = None) -> FastAPI:
    """
    Build the hayhooks app that serves `server/pipelines/`, with MCP at `/mcp` (streamable HTTP) and `/sse`.

    Deploy, undeploy, draw and trace routes are left out: the endpoint set is fixed at start-up.
    Cross-origin browser requests get no CORS grant, and on a loopback host requests must name a local host.

    :param host: The address the server binds; a loopback one also turns on Host-header checking.
    :param token: When set, every route requires `Authorization: Bearer <token>`.
    :returns: The ASGI app; its start-up loads and warms every endpoint's graph.
    """
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from hayhooks.server.pipelines.registry import registry
    from hayhooks.server.routers import deploy_router, draw_router, undeploy_router
    from hayhooks.settings import StartupDeployStrategy
    from hayhooks.settings import settings as hayhooks_settings
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from needle.mcp_server import http_routes, wrappers_from_registry

    hayhooks_settings.pipelines_dir = str(SERVER_PIPELINES_DIR)
    hayhooks_settings.host = host
    hayhooks_settings.tracing_enabled = False
    hayhooks_settings.monitoring_enabled = False
    hayhooks_settings.startup_deploy_strategy = StartupDeployStrategy.SEQUENTIAL
    hayhooks_settings.cors_allow_origins = []
    hayhooks_settings.cors_allow_methods = ["GET", "POST"]
    hayhooks_settings.cors_allow_headers = ["authorization", "content-type"]

    from hayhooks.server.app import create_app as create_hayhooks_app

    app = create_hayhooks_app()
    left_out = {id(deploy_router), id(undeploy_router), id(draw_router)}
    app.router.routes[:] = [r for r in app.router.routes if id(getattr(r, "original_router", r)) not in left_out]
    app.title, app.description = "Needle", "Hybrid search (BM25 + vectors) over your markdown notes."

    routes, mcp_lifespan = http_routes(wrappers_from_registry(registry))
    app.router.routes.extend(routes)
    expected = sorted(p.name for p in SERVER_PIPELINES_DIR.iterdir() if (p / "pipeline_wrapper.py").is_file())
    hayhooks_lifespan = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app_: Any) -> Any:
        async with hayhooks_lifespan(app_):
            missing = [name for name in expected if registry.get(name) is None]
            if missing:
                raise RuntimeError(f"endpoints {', '.join(missing)} failed to load; see the messages above")
            async with mcp_lifespan():
                yield

    app.router.lifespan_context = lifespan

    async def invalid_request(_request: Any, error: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _validation_message(error.errors())})

    app.add_exception_handler(RequestValidationError, invalid_request)
    if host in _LOCAL_HOSTS:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "::1", "[::1]"])
    if token:
        app.add_middleware(BearerTokenMiddleware, token=token)
    return app


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> int:
    """
    Run the server until interrupted (`needle serve`).

    :returns: The exit code.
    """
    from hayhooks.server.app import run_app

    token = os.environ.get(TOKEN_ENV) or None
    if host not in _LOCAL_HOSTS and not token:
        logger.warning("Serving on %s without %s: anyone who can reach this port can read your notes", host, TOKEN_ENV)
    run_app(create_app(host=host, token=token), host=host, port=port)
    return 0


def mcp_stdio() -> int:
    """Serve the MCP tools over stdin/stdout (`needle mcp`), as desktop clients start them."""
    from needle.mcp_server import run_stdio

    return run_stdio()
