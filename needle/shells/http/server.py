"""`needle serve`: hayhooks serves the endpoint wrappers of `server/pipelines/`, plus the MCP tools and token auth.

Each wrapper is one HTTP route (`POST /<name>/run`) and, unless it opts out, one MCP tool; the
OpenAI-compatible `/v1/chat/completions` answers with the `answer` wrapper. This module only assembles the
app: security middleware, the MCP transports, validation errors in the documented shape.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any

from needle.core.resources import SERVER_PIPELINES_DIR
from needle.core.settings import load_settings
from needle.owner.asgi_guards import BodyLimitMiddleware, OriginMiddleware, refuse
from needle.owner.processes import logs_asked_for, quiet_graph_runs
from needle.owner.record import HELLO_PATH
from needle.owner.served_facade import owned

if TYPE_CHECKING:
    from fastapi import FastAPI

    from needle.owner.record import OwnerRecord

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 1416
TOKEN_ENV = "NEEDLE_API_TOKEN"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def _header(scope: dict, name: bytes) -> bytes:
    """A request header's value, empty when it has none."""
    return dict(scope.get("headers") or []).get(name, b"")


def _authorization(scope: dict) -> bytes:
    """The request's `Authorization` header, empty when it has none."""
    return _header(scope, b"authorization")


class BearerTokenMiddleware:
    """Requires `Authorization: Bearer <token>` on every HTTP request, MCP routes included (401 otherwise)."""

    def __init__(self, app: Any, token: str, owner_token: str | None = None) -> None:
        """
        :param app: The ASGI app to protect.
        :param token: The expected token.
        :param owner_token: A second token accepted, the one the owner record gives other `needle` commands.
        """
        self.app = app
        self.expected = [f"Bearer {t}".encode() for t in (token, owner_token) if t]

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Pass authorised requests on; answer others with 401."""
        if scope["type"] in ("http", "websocket") and scope.get("path") != HELLO_PATH:  # the challenge needs no token
            provided = _authorization(scope)
            if not any(hmac.compare_digest(provided, expected) for expected in self.expected):
                detail = f"missing or wrong token: send 'Authorization: Bearer <token>' with the value of {TOKEN_ENV}"
                await refuse(send, 401, detail, [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


# Routes that only the owner record's token opens: they act on the server's disk where they are told.
OWNER_ONLY_ROUTES = ("/backup/run",)


class OwnerOnlyMiddleware:
    """
    Answers 403 on `OWNER_ONLY_ROUTES` unless the request bears the owner record's token, which only the
    user who started the process can read (`needle.owner.record`): another local user, a browser page or an API
    client holding `NEEDLE_API_TOKEN` cannot make the server write a backup where they choose.
    """

    def __init__(self, app: Any, owner_token: str | None, paths: tuple[str, ...] = OWNER_ONLY_ROUTES) -> None:
        """
        :param app: The ASGI app to protect.
        :param owner_token: The owner record's token; None refuses the routes to everyone (no owner record).
        :param paths: The routes to guard.
        """
        self.app = app
        self.expected = f"Bearer {owner_token}".encode() if owner_token else None
        self.paths = paths

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        """Pass other routes and the owner's requests on; answer the rest with 403."""
        if (
            scope["type"] == "http"
            and scope.get("path", "").rstrip("/") in self.paths
            and (self.expected is None or not hmac.compare_digest(_authorization(scope), self.expected))
        ):
            await refuse(send, 403, "this route serves only the needle commands of the user who started this process")
            return
        await self.app(scope, receive, send)


# Routes hayhooks serves that Needle does not use (its OpenAI-compatible Responses API and file uploads):
# not served, so that they are no surface to probe.
UNUSED_ROUTES = ("/files", "/v1/files", "/responses", "/v1/responses")


def _drop_routes(router: Any, paths: tuple[str, ...]) -> None:
    """Remove the routes at `paths` from a router and the routers it includes (FastAPI nests them)."""
    kept = []
    for route in router.routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            _drop_routes(included, paths)
            if not included.routes:
                continue
        elif getattr(route, "path", None) in paths:
            continue
        kept.append(route)
    router.routes[:] = kept
    mark = getattr(router, "_mark_routes_changed", None)
    if callable(mark):
        mark()  # FastAPI caches the routes an included router resolves to


# hayhooks lists every deployed pipeline as a chat model; Needle lists only the wrappers that chat (`chat_models`).
MODEL_LIST_ROUTES = ("/models", "/v1/models")


def chat_models(registry: Any) -> list[str]:
    """
    The names `/v1/chat/completions` answers as a model: the deployed wrappers that implement a chat completion.

    hayhooks lists every deployed pipeline, so an OpenAI client offered Needle's `status` or `index` routes
    as models that only answer 501; Needle's one chatting wrapper is `answer`.

    :param registry: hayhooks' pipeline registry.
    """
    names = []
    for name in registry.get_names():
        wrapper = registry.get(name)
        if getattr(wrapper, "_is_run_chat_completion_implemented", False) or getattr(
            wrapper, "_is_run_chat_completion_async_implemented", False
        ):
            names.append(name)
    return sorted(names)


def chat_models_router(registry: Any) -> Any:
    """`GET /v1/models` (and `/models`) in OpenAI's shape, listing `chat_models` only."""
    from fastapi_openai_compat import create_models_router

    return create_models_router(list_models=lambda: chat_models(registry), owned_by="needle", tags=["openai"])


def _validation_message(errors_: Sequence[Any], path: str = "") -> str:
    """
    One readable sentence for a refused body: an unknown field named with the nearest field the route takes
    (`{"collection": ...}` would otherwise be a search of every collection), else each field and its rule.
    """
    from needle.core.arguments import capped, unknown_names
    from needle.shells.http.endpoints import body_model

    located = [(".".join(str(p) for p in e.get("loc", ()) if p not in ("body", "run_req")), e) for e in errors_]
    unknown = [loc for loc, e in located if e.get("type") == "extra_forbidden"]
    model = body_model(path.strip("/").removesuffix("/run")) if path.endswith("/run") else None
    if unknown and model is not None:
        return unknown_names("field", path, unknown, model.model_fields)
    return capped("; ".join(f"{loc or 'body'}: {e.get('msg', 'invalid')}" for loc, e in located))


class AllowedMethods:
    """
    Answers `OPTIONS` (other than a browser's CORS preflight) and a method a path does not take with 405 and the
    `Allow` header of the routes written for that path.

    Starlette answers a method mismatch with the methods of the first route whose pattern matches the path: for
    `/status/run` that was hayhooks' `GET /status/{pipeline_name}` (which answers 404 there), so `OPTIONS
    /status/run` said `Allow: GET` of a route that takes only `POST`. A route whose path is written out is
    the one a path names; a pattern's route counts only where none is.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    def allowed(self, scope: dict[str, Any]) -> set[str]:
        """The methods of the routes written for the request's path (else of the patterns that match it)."""
        from starlette.routing import Match

        app = scope.get("app")
        routes = getattr(getattr(app, "router", None), "routes", ())
        literal: set[str] = set()
        patterned: set[str] = set()
        for route in routes:
            methods = getattr(route, "methods", None)
            if not methods:
                continue
            match, _ = route.matches({**scope, "method": next(iter(methods))})
            if match is Match.FULL:
                (patterned if getattr(route, "param_convertors", None) else literal).update(methods)
        return literal or patterned

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Answer a method the path's routes do not take; pass everything else on (a search costs no look-up)."""
        method = scope.get("method")
        looked_up = scope["type"] == "http" and (
            method not in ("GET", "POST") or (method == "GET" and scope["path"].endswith("/run"))
        )
        if looked_up and not (method == "OPTIONS" and _header(scope, b"access-control-request-method")):
            allowed = self.allowed(scope)
            if allowed and method not in allowed:
                allow = ", ".join(sorted(allowed))
                await refuse(send, 405, f"{scope['path']} takes {allow}", [(b"allow", allow.encode())])
                return
        await self.app(scope, receive, send)


ERROR_SCHEMA = {
    "title": "Error",
    "type": "object",
    "required": ["detail"],
    "properties": {
        "detail": {"type": "string", "title": "Detail", "description": "What went wrong and how to fix it."}
    },
}
# Refusals any route can give before or instead of its result, with the one body shape they all share.
ROUTE_ERRORS = {
    "400": "Bad request (a refused reference, pattern or combination of fields)",
    "401": "Missing or wrong token",
    "403": "Origin not allowed",
    "404": "No such note, collection or model",
    "413": "Request body too large",
    "422": "Invalid request: the field and the rule it broke",
    "500": "Server error (the message says what failed)",
    "502": "The LLM server could not be reached or failed",
    "503": "The index is busy or unavailable (locked, being built, damaged)",
}


def documented_errors(app: Any) -> dict[str, Any]:
    """
    The OpenAPI document with every operation's error responses in the shape Needle sends: `{"detail": str}`.

    FastAPI documents 422 as a list of pydantic errors, but Needle answers every refusal, 422 included, with
    one readable sentence (`_validation_message`); clients and schema checkers should see what they get.

    :param app: The FastAPI app (its generated schema is cached on it, as FastAPI does).
    :returns: The OpenAPI document.
    """
    if app.openapi_schema:
        return app.openapi_schema
    from fastapi.openapi.utils import get_openapi

    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    reference = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for path in schema.get("paths", {}).values():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            for status, description in ROUTE_ERRORS.items():
                responses[status] = {"description": description, **reference}
    app.openapi_schema = schema
    return schema


def _configure_hayhooks(host: str, allowed_origins: list[str]) -> None:
    """Set hayhooks' settings for Needle's server: its wrappers, no tracing or monitoring, CORS for allowed origins."""
    from hayhooks.settings import StartupDeployStrategy
    from hayhooks.settings import settings as hayhooks_settings

    hayhooks_settings.pipelines_dir = str(SERVER_PIPELINES_DIR)
    hayhooks_settings.host = host
    hayhooks_settings.tracing_enabled = False
    # Without the trace API nothing reads hayhooks' span buffer: do not record every stage of every query in it.
    hayhooks_settings.tracing_include_haystack_spans = False
    hayhooks_settings.monitoring_enabled = False
    hayhooks_settings.startup_deploy_strategy = StartupDeployStrategy.SEQUENTIAL
    # Pages on an allowed origin may also read the answers; every other origin is refused (OriginMiddleware).
    hayhooks_settings.cors_allow_origins = allowed_origins
    hayhooks_settings.cors_allow_methods = ["GET", "POST"]
    hayhooks_settings.cors_allow_headers = ["authorization", "content-type"]


def create_app(
    host: str = DEFAULT_HOST,
    token: str | None = None,
    owner: OwnerRecord | None = None,
    watch: bool = False,
    own_record: bool = True,
    warm_ingest: bool = True,
    variants: Mapping[str, str] | None = None,
    mcp: bool = True,
) -> FastAPI:
    """
    Build the hayhooks app that serves `server/pipelines/`, with MCP at `/mcp` (streamable HTTP) and `/sse`.

    Deploy, undeploy and draw routes are left out: the endpoint set is fixed at start-up. A web page on
    another origin than the server's own (and those in `serve.allowed_origins`) is refused with 403, bodies
    over `serve.max_body_bytes` with 413, and on a loopback host requests must name a local host.

    :param host: The address the server binds; a loopback one also turns on Host-header checking.
    :param token: When set, every route requires `Authorization: Bearer <token>`.
    :param owner: This process's owner record (`needle.owner.record`): written once the endpoints hold the index,
        removed when the app stops; its token is accepted besides `token`.
    :param watch: Keep the index up to date while the app runs (`needle.lifecycle.watch`).
    :param own_record: Write and remove `owner`'s record in the app's lifespan; off when the app that serves
        it holds the record itself (`needle.owner.staged.StagedApp`).
    :param warm_ingest: Load the ingest graph (and its embedding model) at start-up; off, the first index run
        loads it (`needle serve` without `--watch`, whose index runs are asked for).
    :param variants: Graph variants served beside the shipped graphs for A/B tests, route name → YAML path
        (`needle.shells.http.variants.served_variants`), with the split route between them and `query`.
    :param mcp: Serve the MCP transports (`/mcp`, `/sse`); off for a background owner, which only `needle`
        commands reach (on a port of the moment, with its record's token), so that it never imports the MCP SDK.
    :returns: The ASGI app; its start-up loads and warms every endpoint's graph (but ingest when `warm_ingest` is off).
    """
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from hayhooks.server.pipelines.registry import registry
    from hayhooks.server.routers import deploy_router, draw_router, undeploy_router
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    from needle.shells.http.run_routes import LeanRun, RunShortcut, lean_run_routes
    from needle.shells.http.variants import deploy_variants, split_between

    settings = load_settings()
    serve_settings = settings.serve
    _configure_hayhooks(host, list(serve_settings.allowed_origins))

    from hayhooks.server.app import create_app as create_hayhooks_app

    from needle.owner.served_facade import warm_on_demand

    warm_on_demand(() if warm_ingest else ("ingest",))
    app = create_hayhooks_app()
    left_out = {id(deploy_router), id(undeploy_router), id(draw_router)}
    app.router.routes[:] = [r for r in app.router.routes if id(getattr(r, "original_router", r)) not in left_out]
    _drop_routes(app.router, UNUSED_ROUTES)
    _drop_routes(app.router, MODEL_LIST_ROUTES)
    app.include_router(chat_models_router(registry))
    app.title, app.description = "Needle", "Hybrid search (BM25 + vectors) over your markdown notes."

    expected = sorted(p.name for p in SERVER_PIPELINES_DIR.iterdir() if (p / "pipeline_wrapper.py").is_file())

    def wrappers() -> dict[str, Any]:
        return {name: registry.get(name) for name in registry.get_names()}

    if mcp:
        from needle.shells.mcp import http_routes

        routes, mcp_lifespan = http_routes(wrappers, host)
    else:
        routes, mcp_lifespan = [], _no_sessions
    quiet_graph_runs()
    app.router.routes.extend(routes)
    app.router.routes.extend(split_between(variants or {}, settings, registry))
    if owner is not None:  # the challenge other needle commands check this owner with, and their CLI route
        from needle.owner.routes import owner_routes

        app.router.routes.extend(owner_routes(owner))
    hayhooks_lifespan = app.router.lifespan_context
    runs: dict[str, LeanRun] = {}

    @asynccontextmanager
    async def lifespan(app_: Any) -> Any:
        # The record first: commands locked out while the endpoints load wait for its address to answer.
        with owned(owner if own_record else None):
            async with hayhooks_lifespan(app_):
                missing = [name for name in expected if registry.get(name) is None]
                if missing:
                    raise RuntimeError(f"endpoints {', '.join(missing)} failed to load; see the messages above")
                deploy_variants(app_, registry, variants or {})
                if not logs_asked_for():  # the same answers without hayhooks' per-request logging and tracing
                    lean_run_routes(app_, registry, runs)
                with watching(watch):
                    async with mcp_lifespan():
                        yield

    app.router.lifespan_context = lifespan

    async def invalid_request(request: Any, error: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _validation_message(error.errors(), request.url.path)})

    app.add_exception_handler(RequestValidationError, invalid_request)
    from starlette.middleware import Middleware

    app.user_middleware.append(Middleware(RunShortcut, runs=runs))  # innermost: every guard still runs first
    app.user_middleware.append(Middleware(AllowedMethods))
    app.openapi = lambda: documented_errors(app)
    app.add_middleware(OriginMiddleware, allowed_origins=serve_settings.allowed_origins)
    app.add_middleware(BodyLimitMiddleware, max_bytes=serve_settings.max_body_bytes)
    if host in LOCAL_HOSTS:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "::1", "[::1]"])
    app.add_middleware(OwnerOnlyMiddleware, owner_token=owner.token if owner else None)
    if token:
        app.add_middleware(BearerTokenMiddleware, token=token, owner_token=owner.token if owner else None)
    from needle.owner.routes import ActivityMiddleware

    app.add_middleware(ActivityMiddleware)
    return app


@asynccontextmanager
async def _no_sessions() -> AsyncIterator[None]:
    """The MCP transports' lifespan when they are not served: nothing to run."""
    yield


@contextmanager
def watching(watch: bool) -> Iterator[None]:
    """Keep the process's index up to date with its collections' folders while the block runs."""
    if not watch:
        yield
        return
    from needle.lifecycle.watch import Watcher
    from needle.owner.served_facade import get_needle

    watcher = Watcher.from_settings(get_needle())
    watcher.start()
    try:
        yield
    finally:
        watcher.stop()


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    backups: dict[str, Any] | None = None,
    watch: bool = False,
    verbose: bool = False,
    ready_fd: int | None = None,
    pipelines: Sequence[str] = (),
) -> int:
    """
    Run the server until interrupted (`needle serve`); with the embedded index it is the index's owner.

    The port is bound and the owner checked before anything loads (a busy port, another owner: one line at
    once); then the log goes to `DATA_DIR/serve.log` (unless `verbose`), the models load (a missing one is
    one line naming `needle models`), and one line, `needle serve: ready at URL`, says it accepts requests.

    :param backups: Scheduled backups (`--every`): `every` seconds, `keep`, `directory`; `None` for none.
    :param watch: Keep the index up to date with the collections' folders (`--watch`).
    :param verbose: Log to the terminal instead of `DATA_DIR/serve.log` (`-v`).
    :param ready_fd: A pipe to write the ready line to (`--background`'s parent holds its other end).
    :param pipelines: `--pipeline NAME=FILE` values: graph variants served at `/NAME/run` besides `serve.pipelines`.
    :returns: The exit code.
    :raises IndexOwnedError: When another process already owns the index.
    :raises PortBusyError: When the port is taken.
    """
    from needle.owner import record as records
    from needle.owner.served_facade import get_needle
    from needle.owner.serving import SERVE_LOG, bind, logged_to, run_uvicorn

    token = os.environ.get(TOKEN_ENV) or None
    if host not in LOCAL_HOSTS and not token:
        logger.warning("Serving on %s without %s: anyone who can reach this port can read your notes", host, TOKEN_ENV)
    owner = None
    settings = load_settings()
    from needle.shells.http.variants import served_variants

    variants = served_variants(settings, pipelines)
    if records.uses_owner(settings):
        records.refuse_second_owner(settings)
    sock = bind(host, port)
    port = sock.getsockname()[1]
    reach = "127.0.0.1" if host in (*LOCAL_HOSTS, "0.0.0.0", "::", "") else host
    if records.uses_owner(settings):
        # Its own token, not NEEDLE_API_TOKEN: routes only the user's own commands may call need to tell them apart.
        owner = records.new_record(f"http://{reach}:{port}", records.new_token(), "serve")
    scheduler = None
    try:
        with logged_to(None if verbose else settings.data_dir / SERVE_LOG) as log:
            # The models first, outside the routes' start-up: a missing one fails here as Needle's one line.
            get_needle().warm("query")
            if backups:
                from needle.shells.http.endpoints import backup_scheduler

                scheduler = backup_scheduler(**backups)
                scheduler.start()
            app = create_app(host=host, token=token, owner=owner, watch=watch, warm_ingest=watch, variants=variants)
            run_uvicorn(app, sock, f"http://{reach}:{port}", log, ready_fd=ready_fd)
    finally:
        sock.close()
        if scheduler is not None:
            scheduler.stop()
    return 0
