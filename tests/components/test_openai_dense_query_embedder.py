"""OpenAIDenseQueryEmbedder against a real OpenAI-compatible server on 127.0.0.1 (tests/embedding_server.py)."""

import numpy as np
import pytest

from haystack_integrations.components.embedders.needle.fastembed_dense_query_embedder import FastembedDenseQueryEmbedder
from haystack_integrations.components.embedders.needle.openai_dense_query_embedder import OpenAIDenseQueryEmbedder
from haystack_integrations.components.needle._served import EmbeddingDimensionError, EmbeddingServerError
from needle.core.model_files import LOCAL_DENSE_MODEL, dense_embedder_params
from tests.embedding_server import MODEL, closed_port_url


def embedder(url: str, **kwargs) -> OpenAIDenseQueryEmbedder:
    return OpenAIDenseQueryEmbedder(**{"api_base_url": url, "model": MODEL, "max_retries": 0, **kwargs})


class TestOpenAIDenseQueryEmbedder:
    def test_init_defaults(self):
        component = OpenAIDenseQueryEmbedder()
        assert (component.timeout, component.max_retries, component.embedding_dim, component.prefix) == (
            60.0,
            4,
            None,
            "",
        )

    def test_bad_parameters_raise(self):
        with pytest.raises(ValueError, match="timeout must be > 0, got -1"):
            OpenAIDenseQueryEmbedder(timeout=-1)

    def test_round_trip(self):
        data = OpenAIDenseQueryEmbedder(
            api_base_url="http://h/v1", model="m", prefix="search_query: ", embedding_dim=768
        ).to_dict()
        assert (
            data["type"]
            == "haystack_integrations.components.embedders.needle.openai_dense_query_embedder.OpenAIDenseQueryEmbedder"
        )
        assert data["init_parameters"]["prefix"] == "search_query: " and data["init_parameters"]["embedding_dim"] == 768
        assert OpenAIDenseQueryEmbedder.from_dict(data).to_dict() == data

    def test_rejects_non_strings(self):
        with pytest.raises(TypeError, match="expects a string"):
            embedder(closed_port_url() + "/v1").run(text=["a list"])

    @pytest.mark.integration
    def test_same_vector_as_in_process_as_one_float32_array(self, served, model_dir):
        ours = embedder(served.openai_url, prefix="q: ", embedding_dim=384).run(text="postgres replication slot")
        local = FastembedDenseQueryEmbedder(
            **dense_embedder_params(LOCAL_DENSE_MODEL, model_dir), prefix="q: ", progress_bar=False
        )
        theirs = local.run(text="postgres replication slot")["embedding"]
        assert (
            ours["warnings"] == []
            and isinstance(ours["embedding"], np.ndarray)
            and ours["embedding"].dtype == np.float32
        )
        assert np.allclose(ours["embedding"], theirs, atol=1e-5)

    def test_a_server_that_is_down_leaves_the_query_to_keywords_with_a_warning(self):
        url = closed_port_url() + "/v1"
        out = embedder(url).run(text="x")
        assert out["embedding"] is None
        assert out["warnings"] == [
            f"vector search skipped: no embedding server answers at {url} (model minilm): Connection error.; start it or fix embedding.url"
        ]

    @pytest.mark.integration
    def test_a_slow_server_leaves_a_warning(self, served):
        served.faults(delay=3)
        out = embedder(served.openai_url, timeout=0.5).run(text="x")
        assert out["embedding"] is None and "did not answer within 0.5 s" in out["warnings"][0]

    @pytest.mark.integration
    def test_an_unknown_model_is_an_error(self, served):
        with pytest.raises(EmbeddingServerError, match="has no model other"):
            embedder(served.openai_url, model="other").run(text="x")

    @pytest.mark.integration
    def test_vectors_of_another_size_are_an_error(self, served):
        served.faults(dim=128)
        with pytest.raises(
            EmbeddingDimensionError,
            match="returned vectors of 128 values for model minilm, the index holds vectors of 384",
        ):
            embedder(served.openai_url, embedding_dim=384).run(text="x")
