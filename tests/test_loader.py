from pathlib import Path

import pytest
import yaml

from needle.loader import (
    PIPELINES_DIR,
    PipelineError,
    build_pipeline,
    load_pipeline,
    loads_pipeline,
    pipeline_path,
    placeholder_values,
    resolve_placeholders,
    store_definition,
)

PIPELINES = sorted(p.stem for p in PIPELINES_DIR.glob("*.yml"))


class TestPlaceholders:
    def test_whole_value_keeps_its_type(self):
        tree = {"a": "${store}", "b": ["${n}"], "c": "x-${n}-y"}
        assert resolve_placeholders(tree, {"store": {"type": "T"}, "n": 3}) == {
            "a": {"type": "T"}, "b": [3], "c": "x-3-y"
        }

    def test_unknown_placeholder_names_itself(self):
        with pytest.raises(PipelineError, match=r"\$\{nope\}"):
            resolve_placeholders({"a": "${nope}"}, {"yes": 1})

    def test_every_placeholder_in_the_graphs_is_known(self, settings):
        values = placeholder_values(settings)
        for path in PIPELINES_DIR.glob("*.yml"):
            resolve_placeholders(yaml.safe_load(path.read_text()), values)

    def test_missing_pipeline_is_a_clear_error(self):
        with pytest.raises(PipelineError, match="no pipeline named"):
            pipeline_path("no-such-graph")
        assert pipeline_path("query") == PIPELINES_DIR / "query.yml"

    def test_malformed_pipeline_is_a_clear_error(self, tmp_path: Path, settings):
        bad = tmp_path / "bad.yml"
        bad.write_text("just: text\n")
        with pytest.raises(PipelineError, match="no 'components'"):
            load_pipeline(bad, settings)


class TestStoreDefinition:
    def test_embedded_engine_by_default(self, settings):
        definition = store_definition(settings)
        assert definition["type"] == "needle.document_stores.edge.document_store.EdgeDocumentStore"
        assert definition["init_parameters"]["path"] == str(settings.index_dir / "edge")
        assert definition["init_parameters"]["embedding_dim"] == 384

    def test_url_switches_to_a_qdrant_server(self, settings):
        settings.store.url = "http://qdrant.internal:6333"
        definition = store_definition(settings)
        assert definition["type"] == "needle.document_stores.qdrant_server.QdrantServerDocumentStore"
        params = definition["init_parameters"]
        assert params["url"] == "http://qdrant.internal:6333"
        assert params["api_key"]["env_vars"] == ["QDRANT_API_KEY"]
        assert params["use_sparse_embeddings"] and params["sparse_idf"]


def _modules_outside_allowlist_are_refused() -> bool:
    import inspect

    from haystack import Pipeline

    return "allowed_modules" in inspect.signature(Pipeline.from_dict).parameters


@pytest.mark.skipif(not _modules_outside_allowlist_are_refused(), reason="Haystack 2.x has no deserialisation allowlist")
def test_classes_outside_the_allowlist_are_refused():
    data = {"components": {"x": {"type": "tests.test_loader.Nothing", "init_parameters": {}}}, "connections": []}
    with pytest.raises(Exception, match="allow"):
        build_pipeline(data)


@pytest.mark.integration
@pytest.mark.parametrize("name", PIPELINES)
def test_every_pipeline_loads_offline_and_round_trips(name, settings):
    pipeline = load_pipeline(name, settings)
    again = loads_pipeline(pipeline.dumps())
    first, second = _unordered_connections(pipeline.to_dict()), _unordered_connections(again.to_dict())
    assert first["components"] == second["components"]
    assert first["connections"] == second["connections"]


def _unordered_connections(node):
    """A pipeline dictionary with every connection list sorted, nested graphs (a SuperComponent's) included."""
    if isinstance(node, dict):
        return {
            key: sorted(value, key=lambda c: (c["sender"], c["receiver"])) if key == "connections"
            else _unordered_connections(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_unordered_connections(value) for value in node]
    return node


@pytest.mark.integration
@pytest.mark.parametrize("mode", ["search", "vsearch", "query"])
def test_round_tripped_query_pipeline_gives_same_results(mode, demo_needle):
    pipeline = demo_needle.pipeline(mode)
    again = demo_needle.share_stores(loads_pipeline(pipeline.dumps()))  # one store object per folder
    request = {"request": {"query": "replication slot lag", "top_k": 5}}
    first = pipeline.run(request)["snippets"]["documents"]
    second = again.run(request)["snippets"]["documents"]
    assert [d.id for d in first] == [d.id for d in second]
    assert [d.score for d in first] == pytest.approx([d.score for d in second])


class TestGraphPlaceholders:
    def test_a_graph_is_named_whole_with_its_placeholders_filled(self, settings):
        values = placeholder_values(settings)
        query = values["pipelines.query"]
        assert query == resolve_placeholders(yaml.safe_load((PIPELINES_DIR / "query.yml").read_text()), values)
        assert values["pipelines.query"] is not query, "each use gets its own copy"

    def test_unknown_graph_is_an_unknown_placeholder(self, settings):
        with pytest.raises(PipelineError, match=r"\$\{pipelines\.no-such-graph\}"):
            resolve_placeholders({"a": "${pipelines.no-such-graph}"}, placeholder_values(settings))

    def test_graphs_that_name_each_other_are_refused(self, settings, tmp_path, monkeypatch):
        from needle import loader

        monkeypatch.setattr(loader, "PIPELINES_DIR", tmp_path)
        (tmp_path / "a.yml").write_text("components:\n  x: ${pipelines.b}\n")
        (tmp_path / "b.yml").write_text("components:\n  y: ${pipelines.a}\n")
        with pytest.raises(PipelineError, match="cycle: a -> b -> a"):
            placeholder_values(settings)["pipelines.a"]
