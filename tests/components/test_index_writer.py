import pytest
from haystack import Document

from haystack_integrations.components.writers.needle.index_writer import IndexWriter
from haystack_integrations.document_stores.needle import EdgeDocumentStore


@pytest.fixture
def store(tmp_path):
    return EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=2, use_sparse_embeddings=False)


def doc(i: str) -> Document:
    return Document(id=i, content=f"text {i}", embedding=[1.0, 0.0], meta={"source_doc_id": "c:a.md"})


class TestIndexWriter:
    def test_defaults_and_bad_params(self, store):
        assert IndexWriter(store).batch_size == 256
        with pytest.raises(ValueError, match="batch_size"):
            IndexWriter(store, batch_size=0)

    def test_round_trip(self, store):
        data = IndexWriter(store, batch_size=8).to_dict()
        assert data["type"] == "haystack_integrations.components.writers.needle.index_writer.IndexWriter"
        assert data["init_parameters"]["batch_size"] == 8
        again = IndexWriter.from_dict(data)
        assert again.to_dict() == data

    def test_writes_in_batches_then_deletes_stale(self, store):
        writer = IndexWriter(store, batch_size=2)
        assert writer.run([doc("a"), doc("b"), doc("c")]) == {"written": 3, "deleted": 0}
        assert writer.run([doc("d")], stale_ids=["a", "b"]) == {"written": 1, "deleted": 2}
        assert sorted(d.id for d in store.filter_documents()) == ["c", "d"]

    def test_rewriting_the_same_chunk_is_an_upsert(self, store):
        writer = IndexWriter(store)
        writer.run([doc("a")])
        writer.run([doc("a")])
        assert store.count_documents() == 1


class TestIndexWriterOptimize:
    def test_optimize_false_leaves_optimising_to_the_caller(self, store):
        calls = []
        store.optimize = lambda: calls.append(1) or True
        writer = IndexWriter(store)
        writer.run(documents=[Document(id="a", content="x", embedding=[1.0, 0.0])], optimize=False)
        assert calls == []
        writer.run(documents=[Document(id="b", content="y", embedding=[0.0, 1.0])])
        assert calls == [1]
