"""The MCP tools through the official `mcp` client: streamable HTTP and SSE on the server, and `needle mcp` over stdio."""

import json
import sys

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.server.conftest import REPO, TOKEN, clean_env, copy_data

pytestmark = pytest.mark.integration
TOOLS = ["search", "vsearch", "query", "get", "multi_get", "links", "status", "index"]
MAX_DEFAULT_ANSWER_CHARS = 4_000
ANSWER_SIZE_QUESTIONS = ("postgres logical replication slot", "sqlite WAL mode checkpoint busy_timeout")


def run(coro_fn, timeout: float = 120):
    async def bounded():
        with anyio.fail_after(timeout):
            return await coro_fn()

    return anyio.run(bounded)


def result_of(call) -> object:
    assert not call.is_error, call.content[0].text
    return json.loads(call.content[0].text)


async def exercise(client: Client) -> dict:
    """The checks every transport must pass; returns what they saw."""
    listed = (await client.list_tools()).tools
    answer = result_of(await client.call_tool("search", {"query": "certbot renew", "limit": 2}))
    assert answer["label"] == "PASS" and 0.0 < answer["confidence"] <= 1.0
    hits = answer["results"]
    lines = result_of(await client.call_tool("get", {"ref": hits[0]["docid"], "from_line": 1, "max_lines": 2}))
    escape = await client.call_tool("get", {"ref": "../../etc/passwd"})
    invalid = await client.call_tool("query", {"query": "x", "limit": 0})
    # As the MCP Inspector sends them: numbers and booleans as strings.
    as_strings = result_of(await client.call_tool("get", {"ref": hits[0]["docid"], "from_line": "2", "max_lines": "3"}))
    full = result_of(await client.call_tool("search", {"query": "certbot renew", "limit": "1", "full": "true"}))
    # The largest default answers on the demo notes: 10 hits, snippets and places only.
    sizes = [len((await client.call_tool("query", {"query": q})).content[0].text) for q in ANSWER_SIZE_QUESTIONS]
    refused = {
        "typo": await client.call_tool("search", {"query": "certbot", "colections": ["notes"]}),
        "status": await client.call_tool("status", {"verbose": True}),
        "docid": await client.call_tool("get", {"ref": "#zzzzzz"}),
        "nothing": await client.call_tool("multi_get", {}),
        "collection": await client.call_tool("multi_get", {"pattern": "nope/*.md"}),
        "text": await client.call_tool("get", {"ref": hits[0]["docid"], "max_lines": "three"}),
    }
    return {
        "tools": listed,
        "sizes": sizes,
        "hits": hits,
        "lines": lines,
        "escape": escape,
        "invalid": invalid,
        "as_strings": as_strings,
        "full": full["results"],
        "refused": refused,
    }


def check(seen: dict) -> None:
    assert [t.name for t in seen["tools"]] == TOOLS
    assert max(seen["sizes"]) <= MAX_DEFAULT_ANSWER_CHARS, seen["sizes"]
    assert seen["hits"][0]["path"] == "howto/certbot-tls-renewal.md"
    assert seen["lines"]["to_line"] == 2 and seen["lines"]["path"] == "howto/certbot-tls-renewal.md"
    assert seen["escape"].is_error and "'..'" in seen["escape"].content[0].text
    assert (
        seen["invalid"].is_error
        and "limit: Input should be greater than or equal to 1" in seen["invalid"].content[0].text
    )
    assert all(
        "text" not in hit and hit["snippet"] and hit["snippet_line"] >= hit["start_line"] for hit in seen["hits"]
    )
    assert seen["full"][0]["text"] and (seen["as_strings"]["from_line"], seen["as_strings"]["to_line"]) == (2, 4)
    said = {name: call.content[0].text for name, call in seen["refused"].items() if call.is_error}
    assert said["typo"].startswith("unknown argument 'colections': search takes query, collections, limit")
    assert said["status"] == "unknown argument 'verbose': status takes no arguments"
    assert said["docid"].startswith("'#zzzzzz' is not a docid")
    assert "neither was sent" in said["nothing"]
    assert "no collection is named 'nope' (notes)" in said["collection"]
    assert said["text"].startswith("invalid arguments: max_lines:") and '(got "three")' in said["text"]
    assert all("\n" not in line for line in said.values()) and len(said) == len(seen["refused"])


class TestStreamableHttp:
    def test_tools_work_over_streamable_http(self, server):
        async def go():
            async with Client(f"{server.url}/mcp") as client:
                return await exercise(client)

        check(run(go))

    def test_descriptions_tell_an_agent_which_tool_to_use(self, server):
        async def go():
            async with Client(f"{server.url}/mcp") as client:
                return {t.name: t for t in (await client.list_tools()).tools}

        tools = run(go)
        assert "error codes" in tools["search"].description and "vsearch" in tools["search"].description
        assert "paraphrase" in tools["vsearch"].description
        assert "best quality" in tools["query"].description
        assert "line" in tools["get"].description and "max_bytes" in tools["multi_get"].description
        assert set(tools["query"].input_schema["properties"]) == {
            "query",
            "collections",
            "limit",
            "min_score",
            "expand",
            "rerank",
            "full",
            "chunks",
            "explain",
            "set",
            "tags",
            "tags_any",
            "tags_none",
            "path",
            "where",
            "after",
            "before",
            "recent",
            "self_query",
            "decompose",
        }
        assert set(tools["search"].input_schema["properties"]) >= {"tags", "path", "where", "after", "before", "recent"}
        assert "#tag" in tools["query"].description or "tags" in tools["query"].input_schema["properties"]
        assert tools["query"].input_schema["properties"]["limit"]["maximum"] == 1000
        assert tools["search"].annotations.read_only_hint and not tools["index"].annotations.read_only_hint

    def test_status_and_index_tools(self, server):
        async def go():
            async with Client(f"{server.url}/mcp") as client:
                status = result_of(await client.call_tool("status", {}))
                report = result_of(await client.call_tool("index", {"collections": ["notes"]}))
                one = result_of(await client.call_tool("index", {"paths": ["howto/sqlite-wal-mode.md"]}))
                return status, report, one

        status, report, one = run(go)
        assert status["collections"][0]["name"] == "notes"
        assert report["chunks_embedded"] == 0
        assert (one["files_seen"], one["files_read"], one["texts_embedded"]) == (1, 1, 0)

    def test_the_token_guards_mcp_too(self, locked_server):
        async def without():
            async with Client(f"{locked_server.url}/mcp") as client:
                await client.list_tools()

        # The refusal surfaces from the client's task groups as an MCPError, however deep they nest.
        with pytest.RaisesGroup(MCPError, flatten_subgroups=True):
            run(without, timeout=30)

        async def with_token():
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
            async with http, Client(streamable_http_client(f"{locked_server.url}/mcp", http_client=http)) as client:
                return [t.name for t in (await client.list_tools()).tools]

        assert run(with_token) == TOOLS


class TestSse:
    def test_tools_work_over_sse(self, server):
        async def go():
            async with Client(sse_client(f"{server.url}/sse")) as client:
                return await exercise(client)

        check(run(go))


class TestStdio:
    def test_needle_mcp_serves_the_same_tools_over_stdio(self, demo_index, model_dir):
        data = copy_data(demo_index, "data-stdio")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "needle.shells.cli", "mcp"],
            env=clean_env(data, model_dir),
            cwd=str(REPO),
        )

        async def go():
            async with Client(params) as client:
                return await exercise(client)

        check(run(go, timeout=240))

    def test_without_its_models_needle_mcp_keeps_serving_and_every_call_says_what_to_run(self, demo_index, tmp_path):
        """A missing model: `initialize` and `tools/list` answer, each call is one line naming `needle models`."""
        data = copy_data(demo_index, "data-no-models")
        stderr = (tmp_path / "stderr.log").open("w+")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "needle.shells.cli", "mcp"],
            env=clean_env(data, tmp_path / "no-models"),
            cwd=str(REPO),
        )

        async def go():
            async with Client(stdio_client(params, errlog=stderr)) as client:
                listed = [t.name for t in (await client.list_tools()).tools]
                calls = [
                    await client.call_tool(name, args)
                    for name, args in (
                        ("query", {"query": "certbot renew"}),
                        ("search", {"query": "certbot", "limit": "2"}),
                        ("status", {}),
                    )
                ]
                return listed, calls

        listed, calls = run(go, timeout=240)
        assert listed == TOOLS
        for call in calls:
            text = call.content[0].text
            assert call.is_error and "needle models" in text and "\n" not in text and "Traceback" not in text
        stderr.seek(0)
        logged = stderr.read()
        assert "Traceback" not in logged and len(logged.splitlines()) <= 5, logged

    def test_a_second_needle_mcp_serves_its_tools_through_the_owner(self, locked_server, model_dir):
        """The token server owns its index; `needle mcp` on the same data folder finds it in the owner record."""
        record = json.loads((locked_server.data_dir / "owner.json").read_text())
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "needle.shells.cli", "mcp"],
            env=clean_env(locked_server.data_dir, model_dir),
            cwd=str(REPO),
        )

        async def go():
            async with Client(params) as client:
                return await exercise(client)

        check(run(go, timeout=240))
        assert record["token"] != TOKEN and record["pid"] == locked_server.process.pid  # the owner's own token
