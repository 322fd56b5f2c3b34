import pytest
from haystack import Document, Pipeline
from haystack.core.errors import DeserializationError
from haystack.document_stores.types import FilterPolicy

from haystack_integrations.components.retrievers.needle.keyword_retriever import KeywordRetriever
from haystack_integrations.document_stores.needle import EdgeDocumentStore, QdrantServerDocumentStore
from tests.document_stores.stub_store import StubStore


class RecordingStore(StubStore):
    """Records `query_text` calls; any other method fails when called (the retriever needs nothing else)."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def query_text(self, query, top_k, filters, fields=None):
        self.calls.append({"query": query, "top_k": top_k, "filters": filters})
        return [Document(content="hit", score=3.0)]


@pytest.fixture(scope="module")
def edge_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("keyword") / "edge"
    store = EdgeDocumentStore(path=str(path), embedding_dim=4, durable_writes=False)
    store.write_documents(
        [
            Document(id="restic", content="A nightly restic backup of the laptop", meta={"collection": "howto"}),
            Document(id="backups", content="Backups of backups: restic and pg_dump", meta={"collection": "notes"}),
            Document(id="vim", content="Vim macros record keystrokes", meta={"collection": "howto"}),
        ]
    )
    yield store
    store.close()


class TestKeywordRetriever:
    def test_init_defaults(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"))
        retriever = KeywordRetriever(document_store=store)
        assert retriever.document_store is store
        assert (retriever.filters, retriever.top_k, retriever.filter_policy) == (None, 10, FilterPolicy.REPLACE)

    def test_init_custom_params(self):
        filters = {"field": "meta.collection", "operator": "==", "value": "howto"}
        retriever = KeywordRetriever(document_store=RecordingStore(), filters=filters, top_k=3, filter_policy="merge")
        assert (retriever.filters, retriever.top_k, retriever.filter_policy) == (filters, 3, FilterPolicy.MERGE)

    def test_init_rejects_bad_top_k_and_stores_without_query_text(self):
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            KeywordRetriever(document_store=RecordingStore(), top_k=0)
        with pytest.raises(ValueError, match="query_text"):
            KeywordRetriever(document_store=object())

    def test_to_dict(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        assert KeywordRetriever(document_store=store, filter_policy="merge").to_dict() == {
            "type": "haystack_integrations.components.retrievers.needle.keyword_retriever.KeywordRetriever",
            "init_parameters": {
                "document_store": store.to_dict(),
                "filters": None,
                "top_k": 10,
                "filter_policy": "merge",
                "meta_fields": None,
                "score_kind": None,
            },
        }

    def test_from_dict(self, tmp_path, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "components,haystack_integrations.document_stores.needle"
        )
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        retriever = KeywordRetriever.from_dict(KeywordRetriever(document_store=store, top_k=5).to_dict())
        assert isinstance(retriever.document_store, EdgeDocumentStore)
        assert retriever.document_store.to_dict() == store.to_dict()
        assert retriever.top_k == 5

    def test_from_dict_without_store_raises(self):
        with pytest.raises(DeserializationError):
            KeywordRetriever.from_dict(
                {
                    "type": "haystack_integrations.components.retrievers.needle.keyword_retriever.KeywordRetriever",
                    "init_parameters": {},
                }
            )

    def test_run_passes_query_top_k_and_filters_to_the_store(self):
        store = RecordingStore()
        filters = {"field": "meta.collection", "operator": "==", "value": "notes"}
        result = KeywordRetriever(document_store=store, top_k=4).run(query="restic", filters=filters)
        assert result == {"documents": [Document(content="hit", score=3.0)]}
        assert store.calls == [{"query": "restic", "top_k": 4, "filters": filters}]

    def test_runtime_top_k_overrides_and_is_validated(self):
        store = RecordingStore()
        retriever = KeywordRetriever(document_store=store, top_k=4)
        retriever.run(query="restic", top_k=9)
        assert store.calls[-1]["top_k"] == 9
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            retriever.run(query="restic", top_k=0)

    def test_ranks_documents_by_native_bm25(self, edge_store):
        documents = KeywordRetriever(document_store=edge_store).run(query="backup")["documents"]
        assert [doc.id for doc in documents] == ["backups", "restic"]
        assert documents[0].score > documents[1].score > 0
        howto = KeywordRetriever(document_store=edge_store).run(
            query="backup", filters={"field": "meta.collection", "operator": "==", "value": "howto"}
        )["documents"]
        assert [doc.id for doc in howto] == ["restic"]

    def test_server_store_points_to_the_sparse_retriever(self):
        retriever = KeywordRetriever(document_store=QdrantServerDocumentStore(url="http://127.0.0.1:9"))
        with pytest.raises(NotImplementedError, match="SparseRetriever"):
            retriever.run(query="restic")

    def test_pipeline_survives_dumps_and_loads(self, edge_store, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "components,haystack_integrations.document_stores.needle"
        )
        pipeline = Pipeline()
        pipeline.add_component("retriever", KeywordRetriever(document_store=edge_store, top_k=2))
        loaded = Pipeline.loads(pipeline.dumps())
        query = {"retriever": {"query": "restic laptop"}}
        expected = pipeline.run(query)
        edge_store.close()  # the loaded graph has a store object of its own on the folder, which one object holds
        try:
            assert loaded.run(query) == expected
        finally:
            loaded.get_component("retriever").document_store.close()
