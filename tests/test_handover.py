"""Handover: two `needle mcp` processes (driven by the MCP SDK's own stdio client) on one index; when the
owner's window closes, the other one's tools answer again without a restart, and none fails after."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent


async def _handover(data: Path, model_dir: Path) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(NEEDLE_DATA_DIR=str(data), NEEDLE_MODEL_DIR=str(model_dir), NEEDLE_OWNER__AUTOSTART="false")
    params = StdioServerParameters(command=sys.executable, args=["-m", "needle.cli", "mcp"], cwd=str(REPO), env=env)
    arguments = {"query": "certbot renew", "limit": 2}
    first_stack, second_stack = AsyncExitStack(), AsyncExitStack()
    try:
        first = await first_stack.enter_async_context(ClientSession(*await first_stack.enter_async_context(stdio_client(params))))
        await first.initialize()
        assert not (await first.call_tool("search", arguments)).is_error
        owner = json.loads((data / "owner.json").read_text())
        second = await second_stack.enter_async_context(ClientSession(*await second_stack.enter_async_context(stdio_client(params))))
        await second.initialize()
        before = await second.call_tool("search", arguments)
        await first_stack.aclose()  # the owner's agent window closes
        after = [await second.call_tool("search", arguments) for _ in range(3)]
        record = json.loads((data / "owner.json").read_text())
        return {"owner": owner, "record": record, "before": before, "after": after}
    finally:
        await second_stack.aclose()
        await first_stack.aclose()


def test_the_second_mcp_takes_the_index_over_when_the_owner_closes(demo_needle, tmp_path):
    demo_needle.close()
    data = tmp_path / "data"
    shutil.copytree(demo_needle.settings.data_dir, data, ignore=shutil.ignore_patterns("owner.json"))
    seen = asyncio.run(_handover(data, demo_needle.settings.model_dir))
    assert not seen["before"].is_error
    text = seen["before"].content[0].text
    assert "certbot-tls-renewal.md" in text
    assert [r.is_error for r in seen["after"]] == [False, False, False]  # the call in flight is sent again
    assert all(r.content[0].text == text for r in seen["after"])
    assert seen["record"]["pid"] != seen["owner"]["pid"] and seen["record"]["command"] == "mcp"
