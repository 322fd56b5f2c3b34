"""Where the dense model runs (needle.core.embedding_providers): prefixes per model, the graph swap, provenance of older indexes."""

from __future__ import annotations

import json
import re

import pytest

from needle.core import embedding_providers as embedders
from needle.core.settings import ConfigError, load_settings
from needle.lifecycle import provenance as index_info
from needle.runtime.environment import Environment
from needle.runtime.loader import load_pipeline, read_graph
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


def recorded(settings, dim=768):
    """Provenance of an index built by the served model (so no server is asked for its dimension)."""
    settings.provenance_file.parent.mkdir(parents=True, exist_ok=True)
    fingerprint = {
        "embedding_provider": settings.embedding.provider,
        "embedding_model": settings.embedding.model,
        "embedding_dim": dim,
    }
    settings.provenance_file.write_text(json.dumps({"fingerprint": fingerprint}))
    return settings


class TestProviderFollowing:
    def test_fastembed_builds_the_in_process_embedders(self, tmp_path, model_dir):
        pipeline = load_pipeline("ingest", Environment(make_settings(tmp_path, model_dir)))
        assert type(pipeline.get_component("dense_embedder").embedder).__name__ == "FastembedDenseDocumentEmbedder"

    def test_the_served_document_embedder_keeps_what_the_graph_embeds(self, tmp_path, model_dir):
        settings = recorded(served_settings(tmp_path, model_dir))
        component = load_pipeline("ingest", Environment(settings)).get_component("dense_embedder")
        served = component.embedder
        assert type(served).__name__ == "OpenAIDenseDocumentEmbedder"
        assert (served.meta_fields_to_embed, served.embedding_separator) == (["context"], "\n")
        assert (served.model, served.prefix, served.embedding_dim) == ("nomic-embed-text", "search_document: ", 768)
        # The graph's file names the component that follows the settings, and so does its dump.
        assert component.to_dict()["type"].endswith("dense_document_embedder.DenseDocumentEmbedder")
        assert "model" not in component.to_dict()["init_parameters"]

    @pytest.mark.parametrize("name", ["query", "vsearch", "query-plain", "rag"])
    def test_every_query_graphs_dense_embedder_follows_the_provider(self, tmp_path, model_dir, monkeypatch, name):
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        settings = recorded(served_settings(tmp_path, model_dir, provider="ollama"))
        pipeline = load_pipeline(name, Environment(settings))
        embedder = pipeline.get_component("dense_embedder").embedder
        assert type(embedder).__name__ == "OllamaDenseQueryEmbedder" and embedder.prefix == "search_query: "
        if "variants" in pipeline.graph.nodes:  # expansion variants are embedded by the same server
            assert type(pipeline.get_component("variants").dense_embedder).__name__ == "OllamaDenseQueryEmbedder"


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
