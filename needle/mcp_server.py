"""Needle's MCP tools: the endpoint wrappers of `server/pipelines/` offered to agents, over stdio or HTTP.

Each wrapper with a `run_api` becomes one tool: its docstring is the description, its signature (through
hayhooks' request-model builder, the same one the HTTP route uses) the input schema and the validation.
hayhooks' own MCP server is not used: it lists deploy/undeploy tools and predates the installed `mcp` SDK.
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import docstring_parser
import mcp_types as types
from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from needle.server import SERVER_PIPELINES_DIR

logger = logging.getLogger(__name__)

Wrappers = Callable[[], Mapping[str, Any]]
TOOL_ORDER = ("search", "vsearch", "query", "get", "multi_get", "status", "index")

INSTRUCTIONS = (
    "Needle searches the user's markdown notes. Use `search` for exact words, names, commands and error codes; "
    "`vsearch` when the words may differ from the notes' (questions, paraphrases); `query` for the best results "
    "when unsure (it combines both). Results name a file and its lines: read more with `get` (a path or #docid, "
    "with from_line and max_lines) or several files with `multi_get`. `status` lists collections; `index` "
    "re-reads them after the notes changed."
)


def _has_run_api(wrapper: Any) -> bool:
    from hayhooks.server.utils.base_pipeline_wrapper import BasePipelineWrapper

    return type(wrapper).run_api is not BasePipelineWrapper.run_api and not getattr(wrapper, "skip_mcp", False)


class _Tool:
    """One wrapper as a tool: its description, request model and JSON schema."""

    def __init__(self, name: str, wrapper: Any) -> None:
        from hayhooks.server.pipelines.models import create_request_model_from_callable

        doc = docstring_parser.parse(inspect.getdoc(wrapper.run_api) or "")
        self.name = name
        self.wrapper = wrapper
        self.description = "\n\n".join(p for p in (doc.short_description, doc.long_description) if p)
        self.model: type[BaseModel] = create_request_model_from_callable(wrapper.run_api, f"{name}Tool", doc)

    def as_mcp(self) -> types.Tool:
        read_only = self.name != "index"
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.model.model_json_schema(),
            annotations=types.ToolAnnotations(read_only_hint=read_only, destructive_hint=False, open_world_hint=False),
        )


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _invalid(error: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()]
    return "invalid arguments: " + "; ".join(parts)


def build_server(wrappers: Wrappers) -> Any:
    """
    An MCP server (official SDK, low-level) whose tools are the endpoint wrappers.

    :param wrappers: Returns the current wrappers by name (the hayhooks registry, or ones loaded for stdio).
    :returns: A `mcp.server.Server`.
    """
    from fastapi import HTTPException
    from mcp.server import Server

    cache: dict[tuple[str, int], _Tool] = {}

    def tools() -> dict[str, _Tool]:
        found = {}
        current = wrappers()
        for name in sorted(current, key=lambda n: (TOOL_ORDER.index(n) if n in TOOL_ORDER else len(TOOL_ORDER), n)):
            wrapper = current[name]
            if wrapper is not None and _has_run_api(wrapper):
                key = (name, id(wrapper))
                if key not in cache:
                    cache[key] = _Tool(name, wrapper)
                found[name] = cache[key]
        return found

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.as_mcp() for t in tools().values()])

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools().get(params.name)
        if tool is None:
            return _error(f"unknown tool '{params.name}'; tools: {', '.join(tools())}")
        try:
            request = tool.model.model_validate(params.arguments or {})
        except ValidationError as error:
            return _error(_invalid(error))
        arguments = {field: getattr(request, field) for field in type(request).model_fields}
        try:
            result = await anyio.to_thread.run_sync(partial(tool.wrapper.run_api, **arguments))
        except HTTPException as error:
            return _error(str(error.detail))
        except Exception as error:
            logger.error("Tool %s failed: %s", params.name, error, exc_info=error)
            return _error("internal error; see the server log")
        data = to_jsonable_python(result)
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(data, ensure_ascii=False, indent=1))],
            structured_content={"result": data},
        )

    return Server("needle", version=_version(), instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("needle-search")
    except PackageNotFoundError:
        return "0"


def wrappers_from_registry(registry: Any) -> Wrappers:
    """The wrappers hayhooks deployed, looked up on every call."""
    return lambda: {name: registry.get(name) for name in registry.get_names()}


def load_wrappers(directory: Path = SERVER_PIPELINES_DIR) -> dict[str, Any]:
    """
    Import and set up every `<directory>/<name>/pipeline_wrapper.py`, as hayhooks does at start-up.

    :returns: Wrappers by endpoint name.
    :raises RuntimeError: When one fails to set up (e.g. a model is missing), with its message.
    """
    from fastapi import HTTPException

    loaded = {}
    for folder in sorted(p for p in directory.iterdir() if (p / "pipeline_wrapper.py").is_file()):
        spec = importlib.util.spec_from_file_location(f"needle_endpoint_{folder.name}", folder / "pipeline_wrapper.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        wrapper = module.PipelineWrapper()
        try:
            wrapper.setup()
        except HTTPException as error:
            raise RuntimeError(f"endpoint '{folder.name}' failed to load: {error.detail}") from None
        loaded[folder.name] = wrapper
    return loaded


def http_routes(wrappers: Wrappers) -> tuple[list[Any], Callable[[], contextlib.AbstractAsyncContextManager[None]]]:
    """
    Starlette routes serving the tools over streamable HTTP (`/mcp`) and SSE (`/sse`, `/messages/`).

    :returns: The routes, and a lifespan context the app must enter (it runs the session manager).
    """
    from mcp.server.sse import SseServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    server = build_server(wrappers)
    manager = StreamableHTTPSessionManager(app=server, stateless=True)
    sse = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    routes = [
        Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
        Route("/sse", endpoint=handle_sse, methods=["GET"]),
        Mount("/messages/", app=sse.handle_post_message),
    ]
    return routes, lifespan


def run_stdio() -> int:
    """Serve the tools over stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the protocol; nothing else may write there
        wrappers = load_wrappers()
    server = build_server(lambda: wrappers)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)
    return 0
