"""OllamaDenseQueryEmbedder against a stand-in of Ollama's `/api/embed` on 127.0.0.1 (tests/embedding_server.py)."""

import numpy as np
import pytest

from haystack_integrations.components.embedders.needle.ollama_dense_query_embedder import OllamaDenseQueryEmbedder
from haystack_integrations.components.needle._served import EmbeddingServerError
from tests.embedding_server import MODEL, closed_port_url


class TestOllamaDenseQueryEmbedder:
    def test_round_trip(self):
        data = OllamaDenseQueryEmbedder(model="m", prefix="search_query: ", embedding_dim=768).to_dict()
        assert (
            data["type"]
            == "haystack_integrations.components.embedders.needle.ollama_dense_query_embedder.OllamaDenseQueryEmbedder"
        )
        assert data["init_parameters"]["prefix"] == "search_query: "
        assert OllamaDenseQueryEmbedder.from_dict(data).to_dict() == data

    def test_bad_parameters_raise(self):
        with pytest.raises(ValueError, match="embedding_dim must be >= 1, got 0"):
            OllamaDenseQueryEmbedder(embedding_dim=0)

    @pytest.mark.integration
    def test_the_prefix_changes_the_vector(self, served):
        plain = OllamaDenseQueryEmbedder(url=served.root, model=MODEL).run(text="replication slot")["embedding"]
        prefixed = OllamaDenseQueryEmbedder(url=served.root, model=MODEL, prefix="search_query: ").run(
            text="replication slot"
        )["embedding"]
        assert isinstance(plain, np.ndarray) and plain.dtype == np.float32 and plain.shape == (384,)
        assert not np.allclose(plain, prefixed)

    def test_a_server_that_is_down_leaves_a_warning(self):
        url = closed_port_url()
        out = OllamaDenseQueryEmbedder(url=url, model=MODEL, max_retries=0).run(text="x")
        assert out["embedding"] is None
        assert out["warnings"] == [
            f"vector search skipped: no Ollama answers at {url} (model minilm); start it (`ollama serve`) or fix embedding.url"
        ]

    @pytest.mark.integration
    def test_a_model_not_pulled_is_an_error(self, served):
        with pytest.raises(EmbeddingServerError, match="ollama pull mxbai-embed-large"):
            OllamaDenseQueryEmbedder(url=served.root, model="mxbai-embed-large").run(text="x")
