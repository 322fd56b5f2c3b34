"""Needle's MCP tools: the endpoint wrappers of `server/pipelines/`, offered to agents over stdio or HTTP.

Built on the MCP SDK's high-level server: the tools are the commands of `needle.commands.table` that name one
(their title and description are there); each is an `mcp.server.mcpserver.tools.Tool` whose input schema is
its request's arguments model (`needle.core.arguments`: compact, no `null` alternatives, no repeated titles)
and whose call runs the endpoint wrapper of the same name, the HTTP route's. The tool list needs
nothing but pydantic, so a client gets `initialize` and `tools/list` answered while Haystack, the models
and the index load in the background (`Endpoints`); a call waits for them, and when they failed to load,
every call answers the one line that says why and what to run. Arguments are checked first by the same
models (`_CheckArguments`): an unknown name is refused with the valid ones, a number or boolean sent as
a string is taken, and every refusal quotes the value it refuses. Answers are compact JSON; a search
hit carries its snippet and place, its whole chunk only with `full`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import inspect
import json
import logging
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from needle.commands.table import TOOLS as COMMANDS
from needle.core.arguments import Arguments, arguments_model, capped, input_schema, unknown_names
from needle.core.resources import SERVER_PIPELINES_DIR

logger = logging.getLogger(__name__)

Wrappers = Callable[[], Mapping[str, Any]]
SEARCH_TOOLS = frozenset({"search", "vsearch", "query"})
# Arguments a tool handles itself rather than its endpoint: how much of each hit to send.
PRESENTATION_ARGUMENTS = frozenset({"full"})


# Each tool's arguments model, by name: the fields of its command's request that MCP takes (`tools/list` offers
# their compact schemas).
TOOLS: dict[str, type[Arguments]] = {
    name: arguments_model(name, command.request, "mcp") for name, command in COMMANDS.items()
}
INSTRUCTIONS = (
    "Needle searches the user's notes. `query` (hybrid) is the best default; `search` for exact words, names and "
    "error codes; `vsearch` for questions in other words. Each answer has a `label` and a `confidence` (0..1): "
    "{label_meaning} Each hit has its place (`collection`, `path`, the chunk's `start_line`..`end_line`, `docid`) and "
    "a `snippet`, its best-matching lines from `snippet_line` on; read more with `get` (path or #docid, from_line, "
    "max_lines) or several files with `multi_get`; `full` adds each hit's whole chunk. Filter with tags, path, where (frontmatter "
    'field=value), after/before (dates), or in the query itself (#tag, in:folder/, field:value, "phrase", -word, '
    "'last week'). `status` lists collections and what the user wrote about them (each hit's `context`); `index` "
    "re-reads notes after they changed."
)
# What each label measured, in the terms `python -m eval.labels` measures it (docs/trust.md has the tables).
LABEL_MEANING = (
    "PASS means a top-3 hit answers: of test questions over six sets of notes and docs, 97 in 100 that `query` "
    "labelled PASS had the answer in the top 3 (`search` 97, `vsearch` 96), and PASS went to 1 of 54 questions "
    "the notes do not answer that sit near their topics or are short and personal (`search` and `vsearch` 2) and "
    "to none of 100 off-topic ones. PASS is strict, so any other label means unsure, not absent: `query` still had "
    "the answer in the top 3 for 9 in 10 answerable questions it did not label PASS (`vsearch` 3 in 4, `search` "
    "3 in 5). Read the top snippets before saying the notes lack it; only NO_RESULTS means nothing matched. A "
    "multi-part question's label speaks for the part its top hit answers best: check that each part has its hit."
)


def instructions() -> str:
    """The server's instructions, with the label's measured meaning."""
    return INSTRUCTIONS.format(label_meaning=LABEL_MEANING)


def _one_line(error: BaseException) -> str:
    """What a failed start-up tells every tool call: Needle's one-line message for the error."""
    from needle.commands.failures import classify

    return " ".join(classify(error).message.split())


class Unavailable(RuntimeError):
    """The endpoints did not load: the message says why and what to run."""


class Endpoints:
    """
    The set-up endpoint wrappers, loaded once (for `needle mcp`, on a thread while the protocol is served).

    Until they are loaded a call waits; when loading failed (a missing model, a damaged index, a bad
    configuration) every call gets the same one-line message, and the process keeps serving.
    """

    def __init__(self, load: Wrappers) -> None:
        """:param load: Loads and sets up the wrappers by endpoint name; runs once."""
        self._load = load
        self._lock = threading.Lock()
        self._started = False
        self._done = threading.Event()
        self._wrappers: Mapping[str, Any] = {}
        self._failure: str | None = None

    @property
    def started(self) -> bool:
        """Whether loading has begun (on the thread, or in a call that found nobody had started it)."""
        return self._started

    def start(self) -> None:
        """Begin loading on a daemon thread; a second call does nothing."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run, name="needle-mcp-load", daemon=True).start()

    def _run(self) -> None:
        try:
            with contextlib.redirect_stdout(sys.stderr):  # stdout carries the protocol; nothing else may write there
                self._wrappers = self._load()
        except BaseException as error:
            self._failure = _one_line(error)
            print(f"needle mcp: {self._failure}", file=sys.stderr, flush=True)
        finally:
            self._done.set()

    def wrapper(self, name: str) -> Any:
        """
        The set-up wrapper of an endpoint, loading them first when nobody started to.

        :raises Unavailable: With the one line that says why they did not load.
        """
        with self._lock:
            run_here = not self._started
            self._started = True
        if run_here:
            self._run()
        self._done.wait()
        if self._failure is not None:
            raise Unavailable(self._failure)
        wrapper = self._wrappers.get(name)
        if wrapper is None:
            raise Unavailable(f"the {name} tool is not available: its endpoint did not load")
        return wrapper


_PLAIN_HEADER = re.compile(r"@@ -[0-9]+,[0-9]+ \+([0-9]+),[0-9]+ @@ [^\n]*")


def _compact_hit(hit: dict[str, Any], full: bool) -> dict[str, Any]:
    """
    A hit without what it repeats: its chunk text (unless `full`), its title when a `heading_path` names it (and
    that path's outermost heading, the note's own, when sections follow it: the `path` names the note), an
    anchor that is just `collection/path:start:count`, the markdown format, a score's noise digits; a plain
    snippet's header becomes `snippet_line`, the file line its first line is.
    """
    if not full:
        hit.pop("text", None)
    if hit.get("heading_path"):  # it starts with the note's own heading, which names it as well as its title
        hit.pop("title", None)
        if len(hit["heading_path"]) > 1:  # the note is named by its path: the sections place the snippet
            hit["heading_path"] = hit["heading_path"][1:]
    lines = f"{hit.get('start_line')}:{int(hit.get('end_line', 0)) - int(hit.get('start_line', 0)) + 1}"
    if hit.get("anchor") == f"{hit.get('collection')}/{hit.get('path')}:{lines}":
        hit.pop("anchor")
    if hit.get("format") == "markdown":
        hit.pop("format")
    if isinstance(hit.get("score"), float):
        hit["score"] = round(hit["score"], 3)
    header, _, body = str(hit.get("snippet", "")).partition("\n")
    plain = _PLAIN_HEADER.fullmatch(header)
    if plain:
        hit["snippet"], hit["snippet_line"] = body, int(plain.group(1))
    return hit


def _compact(result: Any, full: bool) -> str:
    """
    A tool's answer as compact JSON: nulls and empty lists left out, each search hit as `_compact_hit` shapes
    it (its whole chunk only with `full`).
    """
    if isinstance(result, BaseModel):
        data = result.model_dump(mode="json", exclude_none=True)
    else:
        data = json.loads(json.dumps(result, default=str))
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        data["results"] = [_compact_hit(hit, full) if isinstance(hit, dict) else hit for hit in data["results"]]
    if isinstance(data, dict):
        data = {key: value for key, value in data.items() if value is not None and (value != [] or key == "results")}
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _signature(model: type[Arguments]) -> inspect.Signature:
    """A keyword-only signature with the model's fields, types and defaults (what the SDK builds a tool from)."""
    parameters = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=field.rebuild_annotation(),
            default=inspect.Parameter.empty if field.is_required() else field.default,
        )
        for name, field in model.model_fields.items()
    ]
    return inspect.Signature(parameters)


def _tool(name: str, endpoints: Endpoints) -> Any:
    """The SDK tool `name`: the endpoint's `run_api` behind the arguments model, answering compact JSON."""
    from mcp.server.mcpserver.tools import Tool
    from mcp_types import ToolAnnotations

    model = TOOLS[name]

    def call(**arguments: Any) -> Any:
        from fastapi import HTTPException

        shown = {key: arguments.pop(key) for key in PRESENTATION_ARGUMENTS & set(arguments)}
        try:
            result = endpoints.wrapper(name).run_api(**arguments)
        except HTTPException as error:
            return refused(str(error.detail))
        except Unavailable as error:
            return refused(str(error))
        return _compact(result, full=bool(shown.get("full")))

    call.__name__ = name
    call.__signature__ = _signature(model)  # type: ignore[attr-defined]  # what inspect.signature reads
    command = COMMANDS[name]
    assert command.tool is not None
    tool = Tool.from_function(
        call,
        name=name,
        title=command.tool.title,
        description=command.tool.description,
        structured_output=False,
        annotations=ToolAnnotations(
            read_only_hint=command.index != "writes", destructive_hint=False, open_world_hint=False
        ),
    )
    tool.parameters = input_schema(model)
    return tool


def refused(text: str) -> Any:
    """A tool's error answer: the one line, as it is (no "Error executing tool" before it, no server log)."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(text=text)], is_error=True)


def _refusal(name: str, model: type[BaseModel], error: ValidationError) -> str:
    """One line saying what is wrong with each value sent, or which names the tool takes."""
    unknown = [str(e["loc"][0]) for e in error.errors() if e["type"] == "extra_forbidden"]
    if unknown:
        return unknown_names("argument", name, unknown, model.model_fields)
    parts = []
    for e in error.errors():
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        sent = "" if e["type"] == "missing" else f" (got {json.dumps(e.get('input'), default=str)[:80]})"
        parts.append(f"{where}: {e['msg']}{sent}")
    return capped("invalid arguments: " + "; ".join(parts))


class _CheckArguments:
    """
    MCP middleware: validate a tool call's arguments with the tool's model before the SDK does, so a bad one
    is refused in one line naming the field, the rule and the value sent, and strings such as `"3"` or
    `"true"` reach the tool as the number or boolean they stand for.
    """

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        """Refuse invalid arguments with a tool error; pass valid ones on, converted."""
        params = ctx.params if isinstance(ctx.params, dict) else {}
        model = TOOLS.get(str(params.get("name"))) if ctx.method == "tools/call" else None
        if model is None:
            return await call_next(ctx)
        arguments = params.get("arguments") or {}
        try:
            if not isinstance(arguments, dict):
                raise TypeError(f"arguments must be an object, got {json.dumps(arguments, default=str)[:80]}")
            checked = model.model_validate(arguments).model_dump(exclude_unset=True)
        except (ValidationError, TypeError) as error:
            text = _refusal(params["name"], model, error) if isinstance(error, ValidationError) else str(error)
            return refused(text).model_dump(by_alias=True, exclude_none=True)
        return await call_next(dataclasses.replace(ctx, params={**params, "arguments": checked}))


class _LoadAfterInitialize:
    """
    MCP middleware: start loading the endpoints with the first message after `initialize` (the client's
    `notifications/initialized`, sent once it has the answer), so that no loading competes with that answer.
    """

    def __init__(self, endpoints: Endpoints) -> None:
        self.endpoints = endpoints

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        """Begin loading on any message but `initialize`, then handle it."""
        if ctx.method != "initialize":
            self.endpoints.start()
        return await call_next(ctx)


class NeedleMCP:
    """The MCP server with every tool of the command table (`TOOLS`), served by `endpoints` once they load."""

    def __init__(self, endpoints: Endpoints, log_level: Literal["INFO", "WARNING"] = "INFO") -> None:
        """
        :param endpoints: Where the tools' calls go; they start loading once a client initialized.
        :param log_level: What the SDK logs (`needle mcp` keeps its stderr to warnings).
        """
        from mcp.server.mcpserver import MCPServer

        self.endpoints = endpoints
        self.tools = [_tool(name, endpoints) for name in TOOLS]
        self.server = MCPServer(
            "needle",
            version=_version(),
            instructions=instructions(),
            tools=self.tools,
            log_level=log_level,
            middleware=[_LoadAfterInitialize(endpoints), _CheckArguments()],
        )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("needle-search")
    except PackageNotFoundError:
        return "0"


def load_wrappers(directory: Path = SERVER_PIPELINES_DIR) -> dict[str, Any]:
    """
    Import and set up every `<directory>/<name>/pipeline_wrapper.py` that is a tool, as hayhooks does at start-up.

    :returns: Wrappers by endpoint name.
    :raises RuntimeError: When one fails to set up (e.g. a model is missing), with its message.
    """
    from fastapi import HTTPException

    loaded = {}
    for folder in sorted(p for p in directory.iterdir() if (p / "pipeline_wrapper.py").is_file()):
        if folder.name not in TOOLS:
            continue
        spec = importlib.util.spec_from_file_location(f"needle_endpoint_{folder.name}", folder / "pipeline_wrapper.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        wrapper = module.PipelineWrapper()
        try:
            wrapper.setup()
        except HTTPException as error:
            raise RuntimeError(f"the {folder.name} tool failed to load: {error.detail}") from None
        loaded[folder.name] = wrapper
    return loaded


def http_routes(
    wrappers: Wrappers, host: str
) -> tuple[list[Any], Callable[[], contextlib.AbstractAsyncContextManager[None]]]:
    """
    Starlette routes serving the tools over streamable HTTP (`/mcp`) and SSE (`/sse`, `/messages/`).

    :param wrappers: Returns the set-up wrappers by name; read at the first call (after hayhooks set them up).
    :param host: The address the app binds (the SDK checks Host and Origin headers on loopback).
    :returns: The routes, and a lifespan context the app must enter (it runs the sessions).
    """
    mcp = NeedleMCP(Endpoints(wrappers))
    streamable = mcp.server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, host=host)
    sse = mcp.server.sse_app(sse_path="/sse", message_path="/messages/", host=host)

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with mcp.server.session_manager.run():
            yield

    return [*streamable.routes, *sse.routes], lifespan


def run_stdio(prepare: Callable[[], None] = lambda: None) -> int:
    """
    Serve the tools over stdin/stdout until the client closes them (`needle mcp`, see `needle.owner.processes`).

    The protocol is answered at once; once the client initialized, `prepare` (owning or joining the index) and
    the endpoints load on a thread, and what fails there becomes every call's one-line answer, not an exit.

    :param prepare: Runs first on the loading thread.
    :returns: The exit code.
    """
    import anyio

    def load() -> Mapping[str, Any]:
        prepare()
        return load_wrappers()

    # The loading starts once the client initialized, when the SDK has claimed stdout: stray output lands on stderr.
    mcp = NeedleMCP(Endpoints(load), log_level="WARNING")
    anyio.run(mcp.server.run_stdio_async)
    return 0
