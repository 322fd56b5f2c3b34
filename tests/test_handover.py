"""Handover: two `needle mcp` processes (driven by the MCP SDK's own stdio client) on one index; when the
owner's window closes, the other one's tools answer again without a restart, and none fails after."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes
from needle.evaluation.agent_window import AgentWindow

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent


async def _handover(data: Path, model_dir: Path) -> dict:
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(NEEDLE_DATA_DIR=str(data), NEEDLE_MODEL_DIR=str(model_dir), NEEDLE_OWNER__AUTOSTART="false")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "needle.shells.cli", "mcp"], cwd=str(REPO), env=env
    )
    arguments = {"query": "certbot renew", "limit": 2}
    first = AgentWindow(params)
    first_answer = await first.search(arguments)
    owner = json.loads((data / "owner.json").read_text())
    second = AgentWindow(params)
    try:
        before = await second.search(arguments)
        await first.close()  # the owner's agent window closes
        after = [await second.search(arguments) for _ in range(3)]
        for _ in range(1200):  # its routes for other processes start beside its own calls
            if (data / "owner.json").exists() and json.loads((data / "owner.json").read_text())["pid"] != owner["pid"]:
                break
            await asyncio.sleep(0.1)
        record = json.loads((data / "owner.json").read_text())
    finally:
        await second.close()
    return {"first": first_answer, "owner": owner, "record": record, "before": before, "after": after}


def test_the_second_mcp_takes_the_index_over_when_the_owner_closes(demo_needle, tmp_path):
    demo_needle.close()
    data = tmp_path / "data"
    shutil.copytree(
        demo_needle.settings.data_dir,
        data,
        ignore=shutil.ignore_patterns("owner.json"),
        copy_function=copy_keeping_holes,
    )
    seen = asyncio.run(_handover(data, demo_needle.settings.model_dir))
    assert not seen["before"].is_error
    text = seen["before"].content[0].text
    assert "certbot-tls-renewal.md" in text
    assert [r.is_error for r in seen["after"]] == [False, False, False]  # the call in flight is sent again
    assert all(r.content[0].text == text for r in seen["after"])
    assert seen["record"]["pid"] != seen["owner"]["pid"] and seen["record"]["command"] == "mcp"


def test_a_joined_process_keeps_the_graphs_warm_without_opening_the_index(demo_needle):
    """What makes the take-over fast: the graphs load while another process holds the index, which stays shut."""
    from needle.owner.processes import Standby

    demo_needle.store.count_documents()  # this process's other Needle holds the index meanwhile
    standby = Standby()
    standby.start(demo_needle.settings)
    standby._thread.join(600)
    needle = standby.take()
    assert needle is not None and standby.take() is None
    assert {name for name, _ in needle.runtime._pools} == {"search", "query", "vsearch", "ingest"}
    assert all(getattr(store, "_opened", None) is None for store in needle.environment.open_stores())
