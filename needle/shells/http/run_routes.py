"""The `POST /<name>/run` routes of `needle serve`, answering as hayhooks' generic route does, without its per-request work.

hayhooks builds one route per endpoint wrapper; around the wrapper's `run_api` that route logs two lines per
request (one with every request field, the query's text included), records a trace span in its in-memory
trace buffer (hayhooks' trace API, which Needle does not serve) and validates the answer twice (once into
the response model, once more in FastAPI). On `needle serve` that cost about as much as a `get` itself
(py-spy on the serving process, `python -m eval.hotpath http`). `lean_run_routes` replaces each of those
routes, once hayhooks has deployed them, by one with the same path, name, response model and description,
whose endpoint runs `run_api` on a worker thread, builds the response model once and serialises it as FastAPI
does (`serialize_json`, the same bytes). Its request model is the route's body as its command declares it
(`needle.shells.http.endpoints.body_model`: hayhooks' fields, names and descriptions, and a field the request
does not declare refused), hayhooks' own for a wrapper no command names. Errors keep
hayhooks' handling (`handle_pipeline_exceptions`): the wrappers' `HTTPException`s as they are, anything
else a 500 with hayhooks' message. Routes that stream or take files keep hayhooks' route.

`RunShortcut` then answers those routes' well-formed requests without going through FastAPI's router and
request handling (see its docstring); anything it does not take goes on to the routes as before.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Response
from fastapi.exception_handlers import http_exception_handler
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request

JSON = "application/json"
# What a lean route runs for a request: its request model, and the endpoint taking the validated request.
LeanRun = tuple[type[BaseModel], Callable[[BaseModel], Awaitable[Response]]]


def _endpoint(
    run_api: Callable[..., Any], request_model: type[BaseModel], route: Callable[[], APIRoute]
) -> Callable[..., Any]:
    """
    The endpoint of one lean route: the request model's fields to `run_api` on a worker thread, its result as
    the route's response model in JSON.

    :param run_api: The wrapper's `run_api`.
    :param request_model: The model of the request body (hayhooks' own, from the wrapper's signature).
    :param route: Returns the route being built (its response field serialises the answer).
    """
    from hayhooks.server.utils.deploy_utils import handle_pipeline_exceptions

    async def run(run_req: BaseModel) -> Response:
        result = await run_in_threadpool(run_api, **run_req.model_dump())
        built = route()
        answer = built.response_model(result=result)  # validated once, as hayhooks' route does
        assert built.response_field is not None  # the route has a response model
        return Response(content=built.response_field.serialize_json(answer), media_type=JSON)

    run.__annotations__ = {"run_req": request_model, "return": Response}  # FastAPI reads the body's model here
    return handle_pipeline_exceptions()(run)


def lean_route(old: APIRoute, run_api: Callable[..., Any], request_model: type[BaseModel]) -> APIRoute:
    """
    A route answering what `old` (hayhooks' generic `/<name>/run` route) answers, without its logging and tracing.

    :param old: hayhooks' route of the wrapper.
    :param run_api: The wrapper's `run_api` (synchronous).
    :param request_model: The request model hayhooks built for it (`registry.get_metadata(name)["request_model"]`).
    :returns: The new route, with `old`'s path, name, methods, response model, tags and description.
    """
    built: list[APIRoute] = []
    new = APIRoute(
        old.path,
        _endpoint(run_api, request_model, lambda: built[0]),
        methods=sorted(old.methods or {"POST"}),
        name=old.name,
        response_model=old.response_model,
        tags=list(old.tags),
        description=old.description,
        summary=old.summary,
    )
    built.append(new)
    return new


def lean_run_routes(app: FastAPI, registry: Any, runs: dict[str, LeanRun] | None = None) -> list[str]:
    """
    Replace hayhooks' `POST /<name>/run` route of every deployed wrapper with `lean_route`, in place.

    Wrappers whose `run_api` is a coroutine, streams, or takes files or request headers keep hayhooks' route.

    :param app: The app hayhooks deployed the wrappers into.
    :param registry: hayhooks' pipeline registry (`hayhooks.server.pipelines.registry.registry`).
    :param runs: Filled with each replaced route's path and what it runs, for `RunShortcut`.
    :returns: The names whose route was replaced.
    """
    from fastapi.responses import JSONResponse
    from hayhooks.server.utils.base_pipeline_wrapper import BasePipelineWrapper
    from hayhooks.server.utils.request_headers import accepts_request_headers

    from needle.shells.http.endpoints import body_model

    replaced = []
    for index, route in enumerate(app.router.routes):
        if not (isinstance(route, APIRoute) and route.path.endswith("/run") and route.path.count("/") == 2):
            continue
        name = route.path.split("/")[1]
        wrapper, metadata = registry.get(name), registry.get_metadata(name) or {}
        # The route's own body model (`extra="forbid"`), generated from its request like hayhooks' from run_api.
        request_model = body_model(name, getattr(wrapper, "entry", None)) or metadata.get("request_model")
        if not isinstance(wrapper, BasePipelineWrapper) or request_model is None or metadata.get("requires_files"):
            continue
        if wrapper._is_run_api_async_implemented or not wrapper._is_run_api_implemented:
            continue
        if accepts_request_headers(wrapper.run_api):
            continue
        response_class = getattr(route.response_class, "value", route.response_class)  # FastAPI's default placeholder
        if response_class is not JSONResponse:
            continue
        app.router.routes[index] = new = lean_route(route, wrapper.run_api, request_model)
        if runs is not None:
            runs[new.path] = (request_model, new.endpoint)
        replaced.append(name)
    app.openapi_schema = None
    return replaced


class RunShortcut:
    """
    Answers the lean `/<name>/run` routes' well-formed JSON requests straight from the ASGI call.

    Why our own: FastAPI's router tries every route's pattern in turn, then its request handling builds a
    `Request`, resolves the endpoint's parameters and validates the body through its dependency machinery,
    on the event loop, for every request: about a third of what a `search` cost the event loop in `needle
    serve` (`py-spy record --gil`, `python -m eval.hotpath http`). This runs the same endpoint (so the same
    answer bytes and the same errors from the endpoint) after validating the body with the same request model
    as FastAPI does (`json.loads`, then the model in Python mode). A request it does not take whole (another
    route or method, a content type other than JSON, a body that is not JSON or does not validate) goes on to
    the app with its body replayed, so every refusal is FastAPI's own.

    It sits innermost among the middlewares: Needle's guards, hayhooks' request id and CORS still wrap it.
    """

    def __init__(self, app: Any, runs: dict[str, LeanRun]) -> None:
        """
        :param app: The ASGI app (the router with its exception handling).
        :param runs: Path to what the lean route on it runs (`lean_run_routes` fills it once the routes exist).
        """
        self.app = app
        self.runs = runs

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Run a lean route's well-formed request; pass everything else on."""
        run = self.runs.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if run is None or not _json_body(scope):
            await self.app(scope, receive, send)
            return
        body, message = b"", None
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it as it would
                break
            body += message.get("body", b"")
            if not message.get("more_body", False):
                message = None
                break
        request_model, endpoint = run
        try:
            request = request_model.model_validate(json.loads(body)) if message is None else None
        except Exception:
            request = None
        if request is None:
            await self.app(scope, _replay(body, message, receive), send)
            return
        try:
            response = await endpoint(request)
        except HTTPException as error:  # the endpoint's refusals, answered as FastAPI's handler answers them
            response = await http_exception_handler(Request(scope), error)
        await response(scope, receive, send)


def _json_body(scope: dict[str, Any]) -> bool:
    """Whether FastAPI would read the request's body as JSON: no content type, or `application/json` or `+json`."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            kind = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or (kind.startswith(b"application/") and kind.endswith(b"+json"))
    return True


def _replay(body: bytes, last: dict[str, Any] | None, receive: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
    """A `receive` that gives the body already read (then `last`, when reading stopped on it), then `receive`'s."""
    pending: list[dict[str, Any]] = [{"type": "http.request", "body": body, "more_body": last is not None}]
    if last is not None:
        pending.append(last)

    async def replayed() -> dict[str, Any]:
        return pending.pop(0) if pending else await receive()

    return replayed
