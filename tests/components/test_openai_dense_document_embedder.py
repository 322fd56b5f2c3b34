"""OpenAIDenseDocumentEmbedder against a real OpenAI-compatible server on 127.0.0.1 (tests/embedding_server.py)."""

import numpy as np
import pytest
from haystack import Document

from haystack_integrations.components.embedders.fastembed import (
    FastembedDocumentEmbedder,
)
from haystack_integrations.components.embedders.needle.openai_dense_document_embedder import OpenAIDenseDocumentEmbedder
from haystack_integrations.components.needle._served import EmbeddingDimensionError, EmbeddingServerError
from needle.core.model_files import LOCAL_DENSE_MODEL, dense_embedder_params
from tests.embedding_server import MODEL, closed_port_url

KEY_ENV = "NEEDLE_TEST_EMBEDDING_KEY"
DOCS = [
    Document(
        content="Set wal_level to logical before creating a replication slot.", meta={"context": "Postgres > Slots"}
    ),
    Document(content="Docker bridge networks give each container its own address.", meta={"context": "Docker"}),
    Document(content="The Raft leader replicates its log to a majority of followers.", meta={"context": "Raft"}),
    Document(content="Sourdough wants a long, cold proof overnight.", meta={"context": "Baking"}),
    Document(content="An HNSW graph trades build time for recall at query time.", meta={"context": "Vectors"}),
]


def embedder(url: str, **kwargs) -> OpenAIDenseDocumentEmbedder:
    defaults = {"api_base_url": url, "model": MODEL, "meta_fields_to_embed": ["context"], "max_retries": 0}
    return OpenAIDenseDocumentEmbedder(**{**defaults, **kwargs})


class TestOpenAIDenseDocumentEmbedder:
    def test_init_defaults(self):
        component = OpenAIDenseDocumentEmbedder()
        assert (component.batch_size, component.timeout, component.max_retries, component.embedding_dim) == (
            32,
            60.0,
            4,
            None,
        )
        assert component.raise_on_failure is True and component.progress_bar is False

    @pytest.mark.parametrize(
        ("param", "value", "message"),
        [
            ("batch_size", 0, "batch_size must be >= 1, got 0"),
            ("timeout", 0, "timeout must be > 0, got 0"),
            ("max_retries", -1, "max_retries must be >= 0, got -1"),
            ("embedding_dim", 0, "embedding_dim must be >= 1, got 0"),
        ],
    )
    def test_bad_parameters_raise(self, param, value, message):
        with pytest.raises(ValueError, match=message):
            OpenAIDenseDocumentEmbedder(**{param: value})

    def test_to_dict_names_the_key_variable_never_its_value(self, monkeypatch):
        from haystack.utils import Secret

        monkeypatch.setenv(KEY_ENV, "sk-do-not-serialise-me")
        component = OpenAIDenseDocumentEmbedder(
            api_key=Secret.from_env_var(KEY_ENV), api_base_url="http://h/v1", model="m", embedding_dim=768
        )
        data = component.to_dict()
        assert data == {
            "type": "haystack_integrations.components.embedders.needle.openai_dense_document_embedder.OpenAIDenseDocumentEmbedder",
            "init_parameters": {
                "api_key": {"type": "env_var", "env_vars": [KEY_ENV], "strict": True},
                "model": "m",
                "api_base_url": "http://h/v1",
                "prefix": "",
                "suffix": "",
                "batch_size": 32,
                "progress_bar": False,
                "meta_fields_to_embed": [],
                "embedding_separator": "\n",
                "timeout": 60.0,
                "max_retries": 4,
                "embedding_dim": 768,
            },
        }
        assert "sk-do-not" not in str(data)
        assert OpenAIDenseDocumentEmbedder.from_dict(data).to_dict() == data

    def test_empty_input_sends_nothing(self):
        assert embedder(closed_port_url() + "/v1").run(documents=[]) == {"documents": []}

    @pytest.mark.integration
    def test_vectors_equal_the_in_process_models(self, served, model_dir):
        ours = embedder(served.openai_url, batch_size=2).run(documents=DOCS)["documents"]
        local = FastembedDocumentEmbedder(
            **dense_embedder_params(LOCAL_DENSE_MODEL, model_dir), meta_fields_to_embed=["context"], progress_bar=False
        )
        local.warm_up()
        theirs = local.run(documents=DOCS)["documents"]
        assert [d.id for d in ours] == [d.id for d in DOCS]
        assert np.allclose([d.embedding for d in ours], [d.embedding for d in theirs], atol=1e-5)
        assert served.stats()["batches"] == [2, 2, 1]

    @pytest.mark.integration
    def test_a_rate_limited_server_is_retried_with_backoff(self, served):
        served.faults(rate_limit=2, fail=1)
        out = embedder(served.openai_url, max_retries=3).run(documents=DOCS[:2])["documents"]
        assert all(len(d.embedding) == 384 for d in out)
        assert served.stats()["requests"] == 4  # 429, 429, 500, then the answer

    @pytest.mark.integration
    def test_retries_give_up_with_one_line(self, served):
        served.faults(rate_limit=10)
        with pytest.raises(
            EmbeddingServerError,
            match=r"^the embedding server at http://127\.0\.0\.1:\d+/v1 refused the request \(HTTP 429, model minilm\)",
        ) as caught:
            embedder(served.openai_url, max_retries=1).run(documents=DOCS[:1])
        assert "\n" not in str(caught.value) and caught.value.transient
        assert served.stats()["requests"] == 2

    @pytest.mark.integration
    def test_a_server_that_refuses_large_batches_gets_smaller_ones(self, served):
        served.faults(max_batch=2)
        out = embedder(served.openai_url, batch_size=4).run(documents=DOCS)["documents"]
        assert len(out) == 5 and all(d.embedding for d in out)
        assert served.stats()["batches"] == [2, 2, 1]

    def test_a_server_that_is_down_is_one_line(self):
        url = closed_port_url() + "/v1"
        with pytest.raises(
            EmbeddingServerError,
            match=f"^no embedding server answers at {url} \\(model minilm\\).*start it or fix embedding.url$",
        ):
            embedder(url).run(documents=DOCS[:1])

    @pytest.mark.integration
    def test_a_slow_server_times_out_in_one_line(self, served):
        served.faults(delay=3)
        with pytest.raises(
            EmbeddingServerError, match=r"did not answer within 0.5 s \(model minilm\); raise embedding.timeout"
        ):
            embedder(served.openai_url, timeout=0.5).run(documents=DOCS[:1])

    @pytest.mark.integration
    def test_vectors_of_another_size_stop_the_run_naming_both(self, served):
        served.faults(dim=256)
        with pytest.raises(
            EmbeddingDimensionError,
            match="returned vectors of 256 values for model minilm, the index holds vectors of 384",
        ):
            embedder(served.openai_url, embedding_dim=384).run(documents=DOCS[:1])

    @pytest.mark.integration
    def test_without_a_dimension_the_first_answer_fixes_it(self, served):
        component = embedder(served.openai_url, batch_size=1)
        served.faults(dim=None)
        component.run(documents=DOCS[:1])
        served.faults(dim=100)
        with pytest.raises(EmbeddingDimensionError, match=r"vectors of 100 values .* vectors of 384"):
            component.run(documents=DOCS[1:2])
        assert component.to_dict()["init_parameters"]["embedding_dim"] is None

    @pytest.mark.integration
    def test_an_unknown_model_is_not_retried(self, served):
        with pytest.raises(EmbeddingServerError, match=r"has no model nomic-embed-text-v9 \(HTTP 404\)") as caught:
            embedder(served.openai_url, model="nomic-embed-text-v9", max_retries=3).run(documents=DOCS[:1])
        assert not caught.value.transient
        assert served.stats()["requests"] == 1

    @pytest.mark.integration
    def test_the_key_never_shows_in_the_error(self, served, monkeypatch):
        from haystack.utils import Secret

        secret = "sk-live-0123456789abcdefSECRET"
        monkeypatch.setenv(KEY_ENV, secret)
        served.faults(key="the-right-key")  # the server's 401 repeats the key it was given
        with pytest.raises(
            EmbeddingServerError, match=f"refused the API key \\(HTTP 401, model minilm\\).*set {KEY_ENV}"
        ) as caught:
            embedder(served.openai_url, api_key=Secret.from_env_var(KEY_ENV)).run(documents=DOCS[:1])
        assert secret not in str(caught.value) and secret[:12] not in str(caught.value)

    @pytest.mark.integration
    def test_the_key_is_sent(self, served, monkeypatch):
        from haystack.utils import Secret

        monkeypatch.setenv(KEY_ENV, "the-right-key")
        served.faults(key="the-right-key")
        out = embedder(served.openai_url, api_key=Secret.from_env_var(KEY_ENV)).run(documents=DOCS[:1])
        assert len(out["documents"][0].embedding) == 384
