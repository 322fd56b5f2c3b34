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
        assert writer.run([doc("a"), doc("b"), doc("c")]) == {
            "written": 3,
            "deleted": 0,
            "skipped": [],
            "unwritten": [],
        }
        assert writer.run([doc("d")], stale_ids=["a", "b"])["deleted"] == 2
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


class TestVectorsCheckedAtTheDoor:
    """A file with a vector that is not finite, all zeros or of another size is left out whole, with its reason."""

    @staticmethod
    def chunk(i: str, path: str, vector: list[float]) -> Document:
        return Document(id=i, content=f"text {i}", embedding=vector, meta={"collection": "c", "path": path})

    @pytest.mark.parametrize(
        "vector, reason",
        [
            ([float("nan"), 1.0], "a vector with NaN values"),
            ([float("inf"), 0.0], "a vector with infinite values"),
            ([0.0, 0.0], "a vector of zeros"),
            ([1.0, 0.0, 0.0], "a vector of 3 values where the index holds 2"),
        ],
    )
    def test_a_spoiled_vector_leaves_its_file_out_and_keeps_its_stored_version(self, store, vector, reason):
        writer = IndexWriter(store)
        writer.run([self.chunk("old", "bad.md", [0.0, 1.0]), self.chunk("ok1", "ok.md", [1.0, 0.0])])
        result = writer.run(
            [
                self.chunk("new1", "bad.md", [1.0, 1.0]),
                self.chunk("new2", "bad.md", vector),
                self.chunk("ok2", "ok.md", [1.0, 0.5]),
            ],
            stale_ids=["old", "ok1"],
        )
        assert result["unwritten"] == ["c:bad.md"] and result["written"] == 1 and result["deleted"] == 1
        assert result["skipped"][0]["path"] == "bad.md" and reason in result["skipped"][0]["reason"]
        assert sorted(d.id for d in store.filter_documents()) == ["ok2", "old"]

    def test_the_embedder_that_made_it_is_named(self, store):
        from haystack_integrations.components.needle._vector_checks import checked

        spoiled = checked([float("nan"), 0.0], "the embedding server at http://127.0.0.1:9/v1 (model m)")
        result = IndexWriter(store).run([self.chunk("a", "a.md", spoiled)])
        assert (
            "NaN values from the embedding server at http://127.0.0.1:9/v1 (model m)" in result["skipped"][0]["reason"]
        )
