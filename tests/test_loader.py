import re
import warnings
from pathlib import Path

import pytest
from haystack import Pipeline

from haystack_integrations.document_stores.needle.access import searchable
from needle.core.settings import using_settings
from needle.runtime.contract import GraphContract
from needle.runtime.environment import Environment
from needle.runtime.loader import (
    PIPELINES_DIR,
    PipelineError,
    apply_overrides,
    build_pipeline,
    compose,
    load_pipeline,
    loads_pipeline,
    overrides_apply_somewhere,
    pipeline_path,
    read_graph,
)

PIPELINES = sorted(p.stem for p in PIPELINES_DIR.glob("*.yml"))


class TestGraphFiles:
    def test_no_graph_holds_a_placeholder(self):
        for path in PIPELINES_DIR.glob("*.yml"):
            assert "${" not in path.read_text(), path.name

    @pytest.mark.parametrize("name", PIPELINES)
    def test_every_graph_loads_with_plain_haystack_under_given_settings(self, name, settings, monkeypatch):
        monkeypatch.setenv("OPENAI_API_KEY", "unused")  # Haystack 2.x builds the OpenAI client in __init__
        env = Environment(settings)
        path = PIPELINES_DIR / name
        with using_settings(settings):
            pipeline = Pipeline.loads(path.with_suffix(".yml").read_text())
        engines = {id(searchable(s)) for _, c in pipeline.walk() for s in _stores_of(c)}
        assert engines <= {id(env.store("chunks")), id(env.store("files"))}

    def test_missing_pipeline_is_a_clear_error(self):
        with pytest.raises(PipelineError, match="no pipeline named"):
            pipeline_path("no-such-graph")
        assert pipeline_path("query") == PIPELINES_DIR / "query.yml"

    def test_malformed_pipeline_is_a_clear_error(self, tmp_path: Path, settings):
        bad = tmp_path / "bad.yml"
        bad.write_text("just: text\n")
        with pytest.raises(PipelineError, match="no 'components'"):
            load_pipeline(bad, Environment(settings))


def _stores_of(component) -> list:
    found = [
        getattr(component, k)
        for k in ("document_store", "file_document_store")
        if getattr(component, k, None) is not None
    ]
    ranker = getattr(component, "ranker", None)
    return found + (_stores_of(ranker) if ranker is not None else [])


class TestEnvironment:
    def test_one_engine_per_location_for_every_component_and_graph(self, settings):
        env = Environment(settings)
        query, ingest = load_pipeline("query", env), load_pipeline("ingest", env)
        stores = [searchable(s) for p in (query, ingest) for _, c in p.walk() for s in _stores_of(c)]
        assert len(stores) >= 8
        assert {id(s) for s in stores} == {id(env.store("chunks")), id(env.store("files"))}
        assert env.store("chunks").to_dict()["init_parameters"]["path"] == str(settings.index_dir / "edge")
        assert env.store("files").to_dict()["init_parameters"]["path"] == str(settings.index_dir / "edge_files")

    def test_graphs_loaded_by_stock_haystack_share_the_engine_of_needles_graphs(self, settings):
        env = Environment(settings)
        needles = searchable(load_pipeline("search", env).get_component("bm25_retriever").document_store)
        with using_settings(settings):
            stock = Pipeline.loads((PIPELINES_DIR / "search.yml").read_text())
        assert searchable(stock.get_component("bm25_retriever").document_store) is needles

    def test_a_store_dumps_only_what_it_was_given(self, settings):
        with using_settings(settings):
            pipeline = Pipeline.loads((PIPELINES_DIR / "search.yml").read_text())
        store = pipeline.to_dict()["components"]["bm25_retriever"]["init_parameters"]["document_store"]
        assert store["init_parameters"] == {"role": "chunks"}
        embedder = pipeline.to_dict()["components"]["bm25_embedder"]["init_parameters"]
        assert "model" not in embedder and "model_kwargs" not in embedder  # the settings fill them in again

    def test_an_old_graph_loads_through_needles_loader_with_a_warning_naming_the_new_form(self, settings, tmp_path):
        old = tmp_path / "old.yml"
        old.write_text(
            "components:\n"
            "  fuse: {type: components.weighted_rrf_joiner.WeightedRRFJoiner, init_parameters: {}}\n"
            "  retriever:\n"
            "    type: components.sparse_retriever.SparseRetriever\n"
            "    init_parameters: {document_store: chunks}\n"
            "connections:\n"
            "- {sender: retriever.documents, receiver: fuse.bm25}\n"
            "metadata:\n"
            "  contract:\n"
            "    inputs: {top_k: [retriever.top_k], query: [retriever.query_sparse_embedding]}\n"
            "    outputs: {fuse.documents: documents}\n"
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pipeline = load_pipeline(old, Environment(settings))
        said = " ".join(str(w.message) for w in caught if issubclass(w.category, DeprecationWarning))
        assert "haystack_integrations.components.joiners.needle.weighted_rrf_joiner.WeightedRRFJoiner" in said
        assert "NeedleDocumentStore" in said and "top-level inputs" in said
        assert type(pipeline.get_component("fuse")).__name__ == "WeightedRRFJoiner"
        contract = GraphContract.of(pipeline, "old")
        assert contract.accepts("limit") and contract.outputs["documents"] == ("fuse", "documents")

    def test_an_old_reranker_and_old_store_types_load_with_a_warning_naming_each_new_type(self, settings, tmp_path):
        from needle.runtime.legacy import modernise

        old = tmp_path / "old-rerank.yml"
        old.write_text(
            "components:\n"
            "  rerank:\n"
            "    type: components.cached_reranker.CachedReranker\n"
            "    init_parameters:\n"
            "      ranker:\n"
            "        type: components.hybrid_score_ranker.HybridScoreRanker\n"
            "        init_parameters: {document_store: chunks, file_document_store: files}\n"
            "connections: []\n"
            "inputs: {query: [rerank.query]}\n"
            "outputs: {documents: rerank.documents}\n"
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pipeline = load_pipeline(old, Environment(settings))
        said = " ".join(str(w.message) for w in caught if issubclass(w.category, DeprecationWarning))
        assert "components.cached_reranker.CachedReranker is an older form" in said
        assert "haystack_integrations.components.rankers.needle.candidate_reranker.CandidateReranker" in said
        assert "haystack_integrations.components.rankers.needle.hybrid_score_ranker.HybridScoreRanker" in said
        rerank = pipeline.get_component("rerank")
        assert type(rerank).__name__ == "CandidateReranker" and type(rerank.ranker).__name__ == "HybridScoreRanker"

        store = {"type": "needle.document_stores.qdrant_server.QdrantServerDocumentStore", "init_parameters": {}}
        graph = {"components": {"retriever": {"type": "x.Y", "init_parameters": {"document_store": store}}}}
        with pytest.warns(
            DeprecationWarning, match=re.escape("haystack_integrations.document_stores.needle.qdrant_server")
        ):
            new = modernise(graph, "old.yml")
        assert new["components"]["retriever"]["init_parameters"]["document_store"]["type"] == (
            "haystack_integrations.document_stores.needle.qdrant_server.QdrantServerDocumentStore"
        )

    def test_stock_haystack_refuses_a_store_named_by_role_naming_the_new_form(self):
        graph = read_graph("search")
        graph["components"]["bm25_retriever"]["init_parameters"]["document_store"] = "chunks"
        with pytest.raises(Exception, match=re.escape("NeedleDocumentStore, init_parameters: {role: chunks}")):
            Pipeline.from_dict(graph)

    def test_url_switches_to_a_qdrant_server(self, settings):
        from haystack_integrations.document_stores.needle.needle_document_store import NeedleDocumentStore

        with using_settings(
            settings.model_copy(
                update={"store": settings.store.model_copy(update={"url": "http://qdrant.internal:6333"})}
            )
        ):
            definition = NeedleDocumentStore(role="files").definition()
        assert definition["type"].endswith("QdrantServerDocumentStore")
        params = definition["init_parameters"]
        assert params["url"] == "http://qdrant.internal:6333" and params["index"] == "needle_files"
        assert params["api_key"]["env_vars"] == ["QDRANT_API_KEY"]
        assert params["use_sparse_embeddings"] and params["sparse_idf"]

    def test_models_and_prefixes_come_from_the_settings_and_yaml_values_win(self, settings):
        embedding = settings.embedding.model_copy(update={"query_prefix": "query: "})
        env = Environment(settings.model_copy(update={"embedding": embedding}))
        pipeline = load_pipeline("vsearch", env)
        embedder = pipeline.get_component("dense_embedder").embedder
        assert embedder.model_name == "local/all-MiniLM-L6-v2-int8" and embedder.prefix == "query: "
        assert embedder.local_files_only and embedder.model_kwargs["specific_model_path"]
        assert embedder.threads == 1  # from the YAML
        graph = read_graph("vsearch")
        graph["components"]["dense_embedder"]["init_parameters"]["prefix"] = "mine: "
        assert build_pipeline(graph, env).get_component("dense_embedder").embedder.prefix == "mine: "

    def test_the_llm_server_comes_from_the_settings(self, settings, monkeypatch):
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        llm = settings.llm.model_copy(update={"url": "http://127.0.0.1:9/v1", "model": "tiny", "timeout": 3.0})
        pipeline = load_pipeline("rag", Environment(settings.model_copy(update={"llm": llm})))
        generator = pipeline.get_component("generate")
        assert (generator.api_base_url, generator.model, generator.timeout) == ("http://127.0.0.1:9/v1", "tiny", 3.0)
        assert generator.generation_kwargs["max_tokens"] == 300  # a knob of the graph, not of the environment
        assert "api_base_url" not in generator.to_dict()["init_parameters"]

    def test_derived_environment_shares_the_stores(self, settings):
        env = Environment(settings)
        derived = env.derive(settings.model_copy(update={"llm": settings.llm.model_copy(update={"model": "other"})}))
        assert derived.store("chunks") is env.store("chunks")
        with pytest.raises(ValueError, match="same index"):
            env.derive(settings.model_copy(update={"data_dir": settings.data_dir / "elsewhere"}))


class TestOverlays:
    def test_query_llm_changes_only_its_llm_stages(self):
        base, variant = read_graph("query"), read_graph("query-llm")
        changed = {n for n in variant["components"] if variant["components"][n] != base["components"].get(n)}
        assert changed == {"self_query", "expander", "decompose", "rerank", "blend"}
        assert {"sender": "bm25_retriever.documents", "receiver": "expander.probe_documents"} in variant["connections"]
        assert {"sender": "request.filters", "receiver": "expander.filters"} not in variant["connections"]

    def test_an_overlay_replaces_inputs_and_outputs_by_name(self, tmp_path):
        mine = tmp_path / "mine.yml"
        mine.write_text("extends: query.yml\ncomponents: {}\noutputs: {documents: cutoff.documents, label: null}\n")
        graph = read_graph(mine)
        assert graph["outputs"]["documents"] == "cutoff.documents" and "label" not in graph["outputs"]
        assert graph["inputs"] == read_graph("query")["inputs"]

    def test_rag_runs_every_stage_of_query(self):
        base, rag = read_graph("query"), read_graph("rag")
        assert set(base["components"]) < set(rag["components"])
        assert all(c in rag["connections"] for c in base["connections"])

    def test_compose_adds_replaces_and_removes(self):
        base = {
            "components": {"a": {"type": "x.A", "init_parameters": {}}, "b": {"type": "x.B", "init_parameters": {}}},
            "connections": [{"sender": "a.out", "receiver": "b.in"}],
        }
        out = compose(
            base,
            {"components": {"b": None, "c": {"type": "x.C"}}, "connections": [{"sender": "a.out", "receiver": "c.in"}]},
        )
        assert set(out["components"]) == {"a", "c"}
        assert out["connections"] == [{"sender": "a.out", "receiver": "c.in"}]
        assert base["connections"] == [{"sender": "a.out", "receiver": "b.in"}], "the base is not changed"
        with pytest.raises(PipelineError, match="not a connection of the base"):
            compose(base, {"remove_connections": [{"sender": "a.out", "receiver": "z.in"}]})

    def test_overlays_that_extend_each_other_are_refused(self, tmp_path):
        (tmp_path / "a.yml").write_text("extends: b.yml\ncomponents: {}\n")
        (tmp_path / "b.yml").write_text("extends: a.yml\ncomponents: {}\n")
        with pytest.raises(PipelineError, match="cycle: a -> b -> a"):
            read_graph(tmp_path / "a.yml")

    @pytest.mark.parametrize("base", ["query", "query.yml"])
    def test_an_overlay_outside_pipelines_extends_a_graph_by_name(self, tmp_path, base):
        mine = tmp_path / "mine.yml"
        mine.write_text(f"extends: {base}\ncomponents: {{}}\nset: {{fuse.k: 15}}\n")
        assert read_graph(mine)["components"]["fuse"]["init_parameters"]["k"] == 15


class TestOverrides:
    def test_component_and_parameter_address_the_graph(self):
        graph = apply_overrides(
            read_graph("query"), {"fuse.k": 30, "rerank.ranker.bm25_weight": 0.65, "fuse.weights.bm25": 3.0}
        )
        assert graph["components"]["fuse"]["init_parameters"]["k"] == 30
        assert graph["components"]["rerank"]["init_parameters"]["ranker"]["init_parameters"]["bm25_weight"] == 0.65
        assert graph["components"]["fuse"]["init_parameters"]["weights"] == {"bm25": 3.0, "vector": 2.0}

    @pytest.mark.parametrize(
        "key, message",
        [
            ("nope.k", "has no component 'nope'"),
            ("fuse.nope", "WeightedRRFJoiner has no parameter 'nope'"),
            ("rerank.ranker.nope", "HybridScoreRanker has no parameter 'nope'"),
            ("fuse", "component.parameter"),
        ],
    )
    def test_a_bad_override_names_the_key(self, key, message):
        with pytest.raises(PipelineError, match=message) as raised:
            apply_overrides(read_graph("query"), {key: 1})
        assert key in str(raised.value)

    def test_a_bad_value_names_the_key_and_the_graph(self, settings):
        with pytest.raises(PipelineError, match=r"query\.yml with fuse\.k=-1"):
            load_pipeline("query", Environment(settings), {"fuse.k": -1})

    def test_configuration_overrides_must_apply_somewhere(self):
        overrides_apply_somewhere({"fuse.k": 30, "snippets.max_lines": 5})
        with pytest.raises(PipelineError, match="no graph has"):
            overrides_apply_somewhere({"nowhere.k": 1})


def _modules_outside_allowlist_are_refused() -> bool:
    import inspect

    return "allowed_modules" in inspect.signature(Pipeline.from_dict).parameters


@pytest.mark.skipif(
    not _modules_outside_allowlist_are_refused(), reason="Haystack 2.x has no deserialisation allowlist"
)
def test_needles_loader_widens_no_allowlist():
    # Needle's own classes are in Haystack's default allowlist (haystack_integrations.*); nothing else is let in.
    data = {"components": {"x": {"type": "tests.test_loader.Nothing", "init_parameters": {}}}, "connections": []}
    with pytest.raises(Exception, match="allow"):
        build_pipeline(data)


@pytest.mark.integration
@pytest.mark.parametrize("name", PIPELINES)
def test_every_pipeline_loads_offline_and_round_trips(name, settings, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    env = Environment(settings)
    pipeline = load_pipeline(name, env)
    again = loads_pipeline(pipeline.dumps(), env)
    first, second = _unordered_connections(pipeline.to_dict()), _unordered_connections(again.to_dict())
    assert first["components"] == second["components"]
    assert first["connections"] == second["connections"]
    engines = {id(searchable(s)) for _, c in again.walk() for s in _stores_of(c)}
    assert engines <= {id(env.store("chunks")), id(env.store("files"))}


def _unordered_connections(node):
    """A pipeline dictionary with every connection list sorted, nested graphs included."""
    if isinstance(node, dict):
        return {
            key: sorted(value, key=lambda c: (c["sender"], c["receiver"]))
            if key == "connections"
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
    again = loads_pipeline(pipeline.dumps(), demo_needle.environment)
    request = {"request": {"query": "replication slot lag", "top_k": 5}}
    first = pipeline.run(request)["snippets"]["documents"]
    second = again.run(request)["snippets"]["documents"]
    assert [d.id for d in first] == [d.id for d in second]
    assert [d.score for d in first] == pytest.approx([d.score for d in second])
