import pytest
from haystack import Document

from haystack_integrations.components.writers.needle.metadata_refresher import MetadataRefresher
from haystack_integrations.document_stores.needle import EdgeDocumentStore


@pytest.fixture
def store(tmp_path):
    return EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=2, use_sparse_embeddings=False)


def stored(i: str, path: str, **meta) -> Document:
    return Document(
        id=i, content=f"text {i}", embedding=[1.0, 0.0], meta={"source_doc_id": f"c:{path}", "path": path, **meta}
    )


class TestMetadataRefresher:
    def test_store_must_be_a_needle_store(self):
        with pytest.raises(ValueError, match="does not provide"):
            MetadataRefresher(document_store=object())

    def test_round_trip(self, store):
        data = MetadataRefresher(store).to_dict()
        assert data["type"] == "haystack_integrations.components.writers.needle.metadata_refresher.MetadataRefresher"
        assert MetadataRefresher.from_dict(data).to_dict() == data

    def test_every_document_of_the_file_gets_the_file_metadata_and_keeps_its_vector(self, store):
        store.write_documents(
            [
                stored("a1", "a.md", tags=["old"], chunk_index=0),
                stored("a2", "a.md", tags=["old"], chunk_index=1),
                stored("b1", "b.md", tags=["other"]),
            ]
        )
        fresh = Document(
            content="text a1",
            meta={
                "source_doc_id": "c:a.md",
                "tags": ["new"],
                "date": "2024-05-11T00:00:00Z",
                "frontmatter": {"status": "done"},
                "meta_checksum": "n",
                "chunk_index": 7,
            },
        )
        assert MetadataRefresher(store).run(documents=[fresh]) == {"refreshed": 2}
        docs = {d.id: d for d in store.filter_documents()}
        assert [docs[i].meta["tags"] for i in ("a1", "a2", "b1")] == [["new"], ["new"], ["other"]]
        assert (docs["a2"].meta["chunk_index"], docs["a2"].meta["date"], docs["a2"].meta["meta_checksum"]) == (
            1,
            "2024-05-11T00:00:00Z",
            "n",
        )
        assert docs["a1"].embedding == [1.0, 0.0]

    def test_nothing_to_refresh(self, store):
        assert MetadataRefresher(store).run(documents=[]) == {"refreshed": 0}

    def test_the_embedded_store_is_flushed_once_and_stays_durable(self, store, monkeypatch):
        store.write_documents([stored("a1", "a.md"), stored("b1", "b.md")])
        flushes = []
        monkeypatch.setattr(store, "flush", lambda: flushes.append(store.durable_writes))
        docs = [Document(content="x", meta={"source_doc_id": f"c:{p}", "tags": ["t"]}) for p in ("a.md", "b.md")]
        assert MetadataRefresher(store).run(documents=docs) == {"refreshed": 2}
        assert flushes == [True] and store.durable_writes is True
