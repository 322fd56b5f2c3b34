import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.components.caching.needle.vector_reuser import VectorReuser
from haystack_integrations.document_stores.needle import EdgeDocumentStore


@pytest.fixture
def store(tmp_path):
    return EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=2)


def chunk(i: str, text: str, context: str = "Title", collection: str = "c") -> Document:
    return Document(
        id=i, content=text, meta={"collection": collection, "context": context, "source_doc_id": f"{collection}:{i}.md"}
    )


def embedded(doc: Document, vector: list[float]) -> Document:
    return Document(
        id=doc.id,
        content=doc.content,
        meta=doc.meta,
        embedding=vector,
        sparse_embedding=SparseEmbedding(indices=[1, 5], values=[0.5, 0.25]),
    )


class TestVectorReuser:
    def test_init_defaults(self, store):
        reuser = VectorReuser(document_store=store)
        assert (reuser.meta_fields_to_embed, reuser.embedding_separator, reuser.batch_size) == ([], "\n", 256)

    def test_init_custom(self, store):
        reuser = VectorReuser(
            document_store=store, meta_fields_to_embed=["context"], embedding_separator=" | ", batch_size=8
        )
        assert (reuser.meta_fields_to_embed, reuser.embedding_separator, reuser.batch_size) == (["context"], " | ", 8)

    @pytest.mark.parametrize("bad", [0, -1, True, 1.5])
    def test_bad_batch_size_raises(self, store, bad):
        with pytest.raises(ValueError, match="batch_size"):
            VectorReuser(document_store=store, batch_size=bad)

    def test_bad_fields_and_store_raise(self, store):
        with pytest.raises(ValueError, match="meta_fields_to_embed"):
            VectorReuser(document_store=store, meta_fields_to_embed=[""])
        with pytest.raises(ValueError):
            VectorReuser(document_store=object())

    def test_to_dict_and_from_dict(self, store):
        data = VectorReuser(document_store=store, meta_fields_to_embed=["context"], batch_size=8).to_dict()
        assert data["type"] == "haystack_integrations.components.caching.needle.vector_reuser.VectorReuser"
        assert data["init_parameters"]["meta_fields_to_embed"] == ["context"]
        assert data["init_parameters"]["embedding_separator"] == "\n" and data["init_parameters"]["batch_size"] == 8
        assert data["init_parameters"]["document_store"]["type"].endswith("EdgeDocumentStore")
        assert VectorReuser.from_dict(data).to_dict() == data

    def test_checksum_covers_the_embedded_fields_and_the_language(self, store):
        reuser = VectorReuser(document_store=store, meta_fields_to_embed=["context"])
        base = reuser.checksum(chunk("a", "text"))
        assert reuser.checksum(chunk("b", "text")) == base  # the id and file do not count
        assert reuser.checksum(chunk("a", "text", context="Other")) != base
        assert reuser.checksum(chunk("a", "other text")) != base
        assert reuser.checksum(chunk("a", "text"), "german") != base
        assert VectorReuser(document_store=store).checksum(chunk("a", "text", context="Other")) == VectorReuser(
            document_store=store
        ).checksum(chunk("a", "text"))

    def test_stored_text_gets_the_stored_vectors_and_the_rest_goes_to_embed(self, store):
        reuser = VectorReuser(document_store=store, meta_fields_to_embed=["context"], batch_size=1)
        first = reuser.run(documents=[chunk("old", "moved paragraph")])
        assert first["reused"] == [] and len(first["documents"]) == 1
        store.write_documents([embedded(first["documents"][0], [0.6, 0.8])])

        out = reuser.run(
            documents=[
                chunk("new", "moved paragraph"),
                chunk("fresh", "never seen"),
                chunk("x", "moved paragraph", "Other"),
            ]
        )
        assert [d.id for d in out["reused"]] == ["new"]
        assert out["reused"][0].embedding == pytest.approx([0.6, 0.8])
        assert out["reused"][0].sparse_embedding.indices == [1, 5]
        assert out["reused"][0].meta["content_checksum"] == first["documents"][0].meta["content_checksum"]
        assert [d.id for d in out["documents"]] == ["fresh", "x"]
        assert all(d.embedding is None and "content_checksum" in d.meta for d in out["documents"])

    def test_a_text_stored_many_times_is_matched_once(self, store):
        reuser = VectorReuser(document_store=store)
        stamped = reuser.run(documents=[chunk(f"d{i}", "same text") for i in range(30)])["documents"]
        store.write_documents([embedded(doc, [1.0, 0.0]) for doc in stamped])
        out = reuser.run(documents=[chunk("n1", "same text"), chunk("n2", "same text")])
        assert [d.id for d in out["reused"]] == ["n1", "n2"] and out["documents"] == []

    def test_the_language_keeps_collections_apart(self, store):
        reuser = VectorReuser(document_store=store)
        stamped = reuser.run(documents=[chunk("a", "Haus")], languages={"c": "german"})["documents"]
        store.write_documents([embedded(stamped[0], [1.0, 0.0])])
        out = reuser.run(documents=[chunk("b", "Haus", collection="d")], languages={"c": "german", "d": "english"})
        assert out["reused"] == [] and len(out["documents"]) == 1
