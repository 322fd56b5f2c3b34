"""Each request is declared once (`needle.core.requests`): the CLI, the HTTP routes, the MCP tools, the remote client,
the Python API and the query graphs offer the same fields, descriptions and limits, and refuse the same values."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import inspect
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import ValidationError

from haystack_integrations.components.query.needle import search_request as component_module
from haystack_integrations.components.query.needle.search_request import SOCKETS, SearchRequest
from needle.commands.table import BY_NAME, COMMANDS
from needle.core import requests
from needle.core.requests import Param, params
from needle.shells.cli import _parser
from needle.shells.mcp import SERVER_PIPELINES_DIR, TOOLS, Endpoints, NeedleMCP

REPO = Path(__file__).resolve().parent.parent
# Route and tool name → the request it takes.
ROUTES = {c.route: c.request for c in COMMANDS if c.route and c.request is not None}
# CLI command → the request its flags come from.
CLI = {c.name: c.request for c in COMMANDS if c.request is not None and " " not in c.name}


def _wrapper(name: str) -> Any:
    """The endpoint wrapper of a route, instantiated as hayhooks does (no `setup`: no model, no index)."""
    from hayhooks.server.utils.module_loader import _set_method_implementation_flags

    spec = importlib.util.spec_from_file_location(
        f"request_wrapper_{name}", SERVER_PIPELINES_DIR / name / "pipeline_wrapper.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    wrapper = module.PipelineWrapper()
    _set_method_implementation_flags(wrapper)
    return wrapper


@pytest.fixture(scope="module")
def openapi() -> dict[str, Any]:
    """The OpenAPI schema of a FastAPI app holding the routes hayhooks builds from the endpoint wrappers."""
    from fastapi import FastAPI
    from hayhooks.server.utils.deploy_utils import _build_run_route

    app = FastAPI()
    for name in ROUTES:
        route, _ = _build_run_route(name, _wrapper(name))
        app.add_api_route(**route)
    return app.openapi()


def _request_schema(openapi: dict[str, Any], route: str) -> dict[str, Any]:
    reference = openapi["paths"][f"/{route}/run"]["post"]["requestBody"]["content"]["application/json"]["schema"][
        "$ref"
    ]
    return openapi["components"]["schemas"][reference.rsplit("/", 1)[1]]


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without its `null` alternative."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    return {**options[0], **{k: v for k, v in schema.items() if k != "anyOf"}}


def _expect_limits(schema: dict[str, Any], param: Param, text_limits: bool = True) -> None:
    """The JSON schema carries the declared limits (text lengths only when `text_limits`)."""
    schema = _plain(schema)
    if param.kind in (int, float):
        assert (schema.get("minimum"), schema.get("maximum")) == (param.low, param.high), param.name
    elif param.kind is list and text_limits:
        items = schema["items"]
        assert (items.get("minLength"), items.get("maxLength")) == (param.min_chars, param.max_chars), param.name
        assert schema.get("maxItems") == param.max_items, param.name
    elif param.kind is str and text_limits:
        assert (schema.get("minLength"), schema.get("maxLength")) == (param.min_chars, param.max_chars), param.name


class TestEverySurfaceOffersTheDeclaration:
    @pytest.mark.parametrize("route", sorted(ROUTES))
    def test_the_http_routes_schema(self, openapi, route):
        schema = _request_schema(openapi, route)
        taken = [p for p in params(ROUTES[route]) if p.http]
        assert list(schema["properties"]) == [p.name for p in taken]
        assert set(schema.get("required", [])) == {p.name for p in taken if p.required}
        for param in taken:
            prop = schema["properties"][param.name]
            assert prop["description"] == param.help, param.name
            assert prop.get("default") == (None if param.required else param.default), param.name
            _expect_limits(prop, param)

    @pytest.mark.parametrize("route", sorted(ROUTES))
    def test_the_http_body_model_is_the_routes_and_refuses_unknown_fields(self, openapi, route):
        from needle.shells.http.endpoints import body_model

        model = body_model(route)
        generated = model.model_json_schema()
        assert list(generated["properties"]) == list(_request_schema(openapi, route)["properties"])
        assert generated["additionalProperties"] is False
        required = {p.name: "x" for p in params(ROUTES[route]) if p.required}
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            model.model_validate({**required, "limt": 3})

    def test_the_mcp_tools_input_schemas(self):
        from mcp_types import ListToolsResult

        listed = ListToolsResult(tools=anyio.run(NeedleMCP(Endpoints(dict)).server.list_tools))
        tools = {tool.name: tool for tool in listed.tools}
        assert set(tools) == {c.route for c in COMMANDS if c.tool}
        for name in set(ROUTES) & set(tools):
            taken = [p for p in params(ROUTES[name]) if p.mcp]
            schema = tools[name].input_schema
            assert list(schema["properties"]) == [p.name for p in taken]
            assert schema["title"] == f"{name} arguments"
            for param in taken:
                prop = schema["properties"][param.name]
                assert prop["description"] == param.help, f"{name}.{param.name}"
                _expect_limits(prop, param, text_limits=False)  # the compact list leaves text lengths to the model

    @pytest.mark.parametrize("command", sorted(CLI))
    def test_the_cli_flags_and_help(self, command):
        actions = {a.dest: a for a in _subparser(command)._actions}
        for param in params(CLI[command]):
            if not param.cli:
                continue
            action = actions[param.name]
            assert param.help in action.help and param.limits() in action.help, f"{command} {param.name}"
            assert set(param.option_strings) <= set(action.option_strings), f"{command} {param.name}"
            assert bool(param.option_strings) == bool(action.option_strings)
            if param.kind in (int, float):
                assert action.type is param.kind
            if param.kind is list and param.option_strings:
                assert isinstance(action, argparse._AppendAction)

    def test_multi_get_has_one_byte_budget_everywhere(self, openapi):
        from needle.core.files.batches import FileAccess

        budget = requests.named(requests.MultiGetRequest)["max_bytes"].default
        assert _subparser("multi-get").parse_args(["notes/*.md"]).max_bytes == budget
        assert TOOLS["multi_get"].model_fields["max_bytes"].default == budget
        assert _request_schema(openapi, "multi_get")["properties"]["max_bytes"]["default"] == budget
        assert requests.MultiGetRequest().max_bytes == budget == _default(FileAccess.read_many, "max_bytes")

    def test_the_search_request_component_takes_the_declared_graph_inputs(self):
        inputs = set(inspect.signature(SearchRequest.run).parameters) - {"self"}
        assert inputs == {SOCKETS.get(p.graph, p.graph) for p in params(requests.QueryRequest) if p.graph}
        component = SearchRequest()
        assert (component.max_query_chars, component.max_top_k, component.top_k) == (
            requests.MAX_QUERY_CHARS,
            requests.MAX_LIMIT,
            requests.DEFAULT_LIMIT,
        )

    def test_a_graph_input_declared_and_not_taken_fails_when_the_component_loads(self, monkeypatch):
        monkeypatch.setitem(component_module.FIELDS, "tags_some", component_module.FIELDS["tags"])
        with pytest.raises(TypeError, match=r"only the request has \['tags_some'\]"):
            component_module.check_inputs()

    @pytest.mark.parametrize("route", sorted(c.route for c in COMMANDS if c.method == "search"))
    def test_the_remote_client_sends_every_field_the_route_takes(self, route):
        from needle.owner.remote import RemoteNeedle

        sent: dict[str, Any] = {}
        remote = object.__new__(RemoteNeedle)
        remote.post = lambda name, payload: sent.update(payload) or {"label": "PASS", "results": []}  # type: ignore[method-assign]
        request = requests.QueryRequest(
            query="x",
            collections=["n"],
            limit=3,
            min_score=0.1,
            full=True,
            chunks=True,
            explain=True,
            set={"fuse.top_k": 5},
            expand=True,
            rerank=False,
            decompose=True,
            tags=["a"],
            tags_any=["b"],
            tags_none=["c"],
            path="p/",
            where=["s=d"],
            after="2024-01-01",
            before="2025-01-01",
            recent=True,
            self_query=False,
            now="2024-06-01",
        )
        remote.search(request, route)
        assert set(sent) == {p.name for p in params(ROUTES[route]) if p.http}


def _subparser(command: str) -> argparse.ArgumentParser:
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _default(function: Any, name: str) -> Any:
    return inspect.signature(function).parameters[name].default


def _outside(param: Param) -> list[Any]:
    """Values just past each declared limit of a field."""
    values: list[Any] = []
    if param.kind is int:
        values += [param.low - 1] if param.low is not None else []
        values += [param.high + 1] if param.high is not None else []
    elif param.kind is float:
        values += [param.low - 0.01] if param.low is not None else []
        values += [param.high + 0.01] if param.high is not None else []
    elif param.kind in (str, list):
        texts = ["x" * (param.max_chars + 1)] if param.max_chars else []
        texts += ["x" * (param.min_chars - 1)] if param.min_chars else []
        values += [[t] for t in texts] if param.kind is list else texts
        if param.max_items:
            values.append(["x"] * (param.max_items + 1))
    return values


def _inside(param: Param) -> list[Any]:
    """Values at each declared limit of a field."""
    if param.kind in (int, float):
        return [v for v in (param.low, param.high) if v is not None]
    texts = [n for n in (param.min_chars, param.max_chars) if n]
    values = ["a=" + "x" * (n - 2) if param.name == "where" else "x" * n for n in texts]
    return [[v] for v in values] if param.kind is list else values


LIMITED = [(route, p) for route, request in sorted(ROUTES.items()) for p in params(request) if _outside(p)]


class TestEverySurfaceRefusesTheSameValues:
    @pytest.mark.parametrize("route, param", LIMITED, ids=[f"{r}.{p.name}" for r, p in LIMITED])
    def test_past_a_limit_is_refused_and_at_it_taken(self, openapi, route, param):
        from needle.shells.http.endpoints import body_model

        request = ROUTES[route]
        surfaces = [m for m in (_wrapper_model(route), body_model(route)) if param.http]
        surfaces += [TOOLS[route]] if param.mcp and route in TOOLS else []
        base = {p.name: _inside(p)[-1] if p.kind is str else "x" for p in params(request) if p.required}
        for value in _outside(param):
            for model in surfaces:
                with pytest.raises(ValidationError):
                    model.model_validate({**base, param.name: value})
            with pytest.raises(ValueError, match=param.name):
                request(**{**base, param.name: value})  # the Python API and the CLI
            assert param.refusal(value), value
        for value in _inside(param):
            for model in surfaces:
                model.model_validate({**base, param.name: value})
            request(**{**base, param.name: value})
            assert param.refusal(value) is None, value

    @pytest.mark.parametrize(
        "param", [p for p in params(requests.QueryRequest) if p.graph and _outside(p)], ids=lambda p: p.name
    )
    def test_the_search_request_component_refuses_what_the_surfaces_refuse(self, param):
        component = SearchRequest()
        socket = SOCKETS.get(param.graph, param.graph)
        for value in _outside(param):
            with pytest.raises(ValueError, match=socket):
                component.run(**{"query": "x", socket: value})
        if param.kind in (int, float) or param.name == "query":
            for value in _inside(param):
                component.run(**{"query": "x", socket: value})


_MODELS: dict[str, Any] = {}


def _wrapper_model(route: str) -> Any:
    """The request model hayhooks builds for a route (what FastAPI validates a body with when logs are asked for)."""
    if route not in _MODELS:
        import docstring_parser
        from hayhooks.server.pipelines.models import create_request_model_from_callable

        run = _wrapper(route).run_api
        _MODELS[route] = create_request_model_from_callable(
            run, route, docstring_parser.parse(inspect.getdoc(run) or "")
        )
    return _MODELS[route]


def test_the_cli_builds_its_parser_without_pydantic_or_haystack():
    """The thin client (`needle search` through an owner) parses its flags from the declaration alone."""
    code = (
        "import sys, needle.shells.cli, needle.owner.thin_client; needle.shells.cli._parser(); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'haystack', 'hayhooks', 'httpx'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO).stdout
    assert out.strip() == "[]"


def test_a_route_method_gets_every_declared_field_with_its_default():
    from needle.shells.http.endpoints import Endpoint

    class Wrapper(Endpoint):
        """
        Read a note.

        :returns: What it was given.
        """

        command = "get"

    signature = inspect.signature(Wrapper.run_api)
    bound = signature.bind(None, ref="a.md")
    bound.apply_defaults()
    assert dict(bound.arguments) == {"self": None, "ref": "a.md", "from_line": 1, "max_lines": None}
    assert Wrapper.run_api.__doc__.endswith(
        ":param max_lines: How many lines (default: to the end)\n:returns: What it was given."
    )
    with pytest.raises(TypeError):
        signature.bind(None, ref="a.md", line=3)


def test_a_request_is_built_from_the_cli_arguments_named_as_its_fields():
    from needle.commands.dispatch import request_of

    args = _parser().parse_args(
        ["query", "pod", "restarts", "-n", "3", "--tag", "k8s", "--no-rerank", "--set", "fuse.k=30"]
    )
    request = request_of(BY_NAME["query"], args)
    assert isinstance(request, requests.QueryRequest)
    assert (request.query, request.limit, request.tags, request.rerank, request.set) == (
        "pod restarts",
        3,
        ["k8s"],
        False,
        {"fuse.k": 30},
    )
    assert request.min_score is None  # left to the graph: the CLI sends no default of its own
    with pytest.raises(ValueError, match="limit must be 1 to 1000, got 0"):
        request_of(BY_NAME["query"], _parser().parse_args(["query", "x", "-n", "0"]))


class Recording:
    """A Haystack tracer keeping what each stage of a run was given (Haystack's own content tracing)."""

    def __init__(self) -> None:
        self.inputs: dict[str, dict[str, Any]] = {}

    @contextmanager
    def trace(self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Any = None) -> Iterator[Any]:
        from haystack.tracing import Span

        recorder = self

        class Recorded(Span):
            def __init__(self) -> None:
                self.tags = dict(tags or {})

            def set_tag(self, key: str, value: Any) -> None:
                self.tags[key] = value

            def set_content_tag(self, key: str, value: Any) -> None:  # every run's inputs, whatever the setting
                if key == "haystack.component.input":
                    recorder.inputs[self.tags.get("haystack.component.name", "")] = value

        yield Recorded()

    def current_span(self) -> Any:
        return None


@contextmanager
def recorded() -> Iterator[Recording]:
    from haystack import tracing

    recording = Recording()
    tracing.enable_tracing(recording)
    try:
        yield recording
    finally:
        tracing.disable_tracing()


# A value for each field a query graph takes, other than what a request sends when it names none.
CHANGED: dict[str, Any] = {
    "query": "certbot renew hook",
    "collections": ["notes"],
    "limit": 3,
    "min_score": 0.25,
    "chunks": True,
    "expand": False,
    "rerank": False,
    "decompose": True,
    "tags": ["homelab"],
    "tags_any": ["homelab", "kestrel"],
    "tags_none": ["recipes"],
    "path": "howto/",
    "where": ["status=final"],
    "after": "2024-01-01",
    "before": "2025-01-01",
    "recent": True,
    "self_query": False,
    "now": "2024-06-01T00:00:00+00:00",
}


@pytest.mark.integration
@pytest.mark.parametrize("graph", ["query", "search"])
def test_every_field_the_model_feeds_a_graph_reaches_it_and_changes_what_it_receives(demo_needle, graph):
    """
    The query graphs' inputs are the request's: each field the request declares for the graph, set on its own,
    arrives at the stage its contract maps it to, and changes what that stage is given.
    """
    from needle.runtime.contract import GraphContract

    fed = [p for p in params(requests.QueryRequest) if p.graph]
    assert {p.name for p in fed} == set(CHANGED)
    contract = GraphContract.of(demo_needle.pipeline(graph), graph)
    with recorded() as plain:
        demo_needle.search(requests.QueryRequest(query="certbot"), graph)
    for param in fed:
        request = dataclasses.replace(requests.QueryRequest(query="certbot"), **{param.name: CHANGED[param.name]})
        with recorded() as changed:
            demo_needle.search(request, graph)
        for stage, socket in contract.inputs[param.graph]:
            given = changed.inputs[stage]
            assert given.get(socket) == CHANGED[param.name], f"{param.name} did not reach {stage}.{socket}"
            assert given != plain.inputs[stage], f"{param.name} changed nothing {stage} was given"
