"""`python -m needle.runtime.graph_sources`: the generated graphs of pipelines/ match their sources in pipelines/parts/."""

from __future__ import annotations

import shutil

import yaml

from needle.runtime import graph_sources as graphs
from needle.runtime.loader import PIPELINES_DIR, read_graph


def test_every_generated_graph_is_current():
    assert graphs.stale() == [], "run: python -m needle.runtime.graph_sources"
    assert graphs.main(["--check"]) == 0


def test_a_changed_source_makes_its_graph_stale(tmp_path, capsys, monkeypatch):
    parts, out = tmp_path / "parts", tmp_path / "pipelines"
    shutil.copytree(graphs.PARTS_DIR, parts)
    out.mkdir()
    for source in graphs.sources(parts):
        (out / source.name).write_text(graphs.render(source))
    assert graphs.stale(parts, out) == []
    shared = parts / "_search-shared.yml"
    shared.write_text(shared.read_text().replace("max_chars: 500", "max_chars: 300"))
    stale = {p.name for p in graphs.stale(parts, out)}
    # The shared tail is in every search graph, and in those extending query.yml or vsearch.yml.
    assert stale == {
        "search.yml",
        "vsearch.yml",
        "vsearch-sentence.yml",
        "query.yml",
        "query-llm.yml",
        "query-crossencoder.yml",
        "rag.yml",
    }


def test_shared_stages_are_written_once_and_land_in_every_search_graph():
    shared = yaml.safe_load((graphs.PARTS_DIR / "_search-shared.yml").read_text())
    for name in ("search", "vsearch", "query", "query-plain", "search-native"):
        source = yaml.safe_load((graphs.PARTS_DIR / f"{name}.yml").read_text())
        assert source["include"] == ["_search-shared.yml"]
        assert not {"request", "self_query", "match", "recency", "cutoff"} & set(source["components"])
        graph = read_graph(name)
        assert set(shared["components"]) <= set(graph["components"])
        assert all(c in graph["connections"] for c in shared["connections"])


def test_a_graph_maps_a_contract_name_once_and_a_source_can_move_it():
    rag = read_graph("rag")["metadata"]["contract"]["outputs"]
    assert rag["retry.final_documents"] == "documents" and "snippets.documents" not in rag
    assert sorted(rag.values()) == sorted(set(rag.values()))
    assert read_graph("query")["metadata"]["contract"]["outputs"]["snippets.documents"] == "documents"


def test_weights_written_by_calibration_go_to_the_source(tmp_path, monkeypatch):
    from needle.evaluation import calibration

    pipelines = tmp_path / "pipelines"
    shutil.copytree(PIPELINES_DIR, pipelines)
    monkeypatch.setattr(graphs, "PIPELINES_DIR", pipelines)
    monkeypatch.setattr(graphs, "PARTS_DIR", pipelines / "parts")
    monkeypatch.setattr(calibration, "pipeline_path", lambda name: pipelines / f"{name}.yml")
    written = calibration.write_weights("vsearch", {"cosine": 1.5}, -2.25)
    assert written == pipelines / "parts" / "vsearch.yml"
    scorer = yaml.safe_load((pipelines / "vsearch.yml").read_text())["components"]["confidence"]["init_parameters"]
    assert scorer["weights"] == {"cosine": 1.5} and scorer["bias"] == -2.25
    assert graphs.stale(pipelines / "parts", pipelines) == []
