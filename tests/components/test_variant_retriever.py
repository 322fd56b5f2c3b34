import pytest
from haystack import Document

from haystack_integrations.components.retrievers.needle.variant_retriever import VariantRetriever
from haystack_integrations.document_stores.needle import EdgeDocumentStore
from needle.core.model_files import BM25_MODEL, LOCAL_DENSE_MODEL, dense_embedder_params, sparse_embedder_params


@pytest.fixture
def retriever(tmp_path, model_dir):
    dense = dense_embedder_params(LOCAL_DENSE_MODEL, model_dir)
    sparse = sparse_embedder_params(BM25_MODEL, model_dir)
    store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=384)
    return VariantRetriever(
        document_store=store,
        sparse_model=sparse["model"],
        sparse_model_kwargs=sparse["model_kwargs"],
        sparse_local_files_only=True,
        dense_model=dense["model"],
        dense_model_kwargs=dense["model_kwargs"],
        dense_local_files_only=True,
        bm25_top_k=5,
        vector_top_k=5,
    )


class TestVariantRetriever:
    def test_bad_params_raise(self, retriever):
        with pytest.raises(ValueError, match="top_k"):
            VariantRetriever(document_store=retriever.document_store, bm25_top_k=0)

    def test_round_trip(self, retriever):
        data = retriever.to_dict()
        assert data["type"] == "haystack_integrations.components.retrievers.needle.variant_retriever.VariantRetriever"
        assert VariantRetriever.from_dict(data).to_dict() == data

    def test_no_variants_no_lists_and_no_model_load(self, retriever):
        assert retriever.run(variants=[]) == {"lists": {}}
        assert retriever._dense is None

    def test_unknown_kind_is_refused(self, retriever):
        with pytest.raises(ValueError, match="unknown variant kind"):
            retriever.run(variants=[{"kind": "sql", "text": "x"}])

    @pytest.mark.integration
    def test_routes_lexical_to_bm25_and_semantic_to_vectors(self, retriever, model_dir):
        from haystack_integrations.components.embedders.fastembed import (
            FastembedDocumentEmbedder,
            FastembedSparseDocumentEmbedder,
        )

        dense = dense_embedder_params(LOCAL_DENSE_MODEL, model_dir)
        sparse = sparse_embedder_params(BM25_MODEL, model_dir)
        docs = [
            Document(id="a", content="Feed the sourdough starter twice a day", meta={"source_doc_id": "n:a"}),
            Document(id="b", content="Renew TLS certificates with certbot", meta={"source_doc_id": "n:b"}),
        ]
        docs = FastembedDocumentEmbedder(**dense, progress_bar=False).run(docs)["documents"]
        docs = FastembedSparseDocumentEmbedder(**sparse, progress_bar=False).run(docs)["documents"]
        retriever.document_store.write_documents(docs)
        lists = retriever.run(
            variants=[
                {"kind": "lex", "text": "certbot"},
                {"kind": "vec", "text": "keeping bread yeast alive"},
                {"kind": "hyde", "text": "You feed the starter flour and water every morning."},
                {"kind": "vec", "name": "prf_vec", "text": "x", "embedding": docs[1].embedding},
            ]
        )["lists"]
        assert set(lists) == {"lex_1", "vec_1", "hyde", "prf_vec"}
        assert [d.id for d in lists["lex_1"]] == ["b"]  # BM25: only the document with the word
        assert lists["lex_1"][0].meta["score_kind"] == "bm25" and 0 < lists["lex_1"][0].score < 1
        assert lists["vec_1"][0].id == "a" and lists["vec_1"][0].meta["score_kind"] == "cosine"
        assert lists["hyde"][0].id == "a"
        assert lists["prf_vec"][0].id == "b"  # a given embedding is searched as is

    def test_meta_fields_round_trip(self, retriever):
        retriever.meta_fields = ["path"]
        data = retriever.to_dict()
        assert data["init_parameters"]["meta_fields"] == ["path"]
        assert VariantRetriever.from_dict(data).meta_fields == ["path"]

    @pytest.mark.integration
    def test_a_sub_question_is_searched_through_both_lists(self, retriever, model_dir):
        from haystack_integrations.components.embedders.fastembed import (
            FastembedDocumentEmbedder,
            FastembedSparseDocumentEmbedder,
        )

        dense = dense_embedder_params(LOCAL_DENSE_MODEL, model_dir)
        sparse = sparse_embedder_params(BM25_MODEL, model_dir)
        docs = [
            Document(
                id="a", content="Feed the sourdough starter twice a day", meta={"source_doc_id": "n:a", "path": "a.md"}
            ),
            Document(
                id="b", content="Renew TLS certificates with certbot", meta={"source_doc_id": "n:b", "path": "b.md"}
            ),
        ]
        docs = FastembedDocumentEmbedder(**dense, progress_bar=False).run(docs)["documents"]
        docs = FastembedSparseDocumentEmbedder(**sparse, progress_bar=False).run(docs)["documents"]
        retriever.document_store.write_documents(docs)
        retriever.meta_fields = ["path"]
        lists = retriever.run(variants=[{"kind": "sub", "text": "renew certbot certificates", "name": "sub_1"}])[
            "lists"
        ]
        assert set(lists) == {"sub_1_bm25", "sub_1_vector"}
        assert lists["sub_1_bm25"][0].id == "b" and lists["sub_1_bm25"][0].meta["score_kind"] == "bm25"
        assert lists["sub_1_vector"][0].id == "b" and lists["sub_1_vector"][0].meta["score_kind"] == "cosine"
        assert set(lists["sub_1_vector"][0].meta) == {"path", "raw_score", "score_kind"}
