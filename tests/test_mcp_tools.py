"""The MCP tool list and argument checks, in process (no server, no model): size, descriptions, strictness."""

import inspect
import json
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from needle.shells.mcp import (
    PRESENTATION_ARGUMENTS,
    SERVER_PIPELINES_DIR,
    TOOLS,
    Endpoints,
    NeedleMCP,
    _compact,
    _refusal,
)

MAX_TOOLS_LIST_CHARS = 10_000


@pytest.fixture(scope="module")
def listed():
    from mcp_types import ListToolsResult

    mcp = NeedleMCP(Endpoints(dict))
    return ListToolsResult(tools=anyio.run(mcp.server.list_tools))


def test_the_tool_list_is_compact(listed):
    assert len(listed.model_dump_json(by_alias=True, exclude_none=True)) <= MAX_TOOLS_LIST_CHARS
    assert all(tool.output_schema is None for tool in listed.tools)


def test_every_parameter_has_a_description_and_every_schema_a_readable_title(listed):
    for tool in listed.tools:
        assert tool.input_schema["title"] == f"{tool.name} arguments" and tool.title
        for name, schema in tool.input_schema["properties"].items():
            assert schema.get("description"), f"{tool.name}.{name} has no description"
            assert "\n" not in schema["description"] and "anyOf" not in schema
    assert {t.name: t.annotations.read_only_hint for t in listed.tools}["index"] is False


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_tool_takes_exactly_its_endpoints_arguments(name):
    """The arguments model and the endpoint wrapper's `run_api` (the HTTP route) name the same fields and defaults."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"wrapper_{name}", SERVER_PIPELINES_DIR / name / "pipeline_wrapper.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parameters = dict(inspect.signature(module.PipelineWrapper.run_api).parameters)
    parameters.pop("self")
    fields = {n: f for n, f in TOOLS[name].model_fields.items() if n not in PRESENTATION_ARGUMENTS}
    assert set(parameters) == set(fields)
    for field, parameter in parameters.items():
        expected = inspect.Parameter.empty if fields[field].is_required() else fields[field].default
        assert parameter.default == expected, field


class TestArguments:
    def test_numbers_and_booleans_sent_as_strings_are_taken(self):
        args = TOOLS["get"].model_validate({"ref": "a.md", "from_line": "2", "max_lines": "3"})
        assert (args.from_line, args.max_lines) == (2, 3)
        assert TOOLS["query"].model_validate({"query": "x", "limit": "5", "decompose": "true"}).decompose is True

    def test_text_is_not_taken_for_a_number_or_a_number_for_text(self):
        with pytest.raises(ValidationError):
            TOOLS["get"].model_validate({"ref": "a.md", "max_lines": "three"})
        with pytest.raises(ValidationError):
            TOOLS["search"].model_validate({"query": 42})

    def test_an_unknown_argument_is_refused_with_the_valid_names(self):
        with pytest.raises(ValidationError) as error:
            TOOLS["search"].model_validate({"query": "x", "colections": ["notes"]})
        line = _refusal("search", TOOLS["search"], error.value)
        assert line.startswith("unknown argument 'colections': search takes query, collections, limit")

    def test_status_takes_no_argument(self):
        with pytest.raises(ValidationError) as error:
            TOOLS["status"].model_validate({"verbose": True})
        assert (
            _refusal("status", TOOLS["status"], error.value) == "unknown argument 'verbose': status takes no arguments"
        )

    def test_a_refusal_quotes_the_value_sent(self):
        with pytest.raises(ValidationError) as error:
            TOOLS["query"].model_validate({"query": "x", "limit": 0})
        assert _refusal("query", TOOLS["query"], error.value) == (
            "invalid arguments: limit: Input should be greater than or equal to 1 (got 0)"
        )


def test_an_answer_carries_snippets_and_the_chunk_only_when_asked():
    hit = {
        "docid": "#a1b2c3",
        "collection": "n",
        "path": "a.md",
        "title": "A",
        "heading_path": ["A", "Setup"],
        "start_line": 10,
        "end_line": 14,
        "score": 0.123456789,
        "snippet": "@@ -12,2 +12,2 @@ n/a.md\nx\ny",
        "text": "chunk",
        "format": "markdown",
        "anchor": "n/a.md:10:5",
    }
    answer = {"label": "PASS", "results": [hit], "warnings": [], "explain": None}
    assert json.loads(_compact(json.loads(json.dumps(answer)), full=False)) == {
        "label": "PASS",
        "results": [
            {
                "docid": "#a1b2c3",
                "collection": "n",
                "path": "a.md",
                "heading_path": ["Setup"],
                "start_line": 10,
                "end_line": 14,
                "score": 0.123,
                "snippet": "x\ny",
                "snippet_line": 12,
            }
        ],
    }
    assert json.loads(_compact(answer, full=True))["results"][0]["text"] == "chunk"


def test_a_pdf_hit_keeps_its_anchor_and_snippet_header():
    hit = {
        "collection": "p",
        "path": "r.pdf",
        "start_line": 40,
        "end_line": 44,
        "format": "pdf",
        "page": 3,
        "anchor": "p/r.pdf#page=3:12:5",
        "snippet": "@@ page 3 -12,5 +12,5 @@ p/r.pdf\nx",
    }
    assert json.loads(_compact({"results": [dict(hit)]}, full=False))["results"][0] == hit


def test_a_failed_start_becomes_every_calls_one_line():
    from needle.core.model_files import MissingModelError
    from needle.shells.mcp import Unavailable

    def load():
        raise MissingModelError("the embedding model m is not installed in /x; run `needle models`")

    endpoints = Endpoints(load)
    for _ in range(2):
        with pytest.raises(Unavailable, match=r"^the embedding model m is not installed in /x; run `needle models`$"):
            endpoints.wrapper("search")


def test_loading_waits_for_the_client_to_have_its_initialize_answer():
    """Nothing loads while `initialize` is answered; the client's next message (`notifications/initialized`) starts it."""
    from types import SimpleNamespace

    from needle.shells.mcp import _LoadAfterInitialize

    endpoints = Endpoints(dict)
    middleware = _LoadAfterInitialize(endpoints)

    async def answer(ctx):
        return ctx.method

    assert anyio.run(middleware, SimpleNamespace(method="initialize"), answer) == "initialize"
    assert not endpoints.started
    anyio.run(middleware, SimpleNamespace(method="notifications/initialized"), answer)
    assert endpoints.started


def test_the_tool_list_needs_no_haystack():
    """`needle mcp` answers `tools/list` before Haystack loads: the modules it lists tools from do not import it."""
    import subprocess
    import sys

    code = (
        "import sys; from needle.shells.mcp import NeedleMCP, Endpoints; NeedleMCP(Endpoints(dict)); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('haystack', 'fastembed', 'hayhooks', 'fastapi')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout
    assert out.strip() == "[]"


def test_the_signature_the_sdk_reads_is_the_models():
    from needle.shells.mcp import _signature

    signature = _signature(TOOLS["get"])
    assert list(signature.parameters) == ["ref", "from_line", "max_lines"]
    assert signature.parameters["ref"].default is inspect.Parameter.empty
