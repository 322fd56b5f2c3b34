import pytest
from haystack import Document

from haystack_integrations.components.caching.needle.chunk_differ import ChunkDiffer
from haystack_integrations.document_stores.needle import EdgeDocumentStore


@pytest.fixture
def store(tmp_path):
    return EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=2, use_sparse_embeddings=False)


def chunk(i: str, path: str, text: str = "x", collection: str = "c") -> Document:
    return Document(
        id=i,
        content=text,
        embedding=[1.0, 0.0],
        meta={"collection": collection, "path": path, "source_doc_id": f"{collection}:{path}"},
    )


def source(path: str, collection: str = "c") -> dict:
    return {"collection": collection, "root": "/unused", "path": path}


class TestChunkDiffer:
    def test_store_must_list_metadata(self):
        with pytest.raises(ValueError, match="list_documents_meta"):
            ChunkDiffer(document_store=object())

    def test_round_trip(self, store):
        data = ChunkDiffer(store).to_dict()
        assert data["type"] == "haystack_integrations.components.caching.needle.chunk_differ.ChunkDiffer"
        assert ChunkDiffer.from_dict(data).to_dict() == data

    def test_new_changed_unchanged_and_removed(self, store, tmp_path):
        store.write_documents([chunk("a1", "a.md"), chunk("a2", "a.md"), chunk("b1", "b.md"), chunk("g1", "gone.md")])
        collections = [{"name": "c", "root": str(tmp_path)}]
        out = ChunkDiffer(store).run(
            documents=[
                chunk("a1", "a.md"),
                chunk("a3", "a.md", "longer new text"),
                chunk("b1", "b.md"),
                chunk("n1", "new.md"),
            ],
            sources=[source("a.md"), source("b.md"), source("new.md")],
            collections=collections,
        )
        assert [d.id for d in out["documents"]] == ["n1", "a3"]  # shortest first
        assert sorted(out["stale_ids"]) == ["a2", "g1"]
        assert out["stats"] == {
            "files_new": 1,
            "files_changed": 1,
            "files_unchanged": 1,
            "files_removed": 1,
            "chunks_total": 4,
            "chunks_new": 2,
            "chunks_unchanged": 2,
            "chunks_stale": 2,
            "files_refreshed": 0,
        }
        assert out["refreshed"] == []

    def test_file_whose_metadata_changed_alone_is_refreshed_not_embedded(self, store, tmp_path):
        def tagged(i: str, path: str, checksum: str | None) -> Document:
            doc = chunk(i, path)
            return Document(
                id=doc.id, content=doc.content, embedding=doc.embedding, meta={**doc.meta, "meta_checksum": checksum}
            )

        store.write_documents([tagged("a1", "a.md", "old"), tagged("a2", "a.md", "old"), tagged("b1", "b.md", "same")])
        store.write_documents([chunk("c1", "legacy.md")])  # indexed before files had a metadata checksum
        out = ChunkDiffer(store).run(
            documents=[
                tagged("a1", "a.md", "new"),
                tagged("a2", "a.md", "new"),
                tagged("b1", "b.md", "same"),
                tagged("c1", "legacy.md", "x"),
            ],
            sources=[source("a.md"), source("b.md"), source("legacy.md")],
            collections=[{"name": "c", "root": str(tmp_path)}],
        )
        assert out["documents"] == [] and out["stale_ids"] == []
        assert [d.id for d in out["refreshed"]] == ["a1", "c1"]
        assert (out["stats"]["files_refreshed"], out["stats"]["files_unchanged"]) == (2, 3)

    def test_unreadable_file_keeps_its_chunks(self, store, tmp_path):
        store.write_documents([chunk("a1", "a.md")])
        out = ChunkDiffer(store).run(
            documents=[], sources=[source("a.md")], collections=[{"name": "c", "root": str(tmp_path)}]
        )
        assert out["stale_ids"] == [] and out["documents"] == []

    def test_missing_root_and_other_collections_are_left_alone(self, store, tmp_path):
        store.write_documents([chunk("a1", "a.md"), chunk("o1", "o.md", collection="other")])
        out = ChunkDiffer(store).run(
            documents=[], sources=[], collections=[{"name": "c", "root": str(tmp_path / "gone")}]
        )
        assert out["stale_ids"] == []
        out = ChunkDiffer(store).run(documents=[], sources=[], collections=[{"name": "c", "root": str(tmp_path)}])
        assert out["stale_ids"] == ["a1"]


class TestChunkDifferScope:
    def test_scope_compares_only_those_files_and_removes_a_deleted_one(self, store, tmp_path):
        store.write_documents([chunk("a1", "a.md"), chunk("a2", "a.md"), chunk("b1", "b.md"), chunk("g1", "gone.md")])
        out = ChunkDiffer(store).run(
            documents=[chunk("a1", "a.md"), chunk("a3", "a.md", "new text")],
            sources=[source("a.md")],
            collections=[{"name": "c", "root": str(tmp_path)}],
            scope=["c:a.md", "c:gone.md"],
        )
        assert [d.id for d in out["documents"]] == ["a3"]
        assert sorted(out["stale_ids"]) == ["a2", "g1"]  # b.md is outside the scope: kept though not in sources
        assert out["removed"] == ["c:gone.md"]
        assert out["stats"]["files_removed"] == 1 and out["stats"]["files_changed"] == 1

    def test_empty_scope_lists_nothing(self, store, tmp_path):
        store.write_documents([chunk("a1", "a.md")])
        out = ChunkDiffer(store).run(
            documents=[], sources=[], collections=[{"name": "c", "root": str(tmp_path)}], scope=[]
        )
        assert out["stale_ids"] == [] and out["removed"] == []
