import re
import time

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError
from haystack.utils import Secret
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore
from qdrant_client.http import models as rest

from haystack_integrations.document_stores.needle.protocol import BestScore
from haystack_integrations.document_stores.needle.qdrant_server import (
    DEFAULT_PAYLOAD_FIELDS_TO_INDEX,
    QdrantServerDocumentStore,
    layout_parameters,
)

UNREACHABLE = "http://127.0.0.1:9"


class RecordingClient:
    """The qdrant-client calls a server store makes for layouts and snapshots, recorded (no server here)."""

    def __init__(self, quantization: dict | None = None, on_disk: bool = False) -> None:
        self.quantization, self.on_disk = quantization, on_disk
        self.updates, self.recovered, self.deleted = [], [], []

    def get_collection(self, name):
        quantization = None
        if self.quantization:
            quantization = rest.ScalarQuantization(scalar=rest.ScalarQuantizationConfig(**self.quantization["scalar"]))
        vectors = {"text-dense": rest.VectorParams(size=384, distance=rest.Distance.COSINE, on_disk=self.on_disk)}
        config = rest.CollectionConfig(
            params=rest.CollectionParams(vectors=vectors),
            hnsw_config=rest.HnswConfig(m=16, ef_construct=100, full_scan_threshold=10000),
            optimizer_config=rest.OptimizersConfig(
                deleted_threshold=0.2, vacuum_min_vector_number=1000, default_segment_number=0, flush_interval_sec=5
            ),
            wal_config=None,
            quantization_config=quantization,
        )
        return type("Info", (), {"config": config})()

    def update_collection(self, collection_name, **changes):
        self.updates.append((collection_name, changes))

    def create_snapshot(self, collection_name, wait):
        return rest.SnapshotDescription(
            name=f"{collection_name}-1.snapshot", creation_time="2026-01-01T00:00:00", size=10
        )

    def list_snapshots(self, collection_name):
        return [
            rest.SnapshotDescription(
                name=f"{collection_name}-{i}.snapshot", creation_time=f"2026-01-0{i + 1}T00:00:00", size=10
            )
            for i in (1, 0)
        ]

    def recover_snapshot(self, collection_name, location, api_key, wait):
        self.recovered.append((collection_name, location, api_key))

    def delete_snapshot(self, collection_name, snapshot_name, wait):
        self.deleted.append((collection_name, snapshot_name))


@pytest.fixture
def memory_store():
    """The store on qdrant-client's in-process mode: the same client calls, without a server."""
    store = QdrantServerDocumentStore(embedding_dim=4, client_kwargs={"location": ":memory:"})
    store.write_documents(
        [
            Document(
                id="a",
                content="alpha",
                meta={"collection": "notes", "path": "a.md", "tags": ["x"]},
                embedding=[1.0, 0.0, 0.0, 0.0],
                sparse_embedding=SparseEmbedding(indices=[1, 2], values=[1.0, 1.0]),
            ),
            Document(
                id="b",
                content="beta",
                meta={"collection": "work", "path": "b.md"},
                embedding=[0.0, 1.0, 0.0, 0.0],
                sparse_embedding=SparseEmbedding(indices=[1], values=[1.0]),
            ),
        ]
    )
    yield store
    store.close()


class TestQdrantServerDocumentStore:
    def test_init_defaults_match_the_embedded_store(self):
        store = QdrantServerDocumentStore(url=UNREACHABLE)
        assert isinstance(store, QdrantDocumentStore)
        assert (store.url, store.index) == (UNREACHABLE, "Document")
        assert (store.embedding_dim, store.similarity) == (384, "cosine")
        assert store.use_sparse_embeddings is True
        assert store.sparse_idf is True
        assert store.payload_fields_to_index == DEFAULT_PAYLOAD_FIELDS_TO_INDEX
        assert store.progress_bar is False
        assert store._client is None

    def test_init_custom_params(self):
        store = QdrantServerDocumentStore(
            url="https://example.cloud.qdrant.io:6333",
            index="notes",
            embedding_dim=768,
            similarity="dot_product",
            use_sparse_embeddings=False,
            timeout=3,
            payload_fields_to_index=[{"field_name": "meta.year", "field_schema": "integer"}],
            client_kwargs={"check_compatibility": False},
        )
        assert (store.index, store.embedding_dim, store.timeout) == ("notes", 768, 3)
        assert store.sparse_idf is False
        assert store.payload_fields_to_index == [{"field_name": "meta.year", "field_schema": "integer"}]

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"embedding_dim": 0}, "embedding_dim must be > 0, got 0"),
            ({"similarity": "manhattan"}, "similarity"),
            ({"write_batch_size": 0}, "write_batch_size"),
            ({"scroll_size": 0}, "scroll_size"),
        ],
    )
    def test_bad_params_raise(self, params, message):
        with pytest.raises(ValueError, match=message):
            QdrantServerDocumentStore(url=UNREACHABLE, **params)

    def test_to_dict(self):
        store = QdrantServerDocumentStore(
            url=UNREACHABLE, index="notes", timeout=1, api_key=Secret.from_env_var("QDRANT_API_KEY", strict=False)
        )
        assert store.to_dict() == {
            "type": "haystack_integrations.document_stores.needle.qdrant_server.QdrantServerDocumentStore",
            "init_parameters": {
                "url": UNREACHABLE,
                "index": "notes",
                "embedding_dim": 384,
                "similarity": "cosine",
                "use_sparse_embeddings": True,
                "sparse_idf": True,
                "api_key": {"type": "env_var", "env_vars": ["QDRANT_API_KEY"], "strict": False},
                "timeout": 1,
                "prefer_grpc": False,
                "payload_fields_to_index": DEFAULT_PAYLOAD_FIELDS_TO_INDEX,
                "hnsw_config": None,
                "on_disk": False,
                "on_disk_payload": None,
                "quantization_config": None,
                "optimizers_config": None,
                "search_params": None,
                "recreate_index": False,
                "write_batch_size": 100,
                "scroll_size": 10_000,
                "progress_bar": False,
                "client_kwargs": {},
            },
        }

    def test_from_dict_round_trips(self):
        store = QdrantServerDocumentStore(
            url=UNREACHABLE, embedding_dim=8, api_key=Secret.from_env_var("QDRANT_API_KEY", strict=False)
        )
        data = store.to_dict()
        restored = QdrantServerDocumentStore.from_dict(data)
        assert isinstance(restored, QdrantServerDocumentStore)
        assert isinstance(restored.api_key, Secret)
        assert restored.to_dict() == data
        assert data["init_parameters"]["api_key"]["env_vars"] == ["QDRANT_API_KEY"]

    @pytest.mark.filterwarnings("ignore:Failed to obtain server version")
    def test_first_call_fails_fast_naming_the_server(self):
        store = QdrantServerDocumentStore(url=UNREACHABLE, timeout=1)
        started = time.monotonic()
        with pytest.raises(ConnectionError, match=re.escape("127.0.0.1:9")):
            store.count_documents()
        assert time.monotonic() - started < 10
        with pytest.raises(ConnectionError, match=re.escape("127.0.0.1:9")):
            store.list_documents_meta(fields=["path"])

    def test_query_text_points_to_the_sparse_bm25_retriever(self):
        store = QdrantServerDocumentStore(url=UNREACHABLE)
        with pytest.raises(NotImplementedError, match=r"EdgeDocumentStore.*SparseRetriever"):
            store.query_text("restic")

    def test_queries_validate_top_k_before_connecting(self):
        store = QdrantServerDocumentStore(url=UNREACHABLE, embedding_dim=4)
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=0)
        with pytest.raises(ValueError, match="top_k must be > 0, got -2"):
            store.query_sparse(SparseEmbedding(indices=[1], values=[1.0]), top_k=-2)
        with pytest.raises(ValueError, match="4 values"):
            store.query_dense([1.0])
        assert store._client is None

    def test_flush_leaves_the_work_to_the_server(self):
        store = QdrantServerDocumentStore(url=UNREACHABLE)
        store.flush()
        assert store._client is None

    def test_layout_parameters_give_the_server_the_same_layout(self):
        params = layout_parameters(
            hnsw_m=32,
            hnsw_ef_construct=200,
            hnsw_ef=128,
            quantization="int8",
            quantization_oversampling=2.0,
            vectors_on_disk=True,
            hnsw_on_disk=True,
            payload_on_disk=True,
            max_segment_size_kb=131072,
        )
        assert params == {
            "hnsw_config": {"m": 32, "ef_construct": 200, "on_disk": True},
            "on_disk": True,
            "on_disk_payload": True,
            "quantization_config": {"scalar": {"type": "int8", "quantile": 0.99, "always_ram": True}},
            "optimizers_config": {"max_segment_size": 131072},
            "search_params": {"hnsw_ef": 128, "quantization": {"rescore": True, "oversampling": 2.0}},
        }
        assert layout_parameters(quantization="binary")["quantization_config"] == {"binary": {"always_ram": True}}
        assert layout_parameters()["search_params"] is None
        store = QdrantServerDocumentStore(url=UNREACHABLE, **params)
        assert QdrantServerDocumentStore.from_dict(store.to_dict()).to_dict() == store.to_dict()

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"hnsw_config": {"m": "many"}}, "hnsw_config"),
            ({"optimizers_config": {"max_segment_size": "big"}}, "optimizers_config"),
            ({"search_params": {"hnsw_ef": "x"}}, "search_params"),
            ({"quantization_config": {"product": {}}}, "quantization_config"),
        ],
    )
    def test_bad_layout_raises(self, params, message):
        with pytest.raises(ValueError, match=message):
            QdrantServerDocumentStore(url=UNREACHABLE, **params)

    def test_optimize_asks_the_server_for_the_layout_it_lacks(self):
        client = RecordingClient(quantization=None, on_disk=False)
        store = QdrantServerDocumentStore(
            url=UNREACHABLE, **layout_parameters(quantization="int8", vectors_on_disk=True)
        )
        store._client = client
        assert store.optimize() is True
        [(name, changes)] = client.updates
        assert name == "Document"
        assert changes["quantization_config"].scalar.type == "int8"
        assert changes["vectors_config"]["text-dense"].on_disk is True
        assert "hnsw_config" not in changes  # the collection already has m 16, ef_construct 100

        laid_out = RecordingClient(
            quantization={"scalar": {"type": "int8", "quantile": 0.99, "always_ram": True}}, on_disk=True
        )
        store._client = laid_out
        assert store.optimize() is False
        assert laid_out.updates == []

    def test_snapshots_go_through_the_servers_api(self):
        client = RecordingClient()
        store = QdrantServerDocumentStore(
            url="http://qdrant.internal:6333", index="notes", api_key=Secret.from_token("k")
        )
        store._client = client
        assert store.snapshot() == {"name": "notes-1.snapshot", "creation_time": "2026-01-01T00:00:00", "size": 10}
        assert [s["name"] for s in store.list_snapshots()] == ["notes-0.snapshot", "notes-1.snapshot"]
        store.restore_snapshot("notes-0.snapshot")
        store.delete_snapshot("notes-0.snapshot")
        assert client.recovered == [
            ("notes", "http://qdrant.internal:6333/collections/notes/snapshots/notes-0.snapshot", "k")
        ]
        assert client.deleted == [("notes", "notes-0.snapshot")]

    def test_verify_reads_every_point_with_its_vectors(self, memory_store):
        assert memory_store.verify() == {"points": 2, "counted": 2, "without_dense": 0, "without_sparse": 0}

    def test_snapshots_on_a_qdrant_without_them_say_so(self, memory_store):
        with pytest.raises(DocumentStoreError, match="takes no snapshots"):
            memory_store.snapshot()

    @pytest.mark.filterwarnings("ignore::UserWarning")
    def test_query_dense_and_sparse_through_the_client(self, memory_store):
        dense = memory_store.query_dense([1.0, 0.1, 0.0, 0.0], top_k=1)
        assert [doc.id for doc in dense] == ["a"]
        assert dense[0].score == pytest.approx(0.995, abs=1e-3)
        assert dense[0].embedding is None
        sparse = memory_store.query_sparse(
            SparseEmbedding(indices=[1, 2], values=[1.0, 1.0]),
            filters={"field": "meta.collection", "operator": "==", "value": "work"},
        )
        assert [doc.id for doc in sparse] == ["b"]
        [slim] = memory_store.query_dense([1.0, 0.1, 0.0, 0.0], top_k=1, fields=["meta.path"])
        assert (slim.id, slim.content, slim.meta) == ("a", "alpha", {"path": "a.md"})

    @pytest.mark.filterwarnings("ignore::UserWarning")
    def test_best_scores_per_value_through_the_client(self, memory_store):
        query = [1.0, 0.1, 0.0, 0.0]
        full = {doc.id: doc.score for doc in memory_store.query_dense(query, top_k=2)}
        scores = memory_store.best_scores(BestScore.per_value("path", ["b.md", "missing.md", "a.md"], dense=query))
        assert scores[1] is None
        assert [scores[0], scores[2]] == pytest.approx([full["b"], full["a"]])
        sparse = memory_store.best_scores(
            BestScore.per_value("meta.path", ["a.md", "b.md"], sparse=SparseEmbedding(indices=[2], values=[1.0]))
        )
        assert sparse[0] > 0 and sparse[1] is None  # b lacks term 2

    def test_sparse_queries_need_sparse_vectors_and_say_so_before_connecting(self):
        store = QdrantServerDocumentStore(url=UNREACHABLE, embedding_dim=4, use_sparse_embeddings=False)
        terms = SparseEmbedding(indices=[1], values=[1.0])
        with pytest.raises(DocumentStoreError, match=r"best_scores\(\) with a sparse query needs a collection"):
            store.best_scores(BestScore.per_term(terms))
        with pytest.raises(DocumentStoreError, match=r"best_scores\(\) with a sparse query needs a collection"):
            store.best_scores(BestScore.per_value("path", ["a.md"], sparse=terms))
        with pytest.raises(DocumentStoreError, match=r"query_sparse\(\) needs a collection with sparse vectors"):
            store.query_sparse(terms)
        assert store._client is None

    @pytest.mark.filterwarnings("ignore::UserWarning")
    def test_best_scores_on_a_collection_without_sparse_vectors(self):
        # qdrant-haystack names the dense vector only beside a sparse one.
        store = QdrantServerDocumentStore(
            embedding_dim=4, use_sparse_embeddings=False, client_kwargs={"location": ":memory:"}
        )
        store.write_documents([Document(id="a", content="a", meta={"path": "a.md"}, embedding=[1.0, 0.0, 0.0, 0.0])])
        scores = store.best_scores(BestScore.per_value("path", ["a.md", "b.md"], dense=[1.0, 0.0, 0.0, 0.0]))
        assert scores[0] == pytest.approx(1.0) and scores[1] is None
        store.close()

    @pytest.mark.filterwarnings("ignore::UserWarning")
    def test_best_scores_per_term_through_the_client(self, memory_store):
        query = SparseEmbedding(indices=[1, 2, 9], values=[1.0, 1.0, 1.0])
        one_by_one = [
            next((doc.score for doc in memory_store.query_sparse(SparseEmbedding([i], [1.0]), top_k=1)), 0.0)
            for i in query.indices
        ]
        found = [score or 0.0 for score in memory_store.best_scores(BestScore.per_term(query))]
        assert found == pytest.approx(one_by_one)
        assert one_by_one[0] > 0 and one_by_one[2] == 0.0

    @pytest.mark.filterwarnings("ignore::UserWarning")
    def test_list_documents_meta_through_the_client(self, memory_store):
        rows = sorted(memory_store.list_documents_meta(fields=["meta.path", "tags"]), key=lambda row: row["id"])
        assert rows == [{"id": "a", "meta": {"path": "a.md", "tags": ["x"]}}, {"id": "b", "meta": {"path": "b.md"}}]
        assert memory_store.list_documents_meta(
            filters={"field": "meta.collection", "operator": "==", "value": "work"}
        ) == [{"id": "b", "meta": {"collection": "work", "path": "b.md"}}]
