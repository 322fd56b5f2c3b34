"""A graph in stock hayhooks, and stock processes beside `needle` on one embedded index.

`hayhooks pipeline deploy-yaml` deploys `pipelines/query.yml` as it is on a stock `hayhooks run` (a real server on
127.0.0.1) and `/query/run` answers `{"query": ...}`. The embedded index serves one process at a time: while the
hayhooks server holds it, a `needle` command stops with one line naming the server and the ways out; while
Needle's background owner holds it, a script loading a graph with plain Haystack does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes
from needle.core.resources import PIPELINES_DIR
from tests.llm_server import free_port

pytestmark = pytest.mark.integration

QUESTION = "pod keeps restarting with exit code 137"
EXPECTED = "runbooks/k8s-oomkilled-debugging.md"
BIN = Path(sys.executable).parent
STOCK_SCRIPT = f"""
from haystack import Pipeline
pipeline = Pipeline.loads(open({str(PIPELINES_DIR / "query.yml")!r}).read())
print(pipeline.run({{"request": {{"query": {QUESTION!r}}}}})["snippets"]["documents"][0].meta["path"])
"""


@pytest.fixture
def index(demo_needle, tmp_path: Path) -> dict[str, str]:
    """A copy of the demo index, and the environment of processes that use it (a user's, owner on demand)."""
    demo_needle.close()
    data = tmp_path / "data"
    shutil.copytree(
        demo_needle.settings.data_dir,
        data,
        ignore=shutil.ignore_patterns("owner.json"),
        copy_function=copy_keeping_holes,
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAYSTACK_", "PYTHON", "NEEDLE_"))}
    env.update(NEEDLE_DATA_DIR=str(data), NEEDLE_MODEL_DIR=str(demo_needle.settings.model_dir))
    return env


def needle(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "needle"), *args], env=env, cwd=env["NEEDLE_DATA_DIR"], capture_output=True, text=True, timeout=300
    )


def test_stock_hayhooks_serves_the_query_graph_and_a_needle_command_names_the_way_out(index, tmp_path):
    port = free_port()
    env = {**index, "HAYHOOKS_HOST": "127.0.0.1", "HAYHOOKS_PORT": str(port)}
    log = (tmp_path / "hayhooks.log").open("w")
    deployed_dir = tmp_path / "pipelines"  # empty: hayhooks deploys every folder it finds there at start-up
    deployed_dir.mkdir()
    server = subprocess.Popen(
        [
            str(BIN / "hayhooks"),
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--pipelines-dir",
            str(deployed_dir),
        ],
        env=env,
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/status", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        deployed = subprocess.run(
            [str(BIN / "hayhooks"), "pipeline", "deploy-yaml", "-n", "query", str(PIPELINES_DIR / "query.yml")],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert deployed.returncode == 0, deployed.stdout + deployed.stderr
        answer = httpx.post(f"http://127.0.0.1:{port}/query/run", json={"query": QUESTION}, timeout=300)
        assert answer.status_code == 200, answer.text[:2000]
        result = answer.json()["result"]
        assert result["snippets"]["documents"][0]["meta"]["path"] == EXPECTED
        assert result["label"]["label"] == "PASS"
        # hayhooks' request schema holds the one input a caller must send.
        schema = httpx.get(f"http://127.0.0.1:{port}/openapi.json", timeout=30).json()["components"]["schemas"]
        assert schema["queryRunRequest"]["required"] == ["query"]

        # The server holds the index: a needle command (which would start its own owner) says who and what to do.
        refused = needle(env, "query", QUESTION)
        assert refused.returncode == 1 and refused.stdout == ""
        line = refused.stderr.strip()
        assert "\n" not in line and f"process {server.pid} (hayhooks run)" in line
        assert "`needle serve`" in line and "store.url" in line
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


def test_a_stock_graph_beside_needles_owner_names_the_owner_and_the_way_through_it(index):
    first = needle(index, "search", QUESTION, "-n", "1")  # starts the background owner, which holds the index
    try:
        assert first.returncode == 0, first.stderr
        record = json.loads((Path(index["NEEDLE_DATA_DIR"]) / "owner.json").read_text())
        stock = subprocess.run(
            [sys.executable, "-c", STOCK_SCRIPT], env=index, capture_output=True, text=True, timeout=300
        )
        assert stock.returncode != 0
        assert f"already open in process {record['pid']} (needle owner)" in stock.stderr
        assert "`needle query --pipeline FILE`" in stock.stderr and "`needle owner stop`" in stock.stderr
        # The way out it names works: the owner runs the same file.
        through = needle(index, "query", "--pipeline", str(PIPELINES_DIR / "query.yml"), QUESTION, "-n", "1")
        assert through.returncode == 0 and EXPECTED in through.stdout
    finally:
        needle(index, "owner", "stop")
