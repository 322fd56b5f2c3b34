from haystack import Document
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.document_stores.needle import EdgeDocumentStore, QdrantServerDocumentStore
from needle.facade.migration import copy_index


def chunk(i: int, vector: list[float]) -> Document:
    return Document(
        id=f"c{i}",
        content=f"chunk {i} about topic {i}",
        embedding=vector,
        sparse_embedding=SparseEmbedding(indices=[i, 100 + i], values=[1.0, 0.5]),
        meta={"collection": "notes", "path": f"n{i}.md", "source_doc_id": f"notes:n{i}.md", "start_line": 1},
    )


def test_an_embedded_index_moves_to_a_qdrant_server_without_reembedding(tmp_path):
    source = EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=4)
    docs = [chunk(0, [1, 0, 0, 0]), chunk(1, [0, 1, 0, 0]), chunk(2, [0, 0, 1, 0])]
    source.write_documents(docs)
    # qdrant-client's in-memory mode speaks the server's API; no server runs here.
    target = QdrantServerDocumentStore(embedding_dim=4, client_kwargs={"location": ":memory:"})
    assert copy_index(source, target, batch_size=2, progress=False) == 3
    assert target.count_documents() == 3
    nearest = target.query_dense([0, 0.9, 0.1, 0], top_k=1)[0]
    assert nearest.id == "c1" and nearest.meta["source_doc_id"] == "notes:n1.md"
    assert target.query_sparse(SparseEmbedding(indices=[102], values=[1.0]), top_k=1)[0].id == "c2"
    # the same ids: copying again overwrites instead of duplicating
    copy_index(source, target, progress=False)
    assert target.count_documents() == 3
    source.close()
