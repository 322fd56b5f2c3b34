"""OllamaDenseDocumentEmbedder against a stand-in of Ollama's `/api/embed` on 127.0.0.1 (tests/embedding_server.py)."""

import numpy as np
import pytest
from haystack import Document

from haystack_integrations.components.embedders.needle.ollama_dense_document_embedder import OllamaDenseDocumentEmbedder
from haystack_integrations.components.needle._served import EmbeddingDimensionError, EmbeddingServerError
from tests.embedding_server import MODEL, closed_port_url

DOCS = [Document(content=f"note {i} about replication slots and wal_level {i}") for i in range(5)]


def embedder(url: str, **kwargs) -> OllamaDenseDocumentEmbedder:
    return OllamaDenseDocumentEmbedder(**{"url": url, "model": MODEL, "max_retries": 0, **kwargs})


class TestOllamaDenseDocumentEmbedder:
    def test_init_defaults(self):
        component = OllamaDenseDocumentEmbedder()
        assert (component.model, component.url, component.batch_size, component.max_retries) == (
            "nomic-embed-text",
            "http://127.0.0.1:11434",
            32,
            4,
        )

    def test_bad_parameters_raise(self):
        with pytest.raises(ValueError, match="max_retries must be >= 0, got -2"):
            OllamaDenseDocumentEmbedder(max_retries=-2)

    def test_to_dict(self):
        data = OllamaDenseDocumentEmbedder(model="m", prefix="search_document: ", embedding_dim=768).to_dict()
        assert data == {
            "type": "haystack_integrations.components.embedders.needle.ollama_dense_document_embedder.OllamaDenseDocumentEmbedder",
            "init_parameters": {
                "model": "m",
                "url": "http://127.0.0.1:11434",
                "prefix": "search_document: ",
                "suffix": "",
                "batch_size": 32,
                "progress_bar": False,
                "meta_fields_to_embed": None,
                "embedding_separator": "\n",
                "timeout": 60.0,
                "max_retries": 4,
                "keep_alive": None,
                "embedding_dim": 768,
            },
        }
        assert OllamaDenseDocumentEmbedder.from_dict(data).to_dict() == data

    @pytest.mark.integration
    def test_embeds_in_batches_in_order(self, served):
        out = embedder(served.root, batch_size=2).run(documents=DOCS)["documents"]
        assert [d.id for d in out] == [d.id for d in DOCS] and all(len(d.embedding) == 384 for d in out)
        assert served.stats()["batches"] == [2, 2, 1]
        norms = np.linalg.norm([d.embedding for d in out], axis=1)
        assert np.allclose(norms, 1.0, atol=1e-4)

    @pytest.mark.integration
    def test_a_model_not_pulled_says_how_to_pull_it(self, served):
        with pytest.raises(
            EmbeddingServerError, match=r"does not have the model bge-m3: pull it with `ollama pull bge-m3`"
        ) as caught:
            embedder(served.root, model="bge-m3", max_retries=3).run(documents=DOCS[:1])
        assert "\n" not in str(caught.value) and served.stats()["requests"] == 1

    @pytest.mark.integration
    def test_429_and_5xx_are_retried_with_backoff(self, served):
        served.faults(rate_limit=1, fail=1)
        out = embedder(served.root, max_retries=2).run(documents=DOCS[:1])["documents"]
        assert len(out[0].embedding) == 384 and served.stats()["requests"] == 3

    @pytest.mark.integration
    def test_retries_give_up_with_one_line(self, served):
        served.faults(fail=5)
        with pytest.raises(
            EmbeddingServerError, match=r"refused the request \(HTTP 500, model minilm\): the model runner crashed$"
        ):
            embedder(served.root, max_retries=1).run(documents=DOCS[:1])

    def test_a_server_that_is_down_is_one_line(self):
        url = closed_port_url()
        with pytest.raises(
            EmbeddingServerError, match=f"^no Ollama answers at {url} \\(model minilm\\); start it \\(`ollama serve`\\)"
        ):
            embedder(url, max_retries=1).run(documents=DOCS[:1])

    @pytest.mark.integration
    def test_a_slow_server_times_out_in_one_line(self, served):
        served.faults(delay=3)
        with pytest.raises(EmbeddingServerError, match=r"did not answer within 0.5 s \(model minilm\)"):
            embedder(served.root, timeout=0.5).run(documents=DOCS[:1])

    @pytest.mark.integration
    def test_a_server_that_refuses_large_batches_gets_smaller_ones(self, served):
        served.faults(max_batch=1)
        out = embedder(served.root, batch_size=3).run(documents=DOCS[:3])["documents"]
        assert all(d.embedding for d in out) and served.stats()["batches"] == [1, 1, 1]

    @pytest.mark.integration
    def test_vectors_of_another_size_stop_the_run_naming_both(self, served):
        served.faults(dim=300)
        with pytest.raises(
            EmbeddingDimensionError, match=r"returned vectors of 300 values .* the index holds vectors of 384"
        ):
            embedder(served.root, embedding_dim=384).run(documents=DOCS[:1])
