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


def test_the_page_has_its_snippets():
    assert len(blocks("python")) == 3 and len(blocks("yaml")) == 1 and len(blocks("bash")) == 1


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
    script.write_text("\n\n".join(blocks("python")))
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
