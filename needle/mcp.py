"""Needle's MCP tools: the endpoint wrappers of `server/pipelines/`, offered to agents over stdio or HTTP.

Built on the MCP SDK's high-level server (`MCPServer.add_tool`): each wrapper with a `run_api` becomes one
tool whose description is its docstring and whose input schema comes from its signature, exactly as the
HTTP route's. A refusal (`HTTPException` from `needle.http.service`) becomes a tool error with the same
message; arguments that do not validate are refused with the field and the rule, as over HTTP.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import inspect
import logging
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from needle.resources import SERVER_PIPELINES_DIR

logger = logging.getLogger(__name__)

Wrappers = Callable[[], Mapping[str, Any]]
TOOL_ORDER = ("search", "vsearch", "query", "get", "multi_get", "status", "index")
READ_WRITE_TOOLS = frozenset({"index"})

INSTRUCTIONS = (
    "Needle searches the user's markdown notes. Use `search` for exact words, names, commands and error codes; "
    "`vsearch` when the words may differ from the notes' (questions, paraphrases); `query` for the best results "
    "when unsure (it combines both; `decompose` splits a question that asks several things). Every answer carries "
    "a `confidence` (0..1) and a `label`: below 0.5 (label not PASS) the notes most likely do not answer the "
    "question, so say so rather than answer from the results. Results name a file and its lines: read more with "
    "`get` (a path or #docid, with from_line and max_lines) or several files with `multi_get`. `status` lists "
    "collections; `index` re-reads them after the notes changed. "
    "Narrow a search with tags, tags_any, tags_none, path (a folder or glob), where (frontmatter field=value), after "
    "and before (dates), or write them in the query (#tag, in:folder/, status:draft, \"exact phrase\", -excluded, "
    "'last week'); recent ranks newer notes higher. Each result's `context` says what the user wrote about its "
    "collection or folder; `status` lists those descriptions."
)


def _offered(wrapper: Any) -> bool:
    from hayhooks.server.utils.base_pipeline_wrapper import BasePipelineWrapper

    return type(wrapper).run_api is not BasePipelineWrapper.run_api and not getattr(wrapper, "skip_mcp", False)


def _tool_function(wrapper: Any) -> Callable[..., Any]:
    """The wrapper's `run_api` with `HTTPException`s turned into tool errors (same signature and docstring)."""
    from fastapi import HTTPException
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(wrapper.run_api)
    def tool(**arguments: Any) -> Any:
        try:
            return wrapper.run_api(**arguments)
        except HTTPException as error:
            raise ToolError(str(error.detail)) from None

    return tool


def _invalid(error: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()]
    return "invalid arguments: " + "; ".join(parts)


class _CheckArguments:
    """
    MCP middleware: validate a tool call's arguments with the tool's own request model first, so that a bad
    one is refused as `limit: Input should be ...` (the HTTP routes' wording) rather than a pydantic dump.
    """

    def __init__(self) -> None:
        self.models: dict[str, type[BaseModel]] = {}

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        """Refuse invalid arguments with a tool error; pass everything else on."""
        params = ctx.params if isinstance(ctx.params, dict) else {}
        model = self.models.get(params.get("name")) if ctx.method == "tools/call" else None
        if model is not None:
            try:
                model.model_validate(params.get("arguments") or {})
            except ValidationError as error:
                from mcp_types import CallToolResult, TextContent

                return CallToolResult(content=[TextContent(text=_invalid(error))], is_error=True).model_dump(
                    by_alias=True, exclude_none=True
                )
        return await call_next(ctx)


class NeedleMCP:
    """The MCP server and the tools it offers, added once the endpoint wrappers are set up."""

    def __init__(self) -> None:
        from mcp.server.mcpserver import MCPServer

        self.check = _CheckArguments()
        self.server = MCPServer("needle", version=_version(), instructions=INSTRUCTIONS, middleware=[self.check])
        self.tools: list[str] = []

    def add_tools(self, wrappers: Mapping[str, Any]) -> None:
        """
        Offer every wrapper with a `run_api` (and no `skip_mcp`) as a tool, in `TOOL_ORDER`; a second call adds none.

        :param wrappers: Set-up wrappers by endpoint name.
        """
        import docstring_parser
        from hayhooks.server.pipelines.models import create_request_model_from_callable
        from mcp_types import ToolAnnotations

        if self.tools:
            return
        order = sorted(wrappers, key=lambda n: (TOOL_ORDER.index(n) if n in TOOL_ORDER else len(TOOL_ORDER), n))
        for name in order:
            wrapper = wrappers[name]
            if wrapper is None or not _offered(wrapper):
                continue
            description = inspect.cleandoc(inspect.getdoc(wrapper.run_api) or "").split("\n:param")[0].strip()
            self.server.add_tool(
                _tool_function(wrapper), name=name, description=description,
                annotations=ToolAnnotations(
                    read_only_hint=name not in READ_WRITE_TOOLS, destructive_hint=False, open_world_hint=False
                ),
            )
            doc = docstring_parser.parse(inspect.getdoc(wrapper.run_api) or "")
            self.check.models[name] = create_request_model_from_callable(wrapper.run_api, f"{name}Tool", doc)
            self.tools.append(name)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("needle-search")
    except PackageNotFoundError:
        return "0"


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


def http_routes(
    mcp: NeedleMCP, wrappers: Wrappers, host: str
) -> tuple[list[Any], Callable[[], contextlib.AbstractAsyncContextManager[None]]]:
    """
    Starlette routes serving the tools over streamable HTTP (`/mcp`) and SSE (`/sse`, `/messages/`).

    :param mcp: The server.
    :param wrappers: Returns the set-up wrappers by name; read when the app starts (after hayhooks set them up).
    :param host: The address the app binds (the SDK checks Host and Origin headers on loopback).
    :returns: The routes, and a lifespan context the app must enter (it adds the tools and runs the sessions).
    """
    streamable = mcp.server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, host=host)
    sse = mcp.server.sse_app(sse_path="/sse", message_path="/messages/", host=host)

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        mcp.add_tools(wrappers())
        async with mcp.server.session_manager.run():
            yield

    return [*streamable.routes, *sse.routes], lifespan


def run_stdio() -> int:
    """Serve the tools over stdin/stdout until the client closes them (`needle mcp`, see `needle.http.background`)."""
    import anyio

    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the protocol; nothing else may write there
        wrappers = load_wrappers()
    mcp = NeedleMCP()
    mcp.add_tools(wrappers)
    anyio.run(mcp.server.run_stdio_async)
    return 0
