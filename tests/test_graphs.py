"""The files of pipelines/ are plain Haystack YAML: the file a user edits is the file that loads, anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml

from needle.runtime.loader import PIPELINES_DIR

GRAPHS = sorted(p.name for p in PIPELINES_DIR.glob("*.yml"))
NEEDLE_STORE = "haystack_integrations.document_stores.needle.needle_document_store.NeedleDocumentStore"
# What a process started elsewhere runs: stock Haystack, no allowlist setting, no callbacks, nothing resolved first.
STOCK_LOAD = """
import sys
from haystack import Pipeline
pipeline = Pipeline.loads(open(sys.argv[1]).read())
print(len(pipeline.graph.nodes))
"""


def stock_environment(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAYSTACK_", "NEEDLE_", "PYTHON"))}
    env["NEEDLE_MODEL_DIR"] = os.environ.get("NEEDLE_MODEL_DIR", os.path.expanduser("~/.cache/needle/models"))
    env["NEEDLE_DATA_DIR"] = str(tmp_path / "data")
    env["OPENAI_API_KEY"] = "unused"  # Haystack 2.x builds the OpenAI client in __init__
    return env


@pytest.mark.parametrize("name", GRAPHS)
def test_every_graph_loads_with_stock_haystack_in_a_fresh_process_elsewhere(name, tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", STOCK_LOAD, str(PIPELINES_DIR / name)],
        cwd=tmp_path,
        env=stock_environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout.split()[-1]) == len(yaml.safe_load((PIPELINES_DIR / name).read_text())["components"])


@pytest.mark.parametrize("name", GRAPHS)
def test_a_graph_file_is_whole_and_names_its_stores_like_any_haystack_store(name):
    text = (PIPELINES_DIR / name).read_text()
    graph = yaml.safe_load(text)
    assert "extends" not in graph and "Generated" not in text and "metadata" not in graph
    stores = [
        params[key]
        for component in graph["components"].values()
        for params in _params(component)
        for key in params
        if key.endswith("document_store")
    ]
    assert stores, name
    assert all(store["type"] == NEEDLE_STORE and set(store["init_parameters"]) == {"role"} for store in stores)
    assert graph["inputs"] and graph["outputs"]


def _params(component: dict) -> list[dict]:
    params = component.get("init_parameters") or {}
    nested = [v for v in params.values() if isinstance(v, dict) and "type" in v and "init_parameters" in v]
    return [params, *(p for n in nested if n["type"] != NEEDLE_STORE for p in _params(n))]


def test_no_generated_sources_are_left():
    assert not (PIPELINES_DIR / "parts").exists()


def test_calibrated_weights_are_written_into_the_graph_file(tmp_path, monkeypatch):
    from needle.evaluation import calibration

    pipelines = tmp_path / "pipelines"
    shutil.copytree(PIPELINES_DIR, pipelines)
    monkeypatch.setattr(calibration, "pipeline_path", lambda name: pipelines / f"{name}.yml")
    before = (pipelines / "vsearch.yml").read_text()
    assert calibration.write_weights("vsearch", {"cosine": 1.5}, -2.25) == pipelines / "vsearch.yml"
    after = (pipelines / "vsearch.yml").read_text()
    scorer = yaml.safe_load(after)["components"]["confidence"]["init_parameters"]
    assert scorer["weights"] == {"cosine": 1.5} and scorer["bias"] == -2.25
    # Only the two lines changed: the comments and the stores' anchors stay.
    assert len(set(before.splitlines()) ^ set(after.splitlines())) == 4
