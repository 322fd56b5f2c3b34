import pytest
from haystack import Document, Pipeline
from haystack.core.errors import DeserializationError
from haystack.document_stores.types import FilterPolicy

from haystack_integrations.components.retrievers.needle.dense_retriever import DenseRetriever
from haystack_integrations.document_stores.needle import EdgeDocumentStore
from tests.document_stores.stub_store import StubStore


class RecordingStore(StubStore):
    """Records `query_dense` calls; any other method fails when called (the retriever needs nothing else)."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def query_dense(self, query_embedding, top_k, filters, return_embedding=False, fields=None):
        call = {"query_embedding": query_embedding, "top_k": top_k, "filters": filters}
        self.calls.append({**call, "return_embedding": return_embedding, "fields": fields})
        return [Document(content="hit", score=0.9)]


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("dense") / "edge"
    store = EdgeDocumentStore(path=str(path), embedding_dim=4, durable_writes=False)
    store.write_documents(
        [
            Document(id="east", content="east", meta={"collection": "a"}, embedding=[1.0, 0.0, 0.0, 0.0]),
            Document(id="north", content="north", meta={"collection": "b"}, embedding=[0.0, 1.0, 0.0, 0.0]),
            Document(id="north-east", content="ne", meta={"collection": "a"}, embedding=[0.7, 0.7, 0.0, 0.0]),
        ]
    )
    yield store
    store.close()


class TestDenseRetriever:
    def test_init_defaults(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"))
        retriever = DenseRetriever(document_store=store)
        assert retriever.document_store is store
        assert retriever.filters is None
        assert retriever.top_k == 10
        assert retriever.filter_policy == FilterPolicy.REPLACE
        assert retriever.return_embedding is False

    def test_init_custom_params(self):
        filters = {"field": "meta.collection", "operator": "==", "value": "a"}
        retriever = DenseRetriever(
            document_store=RecordingStore(), filters=filters, top_k=3, filter_policy="merge", return_embedding=True
        )
        assert (retriever.filters, retriever.top_k, retriever.filter_policy) == (filters, 3, FilterPolicy.MERGE)
        assert retriever.return_embedding is True

    def test_init_rejects_bad_top_k_and_stores_without_query_dense(self):
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            DenseRetriever(document_store=RecordingStore(), top_k=0)
        with pytest.raises(ValueError, match="query_dense"):
            DenseRetriever(document_store=object())

    def test_to_dict(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        retriever = DenseRetriever(document_store=store, filters={"field": "meta.tags", "operator": "==", "value": "x"})
        assert retriever.to_dict() == {
            "type": "haystack_integrations.components.retrievers.needle.dense_retriever.DenseRetriever",
            "init_parameters": {
                "document_store": store.to_dict(),
                "filters": {"field": "meta.tags", "operator": "==", "value": "x"},
                "top_k": 10,
                "filter_policy": "replace",
                "meta_fields": None,
                "score_kind": None,
                "return_embedding": False,
            },
        }

    def test_from_dict(self, tmp_path, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "components,haystack_integrations.document_stores.needle"
        )
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        data = DenseRetriever(document_store=store, top_k=5, filter_policy="merge").to_dict()
        retriever = DenseRetriever.from_dict(data)
        assert isinstance(retriever.document_store, EdgeDocumentStore)
        assert retriever.document_store.to_dict() == store.to_dict()
        assert (retriever.top_k, retriever.filter_policy) == (5, FilterPolicy.MERGE)
        assert data["init_parameters"]["document_store"] == store.to_dict()

    def test_from_dict_without_store_raises(self):
        with pytest.raises(DeserializationError):
            DenseRetriever.from_dict(
                {
                    "type": "haystack_integrations.components.retrievers.needle.dense_retriever.DenseRetriever",
                    "init_parameters": {},
                }
            )

    def test_run_passes_query_top_k_and_filters_to_the_store(self):
        store = RecordingStore()
        retriever = DenseRetriever(document_store=store, top_k=4)
        result = retriever.run(query_embedding=[0.1, 0.2], filters={"field": "id", "operator": "==", "value": "x"})
        assert result == {"documents": [Document(content="hit", score=0.9)]}
        assert store.calls == [
            {
                "query_embedding": [0.1, 0.2],
                "top_k": 4,
                "filters": {"field": "id", "operator": "==", "value": "x"},
                "return_embedding": False,
                "fields": None,
            }
        ]

    def test_no_query_vector_retrieves_nothing_without_asking_the_store(self):
        store = RecordingStore()
        assert DenseRetriever(document_store=store).run(query_embedding=None) == {"documents": []}
        assert store.calls == []

    def test_runtime_top_k_overrides_and_is_validated(self):
        store = RecordingStore()
        retriever = DenseRetriever(document_store=store, top_k=4)
        retriever.run(query_embedding=[0.1], top_k=2)
        assert store.calls[-1]["top_k"] == 2
        with pytest.raises(ValueError, match="top_k must be > 0, got -1"):
            retriever.run(query_embedding=[0.1], top_k=-1)

    def test_merge_policy_combines_init_and_runtime_filters(self):
        store = RecordingStore()
        init = {"field": "meta.collection", "operator": "==", "value": "a"}
        runtime = {"field": "meta.tags", "operator": "==", "value": "x"}
        DenseRetriever(document_store=store, filters=init, filter_policy="merge").run([0.1], filters=runtime)
        DenseRetriever(document_store=store, filters=init).run([0.1], filters=runtime)
        assert store.calls[0]["filters"] == {"operator": "AND", "conditions": [init, runtime]}
        assert store.calls[1]["filters"] == runtime

    def test_return_embedding_asks_the_store_for_vectors(self, edge_store):
        [plain] = DenseRetriever(document_store=edge_store, top_k=1).run(query_embedding=[1.0, 0.0, 0.0, 0.0])[
            "documents"
        ]
        [with_vector] = DenseRetriever(document_store=edge_store, top_k=1, return_embedding=True).run(
            query_embedding=[1.0, 0.0, 0.0, 0.0]
        )["documents"]
        assert plain.embedding is None
        assert with_vector.embedding == pytest.approx([1.0, 0.0, 0.0, 0.0])

    def test_meta_fields_keep_only_the_named_metadata(self, edge_store):
        [full] = DenseRetriever(document_store=edge_store, top_k=1).run(query_embedding=[1.0, 0.0, 0.0, 0.0])[
            "documents"
        ]
        [slim] = DenseRetriever(document_store=edge_store, top_k=1, meta_fields=["path"]).run(
            query_embedding=[1.0, 0.0, 0.0, 0.0]
        )["documents"]
        assert full.meta == {"collection": "a"}
        assert (slim.id, slim.content, slim.meta) == ("east", "east", {})
        assert slim.score == pytest.approx(full.score)
        assert DenseRetriever.from_dict(
            DenseRetriever(document_store=edge_store, meta_fields=["collection"]).to_dict()
        ).meta_fields == ["collection"]

    def test_retrieves_nearest_documents_from_the_embedded_store(self, edge_store):
        documents = DenseRetriever(document_store=edge_store, top_k=2).run(query_embedding=[1.0, 0.1, 0.0, 0.0])[
            "documents"
        ]
        assert [doc.id for doc in documents] == ["east", "north-east"]
        assert documents[0].score > documents[1].score
        in_b = DenseRetriever(document_store=edge_store).run(
            query_embedding=[1.0, 0.0, 0.0, 0.0], filters={"field": "meta.collection", "operator": "==", "value": "b"}
        )["documents"]
        assert [doc.id for doc in in_b] == ["north"]

    def test_score_kind_clamps_in_the_retriever_and_keeps_the_raw_score(self, edge_store):
        query = [-1.0, -0.1, 0.0, 0.0]  # points away from everything: negative cosines
        raw = DenseRetriever(document_store=edge_store, top_k=3).run(query_embedding=query)["documents"]
        retriever = DenseRetriever(document_store=edge_store, top_k=3, score_kind="cosine")
        scored = retriever.run(query_embedding=query)["documents"]
        assert min(doc.score for doc in raw) < 0
        assert [doc.score for doc in scored] == pytest.approx([min(max(doc.score, 0.0), 1.0) for doc in raw])
        assert [doc.meta["raw_score"] for doc in scored] == pytest.approx([doc.score for doc in raw])
        assert DenseRetriever.from_dict(retriever.to_dict()).score_kind == "cosine"

    def test_a_numpy_query_vector_retrieves_what_the_list_does(self, edge_store):
        import numpy as np

        retriever = DenseRetriever(document_store=edge_store, top_k=3)
        as_list = retriever.run(query_embedding=[0.9, 0.3, 0.0, 0.0])["documents"]
        as_array = retriever.run(query_embedding=np.array([0.9, 0.3, 0.0, 0.0], dtype=np.float32))["documents"]
        assert [d.id for d in as_array] == [d.id for d in as_list]
        assert [d.score for d in as_array] == pytest.approx([d.score for d in as_list])

    def test_pipeline_survives_dumps_and_loads(self, edge_store, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "components,haystack_integrations.document_stores.needle"
        )
        pipeline = Pipeline()
        pipeline.add_component("retriever", DenseRetriever(document_store=edge_store, top_k=2))
        loaded = Pipeline.loads(pipeline.dumps())
        query = {"retriever": {"query_embedding": [0.2, 1.0, 0.0, 0.0]}}
        expected = pipeline.run(query)
        edge_store.close()  # the loaded graph has a store object of its own on the folder, which one object holds
        try:
            assert loaded.run(query) == expected
        finally:
            loaded.get_component("retriever").document_store.close()
