"""Where the dense model runs (needle.core.embedding_providers): prefixes per model, the graph swap, provenance of older indexes."""

from __future__ import annotations

import re

import pytest

from needle.core import embedding_providers as embedders
from needle.core.settings import ConfigError, load_settings
from needle.lifecycle import provenance as index_info
from needle.runtime.environment import Environment
from needle.runtime.loader import read_graph
from tests.conftest import make_settings


def served_settings(tmp_path, model_dir, provider="openai", model="nomic-embed-text", **env):
    return make_settings(tmp_path, model_dir, NEEDLE_EMBEDDING__PROVIDER=provider, NEEDLE_EMBEDDING__MODEL=model, **env)


class TestPrefixes:
    @pytest.mark.parametrize(
        ("model", "expected"),
        [
            ("nomic-embed-text", ("search_query: ", "search_document: ")),
            ("nomic-embed-text:v1.5", ("search_query: ", "search_document: ")),
            ("intfloat/multilingual-e5-small", ("query: ", "passage: ")),
            ("e5-large-v2", ("query: ", "passage: ")),
            ("mxbai-embed-large", ("Represent this sentence for searching relevant passages: ", "")),
            ("all-minilm", ("", "")),
            ("bge-m3", ("", "")),
            ("some-5e-model", ("", "")),
        ],
    )
    def test_known_models_get_the_prefixes_they_were_trained_with(self, model, expected):
        assert embedders.known_prefixes(model) == expected

    def test_a_served_model_gets_its_own_prefixes(self, tmp_path, model_dir):
        assert embedders.prefixes(served_settings(tmp_path, model_dir)) == ("search_query: ", "search_document: ")

    def test_configured_prefixes_win_even_when_empty(self, tmp_path, model_dir):
        settings = served_settings(
            tmp_path, model_dir, NEEDLE_EMBEDDING__QUERY_PREFIX="", NEEDLE_EMBEDDING__DOCUMENT_PREFIX="doc: "
        )
        assert embedders.prefixes(settings) == ("", "doc: ")

    def test_fastembed_models_keep_the_configured_prefixes(self, tmp_path, model_dir):
        settings = make_settings(tmp_path, model_dir, NEEDLE_EMBEDDING__MODEL="BAAI/bge-small-en-v1.5")
        assert embedders.prefixes(settings) == ("", "")


class TestSettings:
    def test_two_lines_choose_ollama_on_its_usual_port(self, tmp_path, model_dir):
        settings = served_settings(tmp_path, model_dir, provider="ollama")
        assert embedders.is_served(settings) and embedders.server_url(settings) == "http://127.0.0.1:11434"

    def test_an_unknown_provider_is_refused_naming_the_key(self, tmp_path):
        with pytest.raises(ConfigError, match=re.escape("embedding.provider")):
            load_settings(env={"NEEDLE_DATA_DIR": str(tmp_path), "NEEDLE_EMBEDDING__PROVIDER": "huggingface"})

    def test_a_zero_batch_size_is_refused(self, tmp_path):
        with pytest.raises(ConfigError, match=re.escape("embedding.batch_size")):
            load_settings(env={"NEEDLE_DATA_DIR": str(tmp_path), "NEEDLE_EMBEDDING__BATCH_SIZE": "0"})


class TestResolve:
    def test_fastembed_leaves_the_graph_as_it_is(self, tmp_path, model_dir):
        graph = read_graph("ingest")
        assert Environment(make_settings(tmp_path, model_dir)).resolve(graph) is graph

    def test_the_served_document_embedder_replaces_the_graphs_keeping_what_it_embeds(self, tmp_path, model_dir):
        graph = read_graph("ingest")
        resolved = Environment(served_settings(tmp_path, model_dir)).resolve(graph)
        dense = resolved["components"]["dense_embedder"]
        assert dense == {
            "type": "haystack_integrations.components.embedders.needle.openai_dense_document_embedder.OpenAIDenseDocumentEmbedder",
            "init_parameters": {"meta_fields_to_embed": ["context"], "embedding_separator": "\n"},
        }
        assert (
            graph["components"]["dense_embedder"]["type"]
            == "haystack_integrations.components.embedders.needle.dense_document_embedder.DenseDocumentEmbedder"
        )
        assert resolved["components"]["sparse_embedder"] == graph["components"]["sparse_embedder"]

    @pytest.mark.parametrize("name", ["query", "vsearch", "query-plain", "rag"])
    def test_every_query_graphs_dense_embedder_is_swapped(self, tmp_path, model_dir, name):
        resolved = Environment(served_settings(tmp_path, model_dir, provider="ollama")).resolve(read_graph(name))
        types = [c["type"] for c in resolved["components"].values()]
        assert (
            "haystack_integrations.components.embedders.needle.ollama_dense_query_embedder.OllamaDenseQueryEmbedder"
            in types
        )
        assert not any(t.endswith("FastembedDenseQueryEmbedder") for t in types)


class TestProvenance:
    def test_an_index_recorded_before_providers_is_a_fastembed_one(self, tmp_path, model_dir):
        settings = make_settings(tmp_path, model_dir)
        expected = index_info.fingerprint(settings, read_graph("ingest"))
        older = {k: v for k, v in expected.items() if k not in ("embedding_provider", "embedding_url")}
        assert index_info.differences(older, expected) == []
        served = {**expected, "embedding_provider": "ollama"}
        assert index_info.differences(older, served) == ["embedding_provider"]

    def test_the_same_model_on_another_server_is_the_same_index(self, tmp_path, model_dir):
        settings = make_settings(tmp_path, model_dir)
        expected = index_info.fingerprint(settings, read_graph("ingest"))
        assert index_info.differences({**expected, "embedding_url": "http://gpu-box:11434"}, expected) == []
