import math
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy
from haystack.testing.document_store import DocumentStoreBaseExtendedTests
from haystack_integrations.document_stores.qdrant.converters import (
    convert_haystack_documents_to_qdrant_points,
    convert_id,
)

from haystack_integrations.document_stores.needle.edge import (
    DEFAULT_PAYLOAD_INDEXES,
    LOCK_FILE_NAME,
    EdgeDocumentStore,
    StoreLockedError,
)
from haystack_integrations.document_stores.needle.edge.shard_schema import ALWAYS_INDEXED
from haystack_integrations.document_stores.needle.protocol import BestScore, IndexDamagedError

REPO = Path(__file__).resolve().parents[2]


def unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory):
    """One 4-dimensional shard for the behaviour tests (opening a shard costs disk syncs), indexed from the start."""
    document_store = EdgeDocumentStore(
        path=str(tmp_path_factory.mktemp("behaviour") / "edge"),
        embedding_dim=4,
        durable_writes=False,
        payload_indexes_from=0,
    )
    yield document_store
    document_store.close()


@pytest.fixture
def store(shared_store):
    """The shared shard, emptied."""
    shared_store.delete_all_documents()
    return shared_store


class TestEdgeDocumentStoreConformance(DocumentStoreBaseExtendedTests):
    @pytest.fixture(scope="class")
    def shared_store(self, tmp_path_factory):
        # One shard for the suite, emptied before each test, and no flush after each write: opening a shard
        # and flushing cost disk syncs, which dominate on a busy disk. Durability has tests of its own.
        path = tmp_path_factory.mktemp("conformance") / "edge"
        document_store = EdgeDocumentStore(path=str(path), embedding_dim=768, durable_writes=False)
        yield document_store
        document_store.close()

    @pytest.fixture
    def document_store(self, shared_store):
        shared_store.delete_all_documents()
        return shared_store

    def assert_documents_are_equal(self, received, expected):
        # The engine lists documents in point-id order, not insertion order, and stores cosine vectors
        # normalised to unit length as float32: compare by id, and vectors by direction.
        assert sorted(doc.id for doc in received) == sorted(doc.id for doc in expected)
        expected_by_id = {doc.id: doc for doc in expected}
        for doc in received:
            wanted = expected_by_id[doc.id]
            assert (doc.content, doc.meta, doc.blob, doc.sparse_embedding) == (
                wanted.content,
                wanted.meta,
                wanted.blob,
                wanted.sparse_embedding,
            )
            if wanted.embedding is None:
                assert doc.embedding is None
            else:
                assert doc.embedding == pytest.approx(unit(wanted.embedding), abs=1e-6)

    def test_write_documents(self, document_store):
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):
            document_store.write_documents([doc])
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


class TestEdgeDocumentStore:
    def test_init_defaults(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"))
        assert store.embedding_dim == 384
        assert store.similarity == "cosine"
        assert store.use_sparse_embeddings is True
        assert store.sparse_idf is True
        assert store.text_index is True
        assert store.text_language == "english"
        assert store.payload_indexes == DEFAULT_PAYLOAD_INDEXES
        assert DEFAULT_PAYLOAD_INDEXES == {
            "meta.collection": "keyword",
            "meta.path": "keyword",
            "meta.source_doc_id": "keyword",
            "meta.content_checksum": "keyword",
            "meta.tags": "keyword",
            "meta.folders": "keyword",
            "meta.fields": "keyword",
            "meta.identifiers": "keyword",
            "meta.language": "keyword",
            "meta.date": "datetime",
        }
        assert (store.hnsw_m, store.hnsw_ef_construct, store.indexing_threshold_kb) == (16, 100, None)
        assert store.durable_writes is True
        assert not (tmp_path / "edge").exists()

    def test_init_custom_params(self, tmp_path):
        store = EdgeDocumentStore(
            path=str(tmp_path / "edge"),
            embedding_dim=8,
            similarity="dot_product",
            use_sparse_embeddings=False,
            sparse_idf=False,
            text_index=False,
            text_language="German",
            bm25_k=0.9,
            bm25_b=0.4,
            payload_indexes={"meta.year": "integer"},
            hnsw_m=32,
            hnsw_ef_construct=200,
            indexing_threshold_kb=1000,
            durable_writes=False,
            scroll_size=50,
        )
        assert store.similarity == "dot_product"
        assert store.payload_indexes == {"meta.year": "integer"}
        assert (store.bm25_k, store.bm25_b, store.scroll_size) == (0.9, 0.4, 50)

    @pytest.mark.parametrize(
        ("params", "message"),
        [
            ({"path": ""}, "path"),
            ({"embedding_dim": 0}, "embedding_dim must be > 0, got 0"),
            ({"similarity": "manhattan"}, "similarity"),
            ({"text_language": "klingon"}, "text_language"),
            ({"bm25_k": -1.0}, "bm25_k"),
            ({"bm25_b": 1.5}, "bm25_b"),
            ({"payload_indexes": {"meta.tags": "tag"}}, "payload_indexes"),
            ({"hnsw_m": -1}, "hnsw_m"),
            ({"hnsw_ef_construct": 2}, "hnsw_ef_construct"),
            ({"indexing_threshold_kb": 0}, "indexing_threshold_kb"),
            ({"scroll_size": 0}, "scroll_size"),
            ({"hnsw_ef": 0}, "hnsw_ef must be > 0, got 0"),
            ({"quantization": "int4"}, "quantization must be one of none, int8, binary"),
            ({"quantization_oversampling": 0.5}, "quantization_oversampling must be >= 1"),
            ({"max_segment_size_kb": 0}, "max_segment_size_kb must be > 0, got 0"),
        ],
    )
    def test_bad_params_raise(self, tmp_path, params, message):
        with pytest.raises(ValueError, match=message):
            EdgeDocumentStore(**{"path": str(tmp_path / "edge"), **params})

    def test_to_dict(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=8, payload_indexes={"meta.a": "keyword"})
        assert store.to_dict() == {
            "type": "haystack_integrations.document_stores.needle.edge.document_store.EdgeDocumentStore",
            "init_parameters": {
                "path": str(tmp_path / "edge"),
                "embedding_dim": 8,
                "similarity": "cosine",
                "use_sparse_embeddings": True,
                "sparse_idf": True,
                "text_index": True,
                "text_language": "english",
                "bm25_k": 1.2,
                "bm25_b": 0.75,
                "payload_indexes": {"meta.a": "keyword"},
                "hnsw_m": 16,
                "hnsw_ef_construct": 100,
                "indexing_threshold_kb": None,
                "durable_writes": True,
                "scroll_size": 1000,
                "hnsw_ef": None,
                "hnsw_on_disk": False,
                "quantization": "none",
                "quantization_rescore": True,
                "quantization_oversampling": None,
                "vectors_on_disk": False,
                "sparse_on_disk": False,
                "payload_on_disk": True,
                "max_segment_size_kb": None,
                "cached_payloads": 16384,
                "payload_indexes_from": 1000,
            },
        }

    def test_from_dict_round_trips(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), similarity="l2", text_index=False)
        restored = EdgeDocumentStore.from_dict(store.to_dict())
        assert isinstance(restored, EdgeDocumentStore)
        assert restored.to_dict() == store.to_dict()

    def test_payload_ids_and_vector_names_match_qdrant_haystack(self, store):
        doc = Document(
            content="restic backs up the laptop",
            meta={"path": "howto/restic.md", "tags": ["backup"]},
            embedding=[0.1, 0.2, 0.3, 0.4],
            sparse_embedding=SparseEmbedding(indices=[3, 7], values=[0.5, 1.5]),
        )
        store.write_documents([doc])
        [expected] = convert_haystack_documents_to_qdrant_points([doc], use_sparse_embeddings=True)
        [record] = store._shard().shard.retrieve([uuid.UUID(convert_id(doc.id))], True, True)
        assert record.id == uuid.UUID(expected.id)
        assert record.payload == expected.payload
        assert set(record.vector) == set(expected.vector) == {"text-dense", "text-sparse"}

    def test_creates_payload_indexes_and_bm25_text_index(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4, payload_indexes_from=0)
        schema = store._shard().shard.info().payload_schema
        assert set(schema) == {*DEFAULT_PAYLOAD_INDEXES, "content"}
        assert schema["content"].params.scoring is not None
        # No HNSW graph per frequent word: those made building 100k chunks' graph take minutes.
        assert schema["content"].params.enable_hnsw is False

    def test_rebuilds_a_text_index_that_builds_word_graphs(self, tmp_path):
        import qdrant_edge as qe

        path = str(tmp_path / "edge")
        store = EdgeDocumentStore(path=path, embedding_dim=4, use_sparse_embeddings=False, payload_indexes_from=0)
        store.write_documents([Document(content="restic backs up the laptop", embedding=[0.1, 0.2, 0.3, 0.4])])
        shard = store._shard().shard
        old = qe.TextIndexParams(tokenizer=qe.TokenizerType.Word, lowercase=True, scoring=True)
        shard.update(qe.UpdateOperation.delete_field_index("content"))
        shard.update(qe.UpdateOperation.create_field_index("content", old))
        assert shard.info().payload_schema["content"].params.enable_hnsw is not False
        store.close()

        reopened = EdgeDocumentStore(path=path, embedding_dim=4, use_sparse_embeddings=False, payload_indexes_from=0)
        assert reopened._shard().shard.info().payload_schema["content"].params.enable_hnsw is False
        [hit] = reopened.query_text("laptops", top_k=1)  # stemmed again, like the new index
        assert hit.content == "restic backs up the laptop"
        reopened.close()

    def test_nothing_touches_disk_until_first_use(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"))
        store.flush()
        store.close()
        assert not (tmp_path / "edge").exists()

    def test_building_a_store_object_opens_and_locks_nothing(self, tmp_path):
        # Loading a graph builds throwaway store objects before the one shared object is swapped in.
        path = str(tmp_path / "edge")
        held = EdgeDocumentStore(path=path, embedding_dim=4)
        held.write_documents([Document(id="kept", content="kept")])
        open_files = set(os.listdir("/proc/self/fd"))
        throwaways = [EdgeDocumentStore.from_dict(held.to_dict()) for _ in range(3)]
        throwaways.append(EdgeDocumentStore(path=str(tmp_path / "elsewhere"), embedding_dim=4))
        assert set(os.listdir("/proc/self/fd")) == open_files
        assert not (tmp_path / "elsewhere").exists()
        assert held.count_documents() == 1
        held.close()
        assert throwaways[0].count_documents() == 1  # no lock was taken by building it
        throwaways[0].close()

    def test_write_documents_does_not_mutate_documents(self, store):
        doc = Document(content="alpha", meta={"path": "a.md"}, embedding=[1.0, 2.0, 3.0, 4.0])
        before = doc.to_dict()
        store.write_documents([doc])
        [found] = store.query_dense([1.0, 2.0, 3.0, 4.0], top_k=1)
        assert doc.to_dict() == before
        assert found is not doc and doc.score is None

    def test_write_documents_rejects_wrong_embedding_size(self, store):
        with pytest.raises(ValueError, match="expects 4"):
            store.write_documents([Document(content="x", embedding=[1.0, 2.0])])
        assert store.count_documents() == 0

    def test_write_policies_report_what_they_wrote(self, store):
        first, second = Document(id="1", content="first"), Document(id="2", content="second")
        assert store.write_documents([first]) == 1
        assert store.write_documents([first, second], policy=DuplicatePolicy.SKIP) == 1
        assert store.write_documents([Document(id="1", content="new")], policy=DuplicatePolicy.OVERWRITE) == 1
        assert store.get_documents_by_id(["1"])[0].content == "new"
        with pytest.raises(DuplicateDocumentError):
            store.write_documents([first], policy=DuplicatePolicy.FAIL)
        with pytest.raises(DuplicateDocumentError, match="twice"):
            store.write_documents([Document(id="3", content="a"), Document(id="3", content="b")])
        assert store.count_documents() == 2

    def test_query_dense_returns_similarity_scores_without_vectors(self, store):
        store.write_documents(
            [
                Document(id="x", content="x", embedding=[1.0, 0.0, 0.0, 0.0]),
                Document(id="y", content="y", embedding=[0.0, 1.0, 0.0, 0.0]),
                Document(id="none", content="no embedding"),
            ]
        )
        docs = store.query_dense([1.0, 0.1, 0.0, 0.0], top_k=5)
        assert [doc.id for doc in docs] == ["x", "y"]
        assert docs[0].score == pytest.approx(1 / math.sqrt(1.01), abs=1e-5)
        assert all(doc.embedding is None for doc in docs)
        [with_vector] = store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=1, return_embedding=True)
        assert with_vector.embedding == pytest.approx([1.0, 0.0, 0.0, 0.0])

    def test_query_dense_applies_filters(self, store):
        store.write_documents(
            [
                Document(id="a", content="a", meta={"collection": "work"}, embedding=[1.0, 0.0, 0.0, 0.0]),
                Document(id="b", content="b", meta={"collection": "home"}, embedding=[0.9, 0.1, 0.0, 0.0]),
            ]
        )
        filters = {"field": "meta.collection", "operator": "==", "value": "home"}
        assert [doc.id for doc in store.query_dense([1.0, 0.0, 0.0, 0.0], filters=filters)] == ["b"]

    def test_query_dense_rejects_wrong_size_and_bad_top_k(self, store):
        with pytest.raises(ValueError, match="4 values"):
            store.query_dense([1.0, 0.0])
        with pytest.raises(ValueError, match="top_k must be > 0, got 0"):
            store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=0)

    def test_query_sparse_weights_rare_terms_by_idf(self, store):
        common, rare = 1, 2
        store.write_documents(
            [
                Document(id="both", content="both", sparse_embedding=SparseEmbedding([common, rare], [1.0, 1.0])),
                Document(id="common1", content="c1", sparse_embedding=SparseEmbedding([common], [1.0])),
                Document(id="common2", content="c2", sparse_embedding=SparseEmbedding([common], [1.0])),
            ]
        )
        docs = store.query_sparse(SparseEmbedding([common, rare], [1.0, 1.0]), top_k=3)
        assert docs[0].id == "both"
        assert docs[0].score > docs[1].score > 0
        assert all(doc.sparse_embedding is None for doc in docs)

    def test_best_scores_per_value_give_each_values_best_score(self, store):
        store.write_documents(
            [
                Document(
                    id="a",
                    content="alpha",
                    meta={"source_doc_id": "n:a.md", "path": "a.md"},
                    embedding=[1.0, 0.0, 0.0, 0.0],
                    sparse_embedding=SparseEmbedding([1, 2], [1.0, 1.0]),
                ),
                Document(
                    id="b",
                    content="beta",
                    meta={"source_doc_id": "n:b.md", "path": "b.md"},
                    embedding=[0.6, 0.8, 0.0, 0.0],
                    sparse_embedding=SparseEmbedding([1], [1.0]),
                ),
                Document(
                    id="c",
                    content="gamma",
                    meta={"source_doc_id": "n:c.md"},
                    embedding=[0.0, 0.0, 1.0, 0.0],
                    sparse_embedding=SparseEmbedding([3], [1.0]),
                ),
            ]
        )
        query = [1.0, 0.2, 0.0, 0.0]
        full = {doc.id: doc.score for doc in store.query_dense(query, top_k=3)}
        files = ["n:b.md", "n:a.md", "n:none.md", "n:c.md"]
        dense = store.best_scores(BestScore.per_value("source_doc_id", files, dense=query))
        assert dense[2] is None
        assert [dense[0], dense[1], dense[3]] == pytest.approx([full["b"], full["a"], full["c"]])
        # Sparse: c shares no term with the query, so nothing holding n:c.md is scored.
        terms = SparseEmbedding([1, 2], [1.0, 1.0])
        full_sparse = {doc.id: doc.score for doc in store.query_sparse(terms, top_k=3)}
        sparse = store.best_scores(BestScore.per_value("meta.source_doc_id", files, sparse=terms))
        assert sparse[:3] == pytest.approx([full_sparse["b"], full_sparse["a"], None]) and sparse[3] is None
        assert sparse[1] > sparse[0] > 0
        assert store.best_scores(BestScore.per_value("source_doc_id", [], dense=query)) == []

    def test_best_term_scores_are_each_terms_best_single_term_score(self, store):
        store.write_documents(
            [
                Document(
                    id="a",
                    content="a",
                    embedding=[1.0, 0.0, 0.0, 0.0],
                    sparse_embedding=SparseEmbedding([1, 2], [2.0, 1.0]),
                ),
                Document(
                    id="b", content="b", embedding=[0.0, 1.0, 0.0, 0.0], sparse_embedding=SparseEmbedding([1], [0.5])
                ),
                Document(
                    id="c", content="c", embedding=[0.0, 0.0, 1.0, 0.0], sparse_embedding=SparseEmbedding([3], [1.0])
                ),
            ]
        )
        query = SparseEmbedding([1, 3, 9], [1.0, 2.0, 1.0])  # term 9 is in no document
        one_by_one = [
            next((doc.score for doc in store.query_sparse(SparseEmbedding([i], [v]), top_k=1)), 0.0)
            for i, v in zip(query.indices, query.values)
        ]
        scores = [s or 0.0 for s in store.best_scores(BestScore.per_term(query))]
        assert scores == pytest.approx(one_by_one) and scores[2] == 0.0 and scores[0] > 0 and scores[1] > 0
        assert store.best_scores(BestScore.per_term(SparseEmbedding([], []))) == []

    def test_one_batch_of_mixed_requests_answers_as_the_separate_calls(self, store):
        store.write_documents(
            [
                Document(
                    id="a",
                    content="a",
                    meta={"source_doc_id": "n:a.md"},
                    embedding=[1.0, 0.0, 0.0, 0.0],
                    sparse_embedding=SparseEmbedding([1, 2], [2.0, 1.0]),
                ),
                Document(
                    id="b",
                    content="b",
                    meta={"source_doc_id": "n:b.md"},
                    embedding=[0.6, 0.8, 0.0, 0.0],
                    sparse_embedding=SparseEmbedding([1], [0.5]),
                ),
            ]
        )
        files, dense, terms = (
            ["n:b.md", "n:none.md", "n:a.md"],
            [1.0, 0.2, 0.0, 0.0],
            SparseEmbedding([1, 9], [1.0, 1.0]),
        )
        lexical = BestScore.per_value("source_doc_id", files, sparse=terms)
        per_term = BestScore.per_term(terms)
        semantic = BestScore.per_value("source_doc_id", files, dense=dense)
        together = store.best_scores([*lexical, *per_term, *semantic])
        assert together == [*store.best_scores(lexical), *store.best_scores(per_term), *store.best_scores(semantic)]
        assert together[3] > 0 and together[4] is None
        assert store.best_scores([]) == []

    def test_query_sparse_needs_sparse_vectors(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4, use_sparse_embeddings=False)
        with pytest.raises(DocumentStoreError, match="use_sparse_embeddings"):
            store.query_sparse(SparseEmbedding([1], [1.0]))

    def test_query_text_ranks_by_bm25_with_stemming_and_stopwords(self, store):
        store.write_documents(
            [
                Document(id="fox", content="The quick brown fox jumps over the lazy dog", meta={"collection": "a"}),
                Document(id="foxes", content="Foxes, foxes everywhere: a fox den", meta={"collection": "b"}),
                Document(id="cat", content="A cat sleeps on the sofa", meta={"collection": "a"}),
            ]
        )
        docs = store.query_text("FOX", top_k=10)
        assert [doc.id for doc in docs] == ["foxes", "fox"]
        assert docs[0].score > docs[1].score > 0
        assert store.query_text("the and of", top_k=10) == []
        assert store.query_text("   ", top_k=10) == []
        only_a = store.query_text("fox", filters={"field": "meta.collection", "operator": "==", "value": "a"})
        assert [doc.id for doc in only_a] == ["fox"]

    def test_query_text_needs_text_index(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4, text_index=False)
        with pytest.raises(DocumentStoreError, match="text_index"):
            store.query_text("fox")

    def test_list_documents_meta_returns_only_requested_fields(self, store):
        store.write_documents(
            [
                Document(id="1", content="one", meta={"collection": "notes", "path": "a.md"}, embedding=[1.0] * 4),
                Document(id="2", content="two", meta={"collection": "work", "source_doc_id": "work:b.md"}),
            ]
        )
        rows = sorted(store.list_documents_meta(fields=["path", "meta.collection"]), key=lambda row: row["id"])
        assert rows == [
            {"id": "1", "meta": {"path": "a.md", "collection": "notes"}},
            {"id": "2", "meta": {"collection": "work"}},
        ]
        filtered = store.list_documents_meta(filters={"field": "meta.collection", "operator": "==", "value": "work"})
        assert filtered == [{"id": "2", "meta": {"collection": "work", "source_doc_id": "work:b.md"}}]

    def test_count_values_counts_each_value_of_an_indexed_field_and_of_any_other(self, store, monkeypatch):
        store.write_documents(
            [
                Document(id=str(i), content=str(i), meta={"collection": c, "source_doc_id": f"{c}:{f}", "n": i % 2})
                for i, (c, f) in enumerate([("notes", "a.md"), ("notes", "a.md"), ("notes", "b.md"), ("work", "c.md")])
            ]
            + [Document(id="bare", content="no collection")]
        )
        listed = []
        original = store.list_documents_meta
        monkeypatch.setattr(store, "list_documents_meta", lambda *a, **k: listed.append(k) or original(*a, **k))
        assert store.count_values("collection") == {"notes": 3, "work": 1}
        in_notes = {"field": "meta.collection", "operator": "==", "value": "notes"}
        assert store.count_values("meta.source_doc_id", in_notes) == {"notes:a.md": 2, "notes:b.md": 1}
        assert listed == []  # indexed keyword fields are counted by the engine's facets
        assert store.count_values("n") == {"0": 2, "1": 2}
        assert listed  # any other field over the listed metadata
        assert store.count_values("collection", {"field": "meta.collection", "operator": "==", "value": "none"}) == {}

    def test_list_documents_meta_pages_through_every_document(self, store):
        store.write_documents([Document(id=str(i), content=str(i), meta={"n": i}) for i in range(30)])
        store.close()  # one store object holds a folder at a time; `store` reopens on its next use
        small_pages = EdgeDocumentStore(path=store.path, embedding_dim=4, durable_writes=False, scroll_size=7)
        rows = small_pages.list_documents_meta(fields=["n"])
        small_pages.close()
        assert sorted(int(row["id"]) for row in rows) == list(range(30))
        assert all(row["meta"] == {"n": int(row["id"])} for row in rows)

    def test_update_by_filter_keeps_content_and_vectors(self, store):
        doc = Document(id="a", content="alpha", meta={"path": "a.md"}, embedding=[1.0, 0.0, 0.0, 0.0])
        store.write_documents([doc])
        assert store.update_by_filter({"field": "meta.path", "operator": "==", "value": "a.md"}, {"tags": ["x"]}) == 1
        [updated] = store.get_documents_by_id(["a"])
        assert updated.meta == {"path": "a.md", "tags": ["x"]}
        assert updated.content == "alpha"
        assert updated.embedding == pytest.approx([1.0, 0.0, 0.0, 0.0])

    def test_searches_read_each_payload_once_and_see_every_write(self, store):
        def found(**kwargs):
            sparse = store.query_sparse(SparseEmbedding([1], [1.0]), top_k=5, **kwargs)
            dense = store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=5, **kwargs)
            text = store.query_text("alpha", top_k=5, **kwargs)
            return [(d.id, d.content, d.meta, d.score) for d in sparse + dense + text]

        store.write_documents(
            [
                Document(
                    id=name,
                    content=f"alpha {name}",
                    meta={"path": f"{name}.md", "n": n},
                    embedding=unit([1.0, n, 0.0, 0.0]),
                    sparse_embedding=SparseEmbedding([1], [1.0 + n]),
                )
                for n, name in enumerate(["a", "b", "c"])
            ]
        )
        cache = store._shard().payloads
        cold = found()
        assert len(cache) == 3  # read once, kept
        assert found() == cold  # from the cache: the same documents and scores
        assert found(fields=["path"]) == [(i, c, {"path": m["path"]}, s) for i, c, m, s in cold]
        cache.limit = 0
        assert found() == cold  # every payload read again
        cache.limit = 16384

        found()[0][2]["path"] = "changed by a stage"  # a stage changing what it was given
        assert found() == cold
        store.update_by_filter({"field": "meta.path", "operator": "==", "value": "a.md"}, {"tags": ["x"]})
        assert {d.id: d.meta.get("tags") for d in store.query_text("alpha", top_k=5)} == {
            "a": ["x"],
            "b": None,
            "c": None,
        }
        store.write_documents(
            [
                Document(
                    id="b",
                    content="alpha beta",
                    meta={"path": "b.md"},
                    embedding=unit([1.0, 1.0, 0.0, 0.0]),
                    sparse_embedding=SparseEmbedding([1], [2.0]),
                )
            ],
            policy=DuplicatePolicy.OVERWRITE,
        )
        assert {d.id: d.content for d in store.query_text("alpha", top_k=5)}["b"] == "alpha beta"
        store.delete_documents(["c"])
        assert sorted(d.id for d in store.query_sparse(SparseEmbedding([1], [1.0]), top_k=5)) == ["a", "b"]
        store.delete_all_documents()
        assert store.query_text("alpha", top_k=5) == [] and len(cache) == 0

    def test_changes_tell_every_write_and_nothing_else(self, store):
        seen = [store.changes()]
        store.write_documents(
            [Document(id="a", content="alpha", meta={"path": "a.md"}, embedding=[1.0, 0.0, 0.0, 0.0])]
        )
        seen.append(store.changes())
        store.query_dense([1.0, 0.0, 0.0, 0.0])
        store.count_documents()
        assert store.changes() == seen[-1]
        store.update_by_filter({"field": "meta.path", "operator": "==", "value": "a.md"}, {"tags": ["x"]})
        seen.append(store.changes())
        store.delete_documents(["a"])
        seen.append(store.changes())
        store.delete_all_documents(recreate_index=True)
        seen.append(store.changes())
        assert len(set(seen)) == len(seen)

    def test_a_search_that_began_before_a_write_keeps_nothing(self, store):
        store.write_documents([Document(id="a", content="alpha", embedding=[1.0, 0.0, 0.0, 0.0])])
        cache = store._shard().payloads
        began = cache.generation
        [old] = store.get_documents_by_id(["a"])
        store.write_documents(
            [Document(id="a", content="alpha two", embedding=[1.0, 0.0, 0.0, 0.0])], policy=DuplicatePolicy.OVERWRITE
        )
        cache.keep(None, began, {"stale": old})
        assert len(cache) == 0
        assert [d.content for d in store.query_dense([1.0, 0.0, 0.0, 0.0])] == ["alpha two"]

    def test_reading_ahead_keeps_what_searches_would_read_and_stops_once_closed(self, store):
        store.write_documents(
            [
                Document(
                    id=str(n),
                    content=f"alpha {n}",
                    meta={"path": f"{n}.md", "n": n},
                    embedding=unit([1.0, n, 0.0, 0.0]),
                )
                for n in range(20)
            ]
        )
        cache = store._shard().payloads
        assert len(store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=1, fields=["path"])) == 1
        assert len(cache) == 1
        assert store.read_ahead(batch=3, pause=0) == 40  # the documents, then the vectors
        assert len(cache) == 20 and cache.asked() == [("id", "content", "blob", "meta.path")]
        from haystack_integrations.document_stores.needle.edge.converters import point_id

        assert len(cache.found(cache.asked()[0], [point_id(str(n)) for n in range(20)])) == 20  # none left to read
        ahead = [
            (d.id, d.content, d.meta, d.score) for d in store.query_dense([1.0, 0.5, 0, 0], top_k=20, fields=["path"])
        ]
        assert len(ahead) == 20
        cache.limit = 0
        assert [
            (d.id, d.content, d.meta, d.score) for d in store.query_dense([1.0, 0.5, 0, 0], top_k=20, fields=["path"])
        ] == ahead
        cache.limit = store.cached_payloads
        store.close()
        assert store.read_ahead() == 0 and store._opened is None  # nothing reopened

    def test_the_payload_cache_keeps_at_most_its_limit(self, store):
        store._shard().payloads.limit = 4
        try:
            store.write_documents(
                [Document(id=str(n), content=f"alpha {n}", embedding=unit([1.0, n, 0.0, 0.0])) for n in range(10)]
            )
            assert len(store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=10)) == 10
            assert len(store._shard().payloads) <= 4
        finally:
            store._shard().payloads.limit = store.cached_payloads

    def test_optimize_builds_the_hnsw_graph(self, tmp_path):
        store = EdgeDocumentStore(
            path=str(tmp_path / "edge"), embedding_dim=16, indexing_threshold_kb=1, durable_writes=False
        )
        store.write_documents(
            [Document(id=str(i), content=f"doc {i}", embedding=[float(i + 1)] + [float(i % 3)] * 15) for i in range(40)]
        )
        assert store._shard().shard.info().indexed_vectors_count == 0
        assert store.optimize() is True
        assert store._shard().shard.info().indexed_vectors_count >= 40
        assert len(store.query_dense([1.0] * 16, top_k=5)) == 5
        store.close()

    def test_a_second_store_object_on_the_folder_waits_for_the_first_to_close(self, tmp_path):
        path = str(tmp_path / "edge")
        writer = EdgeDocumentStore(path=path, embedding_dim=4, durable_writes=False)
        reader = EdgeDocumentStore(path=path, embedding_dim=4, durable_writes=False)
        writer.write_documents([Document(content="shared")])
        with pytest.raises(StoreLockedError, match="already open in this process") as raised:
            reader.count_documents()
        assert raised.value.path == os.path.realpath(path)
        assert raised.value.pid == str(os.getpid())
        assert writer.count_documents() == 1  # the refusal leaves the holder alone
        writer.close()
        assert reader.count_documents() == 1
        with pytest.raises(StoreLockedError, match="same store object"):
            writer.count_documents()
        reader.close()
        assert writer.count_documents() == 1  # closed stores reopen on next use
        writer.close()

    def test_a_folder_built_with_other_vector_settings_is_refused(self, tmp_path):
        path = str(tmp_path / "edge")
        first = EdgeDocumentStore(path=path, embedding_dim=4)
        first.count_documents()
        first.close()
        with pytest.raises(ValueError, match="another configuration"):
            EdgeDocumentStore(path=path, embedding_dim=8).count_documents()
        assert first.count_documents() == 0  # a failed open leaves the folder unlocked
        first.close()

    def test_documents_persist_across_close_and_reopen(self, tmp_path):
        path = str(tmp_path / "edge")
        store = EdgeDocumentStore(path=path, embedding_dim=4, durable_writes=False)
        store.write_documents(
            [Document(id=str(i), content=f"note {i}", embedding=[1.0, i, 0.0, 0.0]) for i in range(5)]
        )
        store.close()
        reopened = EdgeDocumentStore(path=path, embedding_dim=4)
        assert reopened.count_documents() == 5
        assert [doc.id for doc in reopened.query_text("note 3", top_k=1)] == ["3"]
        reopened.close()

    def test_verify_reads_every_point_with_its_vectors(self, store):
        store.write_documents(
            [
                Document(
                    id=str(i),
                    content=f"note {i}",
                    embedding=[1.0, i, 0.0, 0.0],
                    sparse_embedding=SparseEmbedding(indices=[i], values=[1.0]),
                )
                for i in range(3)
            ]
            + [Document(id="bare", content="no vectors")]
        )
        verified = store.verify()
        assert {k: verified[k] for k in ("points", "counted", "without_dense", "without_sparse")} == {
            "points": 4,
            "counted": 4,
            "without_dense": 1,
            "without_sparse": 1,
        }
        assert verified["wal_entries"] > 0 and verified["wal_unreadable"] == 0

    def test_a_damaged_folder_says_so_and_recreating_moves_it_aside(self, tmp_path):
        path = tmp_path / "edge"
        store = EdgeDocumentStore(path=str(path), embedding_dim=4)
        store.write_documents([Document(id="1", content="note", embedding=[1.0, 0.0, 0.0, 0.0])])
        store.close()
        (path / "edge_config.json").write_bytes(b"\xff\xfe garbled")
        with pytest.raises(IndexDamagedError, match=r"damaged .*needle index --rebuild"):
            store.count_documents()
        store.delete_all_documents(recreate_index=True)
        assert store.count_documents() == 0
        aside = list(tmp_path.glob("edge.damaged-*"))
        assert len(aside) == 1 and (aside[0] / "edge_config.json").read_bytes().startswith(b"\xff")
        store.close()

    def test_lock_file_records_the_owner_pid(self, store):
        store.count_documents()
        assert (Path(store.path) / LOCK_FILE_NAME).read_text() == str(os.getpid())

    def test_queries_keep_working_while_another_thread_writes(self, store):
        store.write_documents([Document(id="seed", content="seed words", embedding=[1.0, 0.0, 0.0, 0.0])])
        errors: list[BaseException] = []

        def write() -> None:
            try:
                for batch in range(6):
                    store.write_documents(
                        [
                            Document(id=f"{batch}-{i}", content=f"batch words {i}", embedding=[1.0, batch, i, 0.0])
                            for i in range(10)
                        ]
                    )
                    store.flush()
            except BaseException as error:  # surfaced by the assertion below
                errors.append(error)

        writer = threading.Thread(target=write)
        writer.start()
        answered = 0
        while writer.is_alive():
            assert store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=3)
            assert store.query_text("words", top_k=3)
            answered += 1
        writer.join()
        assert not errors
        assert answered > 0
        assert store.count_documents() == 61


def random_documents(count: int, dim: int, seed: int = 0, start: int = 0) -> list[Document]:
    import numpy as np

    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, dim))
    return [
        Document(
            id=f"d{start + i}",
            content=f"note {start + i}",
            meta={"path": f"{(start + i) % 7}.md"},
            embedding=vectors[i].tolist(),
        )
        for i in range(count)
    ]


def shard_files(path) -> set[str]:
    """The file names inside a shard's segments."""
    return {name for _folder, _dirs, files in os.walk(Path(path) / "segments") for name in files}


class TestEdgeDocumentStoreLayout:
    def test_layout_reaches_the_engine(self, tmp_path):
        import json

        store = EdgeDocumentStore(
            path=str(tmp_path / "edge"),
            embedding_dim=8,
            hnsw_m=8,
            hnsw_ef_construct=64,
            quantization="int8",
            vectors_on_disk=True,
            hnsw_on_disk=True,
            sparse_on_disk=True,
            payload_on_disk=False,
            max_segment_size_kb=50_000,
        )
        store.write_documents(random_documents(3, 8))
        config = json.loads((tmp_path / "edge" / "edge_config.json").read_text())
        store.close()
        assert config["quantization_config"]["scalar"]["type"] == "int8"
        assert config["quantization_config"]["scalar"]["memory"] == "pinned"
        assert config["vectors"]["text-dense"]["memory"] == "cold"
        assert config["sparse_vectors"]["text-sparse"]["memory"] == "cold"
        assert (config["hnsw_config"]["m"], config["hnsw_config"]["memory"]) == (8, "cold")
        assert config["payload_memory"] == "cached"
        assert config["optimizers"]["max_segment_size"] == 50_000

    @pytest.mark.parametrize("quantization", ["int8", "binary"])
    def test_quantized_search_rescored_finds_what_exact_search_finds(self, tmp_path, quantization):
        docs = random_documents(300, 16)
        store = EdgeDocumentStore(
            path=str(tmp_path / "edge"),
            embedding_dim=16,
            quantization=quantization,
            quantization_oversampling=4.0,
            hnsw_ef=64,
            indexing_threshold_kb=1,
            durable_writes=False,
        )
        store.write_documents(docs)
        store.optimize()
        assert "quantized.data" in shard_files(tmp_path / "edge")
        query = docs[42].embedding
        [hit] = store.query_dense(query, top_k=1)
        assert hit.id == "d42"
        assert hit.score == pytest.approx(1.0, abs=1e-5)  # rescored with the original vector
        # The rerank stage's exact scores ignore the quantized vectors.
        exact = store.best_scores(BestScore.per_value("path", ["0.md"], dense=query))  # d42 is in 0.md
        assert exact == [pytest.approx(1.0, abs=1e-5)]
        store.close()

    def test_optimize_lays_an_existing_index_out_anew(self, tmp_path):
        path = str(tmp_path / "edge")
        store = EdgeDocumentStore(path=path, embedding_dim=16, indexing_threshold_kb=1, durable_writes=False)
        store.write_documents(random_documents(200, 16))
        store.optimize()
        store.close()
        assert "quantized.data" not in shard_files(path)

        quantized = EdgeDocumentStore(path=path, embedding_dim=16, indexing_threshold_kb=1, quantization="int8")
        assert quantized.optimize() is True
        assert "quantized.data" in shard_files(path)
        assert quantized.count_documents() == 200
        assert quantized.optimize() is False  # laid out as asked: nothing left to do
        quantized.close()

    def test_a_bulk_load_builds_in_steps_of_the_segment_size(self, tmp_path):
        # 16 dims are 64 bytes a vector, 6.25 KB a batch of 100: a step of 20 KB builds after every 4th batch.
        store = EdgeDocumentStore(
            path=str(tmp_path / "edge"),
            embedding_dim=16,
            max_segment_size_kb=20,
            indexing_threshold_kb=1,
            durable_writes=False,
        )
        builds = []
        optimize = store.optimize
        store.optimize = lambda: builds.append(1) or optimize()
        for start in range(0, 1000, 100):
            store.write_documents(random_documents(100, 16, seed=start, start=start))
        assert len(builds) == 2
        info = store._shard().shard.info()
        assert info.segments_count >= 3  # two built segments and the one taking writes
        assert store.count_documents() == 1000
        [hit] = store.query_dense(random_documents(100, 16, seed=500, start=500)[7].embedding, top_k=1)
        assert hit.id == "d507"
        store.close()


class TestEdgeDocumentStoreBackup:
    def test_backup_is_a_shard_that_opens_with_the_same_documents(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=16)
        docs = random_documents(50, 16)
        store.write_documents(docs)
        assert store.backup(str(tmp_path / "copy")) == 50
        store.write_documents(random_documents(5, 16, seed=1, start=100))  # after the backup: not in it
        assert not (tmp_path / "copy" / LOCK_FILE_NAME).exists()
        copy = EdgeDocumentStore(path=str(tmp_path / "copy"), embedding_dim=16)
        assert copy.count_documents() == 50
        assert [d.id for d in copy.query_dense(docs[3].embedding, top_k=3)] == [
            d.id for d in store.query_dense(docs[3].embedding, top_k=3)
        ]
        copy.close()
        store.close()

    def test_backup_refuses_an_existing_folder(self, tmp_path):
        store = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
        store.write_documents([Document(content="x")])
        (tmp_path / "copy").mkdir()
        with pytest.raises(FileExistsError):
            store.backup(str(tmp_path / "copy"))
        store.close()

    def test_writes_wait_while_paused_and_queries_do_not(self, store):
        store.write_documents([Document(id="before", content="before", embedding=[1.0, 0.0, 0.0, 0.0])])
        writer = threading.Thread(target=store.write_documents, args=([Document(id="during", content="during")],))
        with store.writes_paused():
            writer.start()
            writer.join(timeout=0.5)
            assert writer.is_alive()  # waiting for the pause to end
            assert [d.id for d in store.query_dense([1.0, 0.0, 0.0, 0.0], top_k=5)] == ["before"]
        writer.join(timeout=10)
        assert not writer.is_alive()
        assert store.count_documents() == 2

    def test_replace_shard_swaps_in_a_copy_and_refuses_an_open_index(self, tmp_path):
        from haystack_integrations.document_stores.needle.edge.shards import replace_shard

        source = EdgeDocumentStore(path=str(tmp_path / "old"), embedding_dim=4)
        source.write_documents([Document(id=str(i), content=f"n{i}") for i in range(3)])
        source.backup(str(tmp_path / "copy"))
        live = EdgeDocumentStore(path=str(tmp_path / "live"), embedding_dim=4)
        live.write_documents([Document(content="only one")])
        with pytest.raises(StoreLockedError):
            replace_shard(str(tmp_path / "copy"), str(tmp_path / "live"))
        live.close()
        replace_shard(str(tmp_path / "copy"), str(tmp_path / "live"))
        assert sorted(p.name for p in tmp_path.iterdir()) == ["copy", "live", "old"]
        reopened = EdgeDocumentStore(path=str(tmp_path / "live"), embedding_dim=4)
        assert reopened.count_documents() == 3
        reopened.close()
        source.close()

    def test_a_copy_keeps_a_files_holes_and_its_bytes(self, tmp_path):
        from haystack_integrations.document_stores.needle.edge.shards import copy_keeping_holes

        source, target = tmp_path / "pages.dat", tmp_path / "copy.dat"
        with open(source, "wb") as f:
            f.truncate(32 * 2**20)  # the engine's page files: 32 MB, mostly holes
            f.write(b"head" * 1000)
            f.seek(9 * 2**20 + 5)
            f.write(bytes(range(256)) * 5000)  # more than one copied block's worth, across a block edge
        if source.stat().st_blocks * 512 >= source.stat().st_size:
            pytest.skip("this file system does not keep holes")
        copy_keeping_holes(str(source), str(target))
        assert target.read_bytes() == source.read_bytes()
        assert target.stat().st_size == 32 * 2**20
        assert target.stat().st_blocks * 512 <= source.stat().st_blocks * 512 + 2**16
        assert target.stat().st_mtime == source.stat().st_mtime

        ends_in_data = tmp_path / "full.dat"
        ends_in_data.write_bytes(b"x" * 3000)
        copy_keeping_holes(str(ends_in_data), str(target))  # replaces the copy above
        assert target.read_bytes() == b"x" * 3000


class Child:
    """A Python child process running `script` with the store folder as argument; its stdout read line by line."""

    def __init__(self, script: str, path: str, log: Path) -> None:
        self.log = log
        with open(log, "w") as stderr:  # a file, so a chatty child never blocks on a full pipe
            self.proc = subprocess.Popen(
                [sys.executable, "-c", textwrap.dedent(script), path],
                cwd=REPO,
                env={**os.environ, "PYTHONPATH": str(REPO)},
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.lines: queue.Queue[str] = queue.Queue()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.pump.start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.strip())

    def next_line(self, timeout: float = 60) -> str:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            pytest.fail(f"the child printed nothing in {timeout} s: {self.log.read_text()}")

    def kill(self) -> list[str]:
        """SIGKILL the child; returns the lines it printed that were not read yet."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.pump.join(timeout=10)
        rest = []
        while not self.lines.empty():
            rest.append(self.lines.get())
        return rest


@pytest.mark.integration
class TestEdgeDocumentStoreAcrossProcesses:
    def test_second_process_gets_store_locked_error(self, tmp_path):
        path = str(tmp_path / "edge")
        holder = Child(
            """
            import sys, time
            from haystack_integrations.document_stores.needle.edge import EdgeDocumentStore
            store = EdgeDocumentStore(path=sys.argv[1], embedding_dim=4)
            store.count_documents()
            print("ready", flush=True)
            time.sleep(120)
            """,
            path,
            tmp_path / "holder.log",
        )
        try:
            assert holder.next_line() == "ready"
            with pytest.raises(StoreLockedError, match=f"process {holder.proc.pid}") as raised:
                EdgeDocumentStore(path=path, embedding_dim=4).count_documents()
            assert raised.value.path == os.path.realpath(path)
        finally:
            holder.kill()
        store = EdgeDocumentStore(path=path, embedding_dim=4)
        assert store.count_documents() == 0
        store.close()

    def test_forked_child_does_not_use_the_parents_shard(self, tmp_path):
        # Forking a process that already runs native threads (ONNX, other stores) is undefined behaviour
        # in C, so the fork happens in a fresh interpreter that holds only this store.
        script = textwrap.dedent(
            f"""
            import os, sys
            from haystack import Document
            from haystack_integrations.document_stores.needle.edge import EdgeDocumentStore, StoreLockedError
            store = EdgeDocumentStore(path={str(tmp_path / "edge")!r}, embedding_dim=4, durable_writes=False)
            store.write_documents([Document(content="parent")])
            pid = os.fork()
            if pid == 0:  # the inherited instance must reopen, and find the folder locked by the parent
                try:
                    store.count_documents()
                except StoreLockedError as error:
                    os._exit(0 if error.pid == str(os.getppid()) else 2)
                except BaseException:
                    os._exit(3)
                os._exit(1)
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            sys.exit(code if code else (0 if store.count_documents() == 1 else 4))
            """
        )
        proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]

    def test_forked_childs_exit_leaves_the_parents_shard_open_and_locked(self, tmp_path):
        script = textwrap.dedent(
            """
            import atexit, os, sys
            from haystack import Document
            from haystack_integrations.document_stores.needle.edge import EdgeDocumentStore, StoreLockedError
            path = sys.argv[1]
            store = EdgeDocumentStore(path=path, embedding_dim=4, durable_writes=False)
            store.write_documents([Document(content="parent")])
            if os.fork() == 0:
                # The exit calls inherited from the parent, as a normal exit runs them (the interpreter's own
                # teardown after fork() is unsafe with the engine's threads gone, hence _exit).
                atexit._run_exitfuncs()
                os._exit(0)
            os.wait()
            try:
                EdgeDocumentStore(path=path, embedding_dim=4).count_documents()
                sys.exit(1)  # the child unlocked the parent's folder
            except StoreLockedError:
                pass
            store.write_documents([Document(content="after the child")])
            sys.exit(0 if store.count_documents() == 2 else 2)
            """
        )
        proc = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "edge")],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]

    def test_acknowledged_writes_survive_kill_9(self, tmp_path):
        path = str(tmp_path / "edge")
        writer = Child(
            """
            import sys
            from haystack import Document
            from haystack_integrations.document_stores.needle.edge import EdgeDocumentStore
            store = EdgeDocumentStore(path=sys.argv[1], embedding_dim=4)
            written, batch = 0, 0
            while True:
                docs = [
                    Document(id=f"{batch}-{i}", content=f"note {batch} {i}", meta={"path": f"{batch}.md"},
                             embedding=[1.0, float(batch), float(i), 0.0])
                    for i in range(25)
                ]
                written += store.write_documents(docs)
                batch += 1
                print(written, flush=True)
            """,
            path,
            tmp_path / "writer.log",
        )
        acknowledged = [int(writer.next_line()) for _ in range(4)]
        acknowledged += [int(line) for line in writer.kill()]

        store = EdgeDocumentStore(path=path, embedding_dim=4)
        assert store.count_documents() >= acknowledged[-1]
        assert len(store.list_documents_meta(fields=["path"])) == store.count_documents()
        assert store.query_text("note", top_k=1)
        store.close()


def _notes(count: int, start: int = 0) -> list[Document]:
    """Documents with metadata to filter by and scores that never tie (so that hit orders compare)."""
    return [
        Document(
            id=f"n{i}",
            content=f"note {i} about {'certbot renewals' if i % 7 == 0 else 'rsync copies'} " + "word " * (i % 11),
            meta={
                "collection": "a" if i % 2 else "b",
                "tags": ["x"] if i % 3 == 0 else ["y"],
                "path": f"notes/{i}.md",
                "date": f"2024-{1 + i % 9:02d}-01",
            },
            embedding=[1.0, i / 100, (i % 13) / 10, 0.5],
            sparse_embedding=SparseEmbedding(indices=[i % 5, 10 + i], values=[1.0 + i / 1000, 0.5]),
        )
        for i in range(start, start + count)
    ]


def test_a_small_store_filters_without_payload_indexes_and_finds_the_same(tmp_path):
    # Below `payload_indexes_from` the engine keeps no payload index (whose preallocated pages it would read
    # into memory at every opening); filters check each document's payload instead, with the same hits.
    indexed = EdgeDocumentStore(path=str(tmp_path / "indexed"), embedding_dim=4, payload_indexes_from=0)
    small = EdgeDocumentStore(path=str(tmp_path / "small"), embedding_dim=4)
    for store in (indexed, small):
        store.write_documents(_notes(300))
    assert set(small._shard().shard.info().payload_schema) == ALWAYS_INDEXED
    assert set(indexed._shard().shard.info().payload_schema) == {*DEFAULT_PAYLOAD_INDEXES, "content"}
    filters = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.collection", "operator": "==", "value": "a"},
            {"field": "meta.tags", "operator": "in", "value": ["x"]},
            {"field": "meta.date", "operator": ">=", "value": "2024-05-01"},
        ],
    }

    def found(store: EdgeDocumentStore) -> tuple:
        sparse = SparseEmbedding(indices=[2, 150], values=[1.0, 1.0])
        return (
            [(d.id, round(d.score, 5)) for d in store.query_dense([0.9, 0.4, 0.3, 0.5], top_k=10, filters=filters)],
            [(d.id, round(d.score, 5)) for d in store.query_sparse(sparse, top_k=10, filters=filters)],
            sorted(d.id for d in store.filter_documents(filters)),
            store.count_values("collection"),
            store.count_values("path", filters),
            store.count_values("tags"),  # each value of a list, as the index's facet counts them
        )

    assert found(small) == found(indexed)
    assert len(found(small)[2]) > 5

    # The full-text index comes with the first full-text search, alone.
    def text_hits(store: EdgeDocumentStore) -> list[tuple[float, str]]:
        return sorted((round(d.score, 5), d.id) for d in store.query_text("certbot", top_k=100))

    assert text_hits(small) == text_hits(indexed) and len(text_hits(small)) == 43
    assert set(small._shard().shard.info().payload_schema) == {*ALWAYS_INDEXED, "content"}


def test_a_store_gets_its_payload_indexes_once_it_grows_past_the_size(tmp_path):
    path = str(tmp_path / "edge")
    store = EdgeDocumentStore(path=path, embedding_dim=4, payload_indexes_from=50)
    store.write_documents(_notes(40))
    assert set(store._shard().shard.info().payload_schema) == ALWAYS_INDEXED
    store.write_documents(_notes(20, start=40))  # the write that takes it to 60
    # The payload indexes come with the size; the full-text index only with a full-text search, at any size.
    assert set(store._shard().shard.info().payload_schema) == set(DEFAULT_PAYLOAD_INDEXES)
    assert store.count_values("tags") == {"x": 20, "y": 40}  # the engine's facet count, from the new index
    store.close()
    reopened = EdgeDocumentStore(path=path, embedding_dim=4, payload_indexes_from=50)
    assert set(reopened._shard().shard.info().payload_schema) == set(DEFAULT_PAYLOAD_INDEXES)
    assert reopened.query_text("certbot", top_k=5)
    assert set(reopened._shard().shard.info().payload_schema) == {*DEFAULT_PAYLOAD_INDEXES, "content"}
    reopened.close()
    again = EdgeDocumentStore(path=path, embedding_dim=4, payload_indexes_from=50)
    assert set(again._shard().shard.info().payload_schema) == {*DEFAULT_PAYLOAD_INDEXES, "content"}
