"""An agent joins the warm owner: `needle mcp` with a background owner running serves its tools through it
(a thin client: no models, no index of its own) and leaves it running after the session."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes
from needle.evaluation.agent_window import AgentWindow

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parent.parent


def test_an_mcp_session_joins_the_background_owner_and_leaves_it_running(demo_needle, tmp_path):
    from mcp import StdioServerParameters

    demo_needle.close()
    data = tmp_path / "data"
    shutil.copytree(
        demo_needle.settings.data_dir,
        data,
        ignore=shutil.ignore_patterns("owner.json"),
        copy_function=copy_keeping_holes,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEEDLE_")}
    env.update(NEEDLE_DATA_DIR=str(data), NEEDLE_MODEL_DIR=str(demo_needle.settings.model_dir))
    cli = [sys.executable, "-m", "needle.shells.cli"]
    started = subprocess.run([*cli, "owner", "start"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert started.returncode == 0, started.stderr
    before = json.loads((data / "owner.json").read_text())
    try:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "needle.shells.cli", "mcp"], cwd=str(REPO), env=env
        )

        async def session() -> object:
            window = AgentWindow(params)
            try:
                return await window.search({"query": "certbot renew", "limit": 2})
            finally:
                await window.close()

        answer = asyncio.run(session())
        assert not answer.is_error and "certbot-tls-renewal.md" in answer.content[0].text
        after = json.loads((data / "owner.json").read_text())
        assert after["pid"] == before["pid"] and after["command"] == "background"
        status = subprocess.run([*cli, "owner", "status"], cwd=REPO, env=env, capture_output=True, text=True)
        assert f"pid {before['pid']} (needle background)" in status.stdout
    finally:
        subprocess.run([*cli, "owner", "stop"], cwd=REPO, env=env, capture_output=True, timeout=120)
