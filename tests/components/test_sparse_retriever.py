import pytest
from haystack import Document, Pipeline
from haystack.core.errors import DeserializationError
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.types import FilterPolicy

from haystack_integrations.components.retrievers.needle.sparse_retriever import SparseRetriever
from haystack_integrations.document_stores.needle import EdgeDocumentStore
from tests.document_stores.stub_store import StubStore


class RecordingStore(StubStore):
    """Records `query_sparse` calls; any other method fails when called (the retriever needs nothing else)."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def query_sparse(self, query_sparse_embedding, top_k, filters, fields=None):
        self.calls.append({"query_sparse_embedding": query_sparse_embedding, "top_k": top_k, "filters": filters})
        return [Document(content="hit", score=2.5)]


QUERY = SparseEmbedding(indices=[1, 2], values=[1.0, 1.0])


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("sparse") / "edge"
    store = EdgeDocumentStore(path=str(path), embedding_dim=4, durable_writes=False)
    terms = {"both": ([1, 2], "a"), "one": ([1], "b"), "none": ([9], "a")}
    store.write_documents(
        [
            Document(
                id=doc_id,
                content=doc_id,
                meta={"collection": collection},
                sparse_embedding=SparseEmbedding(indices=indices, values=[1.0] * len(indices)),
            )
            for doc_id, (indices, collection) in terms.items()
        ]
    )
    yield store
    store.close()


class TestSparseRetriever:
    def test_init_defaults(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"))
        retriever = SparseRetriever(document_store=store)
        assert retriever.document_store is store
        assert (retriever.filters, retriever.top_k, retriever.filter_policy) == (None, 10, FilterPolicy.REPLACE)

    def test_init_custom_params(self):
        filters = {"field": "meta.collection", "operator": "==", "value": "a"}
        retriever = SparseRetriever(document_store=RecordingStore(), filters=filters, top_k=3, filter_policy="merge")
        assert (retriever.filters, retriever.top_k, retriever.filter_policy) == (filters, 3, FilterPolicy.MERGE)

    def test_init_rejects_bad_top_k_and_stores_without_query_sparse(self):
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            SparseRetriever(document_store=RecordingStore(), top_k=0)
        with pytest.raises(ValueError, match="query_sparse"):
            SparseRetriever(document_store=object())

    def test_to_dict(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        assert SparseRetriever(document_store=store, top_k=7).to_dict() == {
            "type": "haystack_integrations.components.retrievers.needle.sparse_retriever.SparseRetriever",
            "init_parameters": {
                "document_store": store.to_dict(),
                "filters": None,
                "top_k": 7,
                "filter_policy": "replace",
                "meta_fields": None,
                "score_kind": None,
            },
        }

    def test_from_dict(self, tmp_path, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "components,haystack_integrations.document_stores.needle"
        )
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        retriever = SparseRetriever.from_dict(SparseRetriever(document_store=store, top_k=5).to_dict())
        assert isinstance(retriever.document_store, EdgeDocumentStore)
        assert retriever.document_store.to_dict() == store.to_dict()
        assert retriever.top_k == 5

    def test_from_dict_without_store_raises(self):
        with pytest.raises(DeserializationError):
            SparseRetriever.from_dict(
                {
                    "type": "haystack_integrations.components.retrievers.needle.sparse_retriever.SparseRetriever",
                    "init_parameters": {},
                }
            )

    def test_run_passes_query_top_k_and_filters_to_the_store(self):
        store = RecordingStore()
        filters = {"field": "meta.collection", "operator": "in", "value": ["a"]}
        result = SparseRetriever(document_store=store, top_k=4).run(query_sparse_embedding=QUERY, filters=filters)
        assert result == {"documents": [Document(content="hit", score=2.5)]}
        assert store.calls == [{"query_sparse_embedding": QUERY, "top_k": 4, "filters": filters}]

    def test_runtime_top_k_overrides_and_is_validated(self):
        store = RecordingStore()
        retriever = SparseRetriever(document_store=store, top_k=4)
        retriever.run(query_sparse_embedding=QUERY, top_k=1)
        assert store.calls[-1]["top_k"] == 1
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            retriever.run(query_sparse_embedding=QUERY, top_k=0)

    def test_retrieves_best_scoring_documents_from_the_embedded_store(self, edge_store):
        documents = SparseRetriever(document_store=edge_store).run(query_sparse_embedding=QUERY)["documents"]
        assert [doc.id for doc in documents] == ["both", "one"]
        assert documents[0].score > documents[1].score > 0
        only_b = SparseRetriever(document_store=edge_store).run(
            query_sparse_embedding=QUERY, filters={"field": "meta.collection", "operator": "==", "value": "b"}
        )["documents"]
        assert [doc.id for doc in only_b] == ["one"]

    def test_score_kind_normalises_in_the_retriever_and_keeps_the_raw_score(self, edge_store):
        raw = SparseRetriever(document_store=edge_store).run(query_sparse_embedding=QUERY)["documents"]
        retriever = SparseRetriever(document_store=edge_store, score_kind="bm25")
        scored = retriever.run(query_sparse_embedding=QUERY)["documents"]
        assert [doc.id for doc in scored] == [doc.id for doc in raw]
        assert [doc.score for doc in scored] == pytest.approx([doc.score / (1 + doc.score) for doc in raw])
        assert [(doc.meta["raw_score"], doc.meta["score_kind"]) for doc in scored] == [
            (doc.score, "bm25") for doc in raw
        ]
        assert SparseRetriever.from_dict(retriever.to_dict()).score_kind == "bm25"
        with pytest.raises(ValueError, match="score kind must be one of"):
            SparseRetriever(document_store=edge_store, score_kind="dot")

    def test_pipeline_survives_dumps_and_loads(self, edge_store, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "components,haystack_integrations.document_stores.needle"
        )
        pipeline = Pipeline()
        pipeline.add_component("retriever", SparseRetriever(document_store=edge_store, top_k=1))
        loaded = Pipeline.loads(pipeline.dumps())
        query = {"retriever": {"query_sparse_embedding": QUERY}}
        expected = pipeline.run(query)
        edge_store.close()  # the loaded graph has a store object of its own on the folder, which one object holds
        try:
            assert loaded.run(query) == expected
        finally:
            loaded.get_component("retriever").document_store.close()
