import numpy as np
import pytest
from haystack import Document

from haystack_integrations.components.embedders.fastembed import FastembedDocumentEmbedder
from haystack_integrations.components.embedders.needle.fastembed_dense_document_embedder import (
    ATTENTION_BUDGET,
    FastembedDenseDocumentEmbedder,
    attention_batches,
)
from needle.core.model_files import LOCAL_DENSE_MODEL, dense_embedder_params


def docs() -> list[Document]:
    return [
        Document(
            id="long",
            content="Feed the sourdough starter twice a day with equal weights of flour and water, "
            "keep it at room temperature and discard half before each feeding.",
            meta={"context": "Bread > Starter"},
        ),
        Document(id="short", content="Renew TLS certificates.", meta={"context": "Ops"}),
        Document(id="mid", content="The garden needs water every second evening in July.", meta={}),
    ]


class TestDenseDocumentEmbedder:
    def test_init_keeps_the_parents_parameters(self):
        embedder = FastembedDenseDocumentEmbedder(model="m", batch_size=8, meta_fields_to_embed=["context"])
        assert (embedder.model_name, embedder.batch_size, embedder.meta_fields_to_embed) == ("m", 8, ["context"])

    def test_to_dict_names_this_class_and_from_dict_restores_it(self):
        data = FastembedDenseDocumentEmbedder(model="m", batch_size=8).to_dict()
        assert (
            data["type"]
            == "haystack_integrations.components.embedders.needle.fastembed_dense_document_embedder.FastembedDenseDocumentEmbedder"
        )
        restored = FastembedDenseDocumentEmbedder.from_dict(data)
        assert isinstance(restored, FastembedDenseDocumentEmbedder) and restored.batch_size == 8

    def test_warm_up_loads_nothing_and_an_empty_run_loads_nothing(self):
        embedder = FastembedDenseDocumentEmbedder(model="no-such/model-anywhere", local_files_only=True)
        embedder.warm_up()
        assert embedder.run(documents=[]) == {"documents": []}
        assert embedder.embedding_backend is None

    def test_a_run_with_text_loads_the_model_it_names(self):
        embedder = FastembedDenseDocumentEmbedder(model="no-such/model-anywhere", local_files_only=True)
        with pytest.raises(ValueError, match="no-such/model-anywhere"):
            embedder.run(documents=docs()[:1])

    def test_refuses_what_is_not_a_list_of_documents(self):
        with pytest.raises(TypeError):
            FastembedDenseDocumentEmbedder(model="m").run(documents=["text"])

    @pytest.mark.integration
    def test_vectors_match_the_parents_and_come_back_in_the_order_given(self, model_dir):
        params = dense_embedder_params(LOCAL_DENSE_MODEL, model_dir)
        ours = FastembedDenseDocumentEmbedder(
            **params, batch_size=2, meta_fields_to_embed=["context"], progress_bar=False
        )
        theirs = FastembedDocumentEmbedder(**params, batch_size=1, meta_fields_to_embed=["context"], progress_bar=False)
        out = ours.run(documents=docs())["documents"]
        expected = theirs.run(documents=docs())["documents"]
        assert [d.id for d in out] == ["long", "short", "mid"]
        assert ours.embedding_backend is not None
        assert all(type(d.embedding).__name__ == "SharedVector" for d in out)  # not copied stage to stage
        for got, want in zip(out, expected):
            assert np.dot(got.embedding, want.embedding) == pytest.approx(1.0, abs=1e-3)

    @pytest.mark.integration
    def test_texts_reach_the_model_fewest_tokens_first_not_fewest_characters(self, model_dir):
        params = dense_embedder_params(LOCAL_DENSE_MODEL, model_dir)
        embedder = FastembedDenseDocumentEmbedder(**params, batch_size=1, progress_bar=False)
        given = [
            Document(id="words", content="internationalization internationalization"),  # 41 characters, few tokens
            Document(id="digits", content="7 3 9 1 4 8 2 6 5 0 7 3 9 1"),  # 27 characters, a token per digit
            Document(id="tiny", content="ok"),
        ]
        embedder.load()
        lengths = embedder._token_lengths([d.content for d in given])
        assert lengths[0] < lengths[1] and len(given[0].content) > len(given[1].content)
        seen: list[str] = []
        embed = embedder.embedding_backend.embed

        def recording(texts, **kwargs):
            seen.extend(texts)
            return embed(texts, **kwargs)

        embedder.embedding_backend.embed = recording
        out = embedder.run(documents=given)["documents"]
        assert seen == [given[2].content, given[0].content, given[1].content]
        assert [d.id for d in out] == ["words", "digits", "tiny"]

    def test_batches_hold_fewer_texts_as_they_grow_longer(self):
        # The model's buffers grow with a batch's texts times its longest text's tokens squared: 16 short
        # texts go together, a text of 256 tokens alone (what kept an index run of the demo notes at 351 MB).
        lengths = [10] * 20 + [100] * 5 + [256] * 3
        batches = attention_batches(list(range(len(lengths))), lengths, most=16)
        assert [len(batch) for batch in batches] == [16, 6, 3, 1, 1, 1]
        assert [position for batch in batches for position in batch] == list(range(len(lengths)))
        assert all(len(b) * max(lengths[i] for i in b) ** 2 <= ATTENTION_BUDGET or len(b) == 1 for b in batches)

    def test_without_a_tokenizer_texts_are_counted_in_characters(self):
        embedder = FastembedDenseDocumentEmbedder(model="m")
        assert embedder._token_lengths(["abc", "a"]) == [3, 1]


class TestSharedVector:
    def test_a_deep_copy_of_a_document_keeps_its_vector_and_everything_else_reads_a_list(self):
        import copy
        import json

        from haystack.dataclasses import SparseEmbedding

        from haystack_integrations.components.needle._vectors import SharedVector, shared_sparse

        vector = SharedVector([0.6, 0.8])
        sparse = shared_sparse(SparseEmbedding(indices=[3], values=[1.5]))
        doc = Document(content="x", embedding=vector, sparse_embedding=sparse, meta={"tags": ["a"]})
        copied = copy.deepcopy(doc)
        assert copied.embedding is vector and copied.sparse_embedding.values is sparse.values
        assert copied.meta["tags"] is not doc.meta["tags"]  # the rest is copied as before
        assert json.dumps(vector) == "[0.6, 0.8]" and Document.from_dict(doc.to_dict()).embedding == [0.6, 0.8]
