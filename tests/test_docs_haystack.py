"""Every snippet of docs/haystack.md runs: stock Haystack and hayhooks on an index `needle index` built.

The page's code blocks are taken out in order and run as a reader would run them, from a folder that holds the
clone's `pipelines/`: the Python ones in one fresh interpreter (no Needle import of ours first, no allowlist
setting), the YAML one saved where the page says, the shell one with hayhooks on a free port.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.llm_server import free_port

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "haystack.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)


# The page's snippets, in order: the graph, the component and the Qdrant store in your code (Python, YAML),
# hayhooks (bash); then the A/B test offline and online (bash), ragas with a judge (bash) and its result (Python).
HAYSTACK_PYTHON = 3


def test_the_page_has_its_snippets():
    assert len(blocks("python")) == HAYSTACK_PYTHON + 1 and len(blocks("yaml")) == 1 and len(blocks("bash")) == 4


@pytest.fixture
def reader_folder(tmp_path: Path, demo_needle) -> tuple[Path, dict[str, str]]:
    """A reader's folder with the graphs and the page's collection, and an environment naming Needle's index."""
    from tests.document_stores.test_qdrant_haystack_store import STORE, fill

    (tmp_path / "pipelines").symlink_to(REPO / "pipelines")
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    collection = QdrantDocumentStore(path=str(tmp_path / "qdrant-data"), index="notes", **STORE)
    fill(collection)
    collection.close()
    demo_needle.close()  # the reader's processes open the index themselves
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAYSTACK_", "PYTHON"))}
    env.update(
        NEEDLE_DATA_DIR=str(demo_needle.settings.data_dir),
        NEEDLE_MODEL_DIR=str(demo_needle.settings.model_dir),
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    )
    return tmp_path, env


@pytest.mark.integration
def test_every_python_and_yaml_snippet_runs_with_stock_haystack(reader_folder):
    folder, env = reader_folder
    (folder / "qdrant-stores.yml").write_text(blocks("yaml")[0])
    script = folder / "snippets.py"
    script.write_text("\n\n".join(blocks("python")[:HAYSTACK_PYTHON]))
    out = subprocess.run(
        [sys.executable, str(script)], cwd=folder, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert "runbooks/k8s-oomkilled-debugging.md" in lines[0] and lines[3] == "PASS"  # the graph in your code
    assert "restic backs up the laptop" in lines[4] and "0.05" in lines[4]  # fusion and bonus in yours
    assert lines[5].startswith("['runbooks/k8s-oomkilled-debugging.md'")  # the graph over your collection


@pytest.mark.integration
def test_the_hayhooks_snippet_serves_the_graph(reader_folder):
    folder, env = reader_folder
    port = free_port()
    env.update(HAYHOOKS_HOST="127.0.0.1", HAYHOOKS_PORT=str(port))
    lines = blocks("bash")[0].replace("1416", str(port)).splitlines()
    # The server's process id, right after the line that starts it, so that the test stops it whatever happens.
    script = "\n".join(f"{line}\necho $! > server.pid" if "hayhooks run" in line else line for line in lines)
    # Output to files, not pipes: the server started in the background keeps what it inherits open.
    stdout, stderr = folder / "out.txt", folder / "err.txt"
    try:
        with stdout.open("w") as out, stderr.open("w") as err:
            done = subprocess.run(
                ["bash", "-c", f"set -e\n{script}"], cwd=folder, env=env, stdout=out, stderr=err, timeout=300
            )
        assert done.returncode == 0, stderr.read_text()[-3000:]
        assert "runbooks/k8s-oomkilled-debugging.md" in stdout.read_text()
    finally:
        if (folder / "server.pid").exists():
            subprocess.run(["kill", (folder / "server.pid").read_text().strip()], check=False)


def run_bash(folder: Path, env: dict[str, str], script: str, timeout: float = 900) -> str:
    """Run a snippet as bash in the reader's folder (stopping the server it starts in the background); its output."""
    script = "\n".join(f"{line}\necho $! > server.pid" if line.endswith("&") else line for line in script.splitlines())
    stdout, stderr = folder / "out.txt", folder / "err.txt"
    try:
        with stdout.open("w") as out, stderr.open("w") as err:
            done = subprocess.run(
                ["bash", "-c", f"set -e\n{script}"], cwd=folder, env=env, stdout=out, stderr=err, timeout=timeout
            )
        assert done.returncode == 0, stderr.read_text()[-3000:]
        return stdout.read_text()
    finally:
        if (folder / "server.pid").exists():
            subprocess.run(["kill", (folder / "server.pid").read_text().strip()], check=False)
            (folder / "server.pid").unlink()


@pytest.mark.integration
def test_the_ab_snippets_compare_offline_and_split_users_online(reader_folder):
    folder, env = reader_folder
    env["NEEDLE_SERVE__INTERACTION_LOG"] = str(folder / "interactions.jsonl")
    offline, online = blocks("bash")[1], blocks("bash")[2]
    out = run_bash(folder, env, offline.replace("eval/golden/demo.yml", "eval/golden/demo.yml --limit 8"))
    assert "query-b" in out and "ndcg@10" in out.lower()
    out = run_bash(folder, env, online.replace("1416", str(free_port())))
    answers = [line for line in out.splitlines() if line.startswith('{"variant"')]
    assert [a.split('"')[3] for a in answers] == ["query", "query", "qb", "qb"]  # ana, ben, chloe, dmitri
    assert "| qb | 2 | 0 |" in out and "| query | 2 | 0 |" in out


@pytest.mark.integration
def test_the_ragas_snippets_judge_with_the_named_model_and_read_back_as_a_run_result(reader_folder, llm_server):
    from tests.llm_server import MODEL_NAME

    folder, env = reader_folder
    env.update(
        NEEDLE_LLM__URL=llm_server,
        NEEDLE_LLM__MODEL=MODEL_NAME,
        OPENAI_API_KEY="sk-local",
        NEEDLE_SET="generate.generation_kwargs.max_tokens=48",
    )
    command = (
        blocks("bash")[3].replace("http://127.0.0.1:8080/v1", llm_server).replace("qwen2.5-7b-instruct", MODEL_NAME)
    )
    command = command.replace(
        "--judge-timeout 600",
        "--judge-timeout 600 --limit 1 --contexts 1 --metric faithfulness --max-tokens 64 --retries 0",
    )
    out = run_bash(folder, env, command)
    assert f"judged by {MODEL_NAME} at {llm_server}" in out
    assert list((folder / "eval" / "reports").glob("ragas-*.csv"))  # the EvaluationRunResult beside the report
    script = folder / "run_result.py"
    script.write_text(blocks("python")[HAYSTACK_PYTHON])
    done = subprocess.run(
        [sys.executable, str(script)], cwd=folder, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "'metrics': ['faithfulness']" in done.stdout
