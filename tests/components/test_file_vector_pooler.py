import math
import re

import pytest
from haystack import Document
from haystack.dataclasses import SparseEmbedding

from haystack_integrations.components.embedders.needle.file_vector_pooler import FileVectorPooler
from haystack_integrations.document_stores.needle import EdgeDocumentStore


@pytest.fixture
def store(tmp_path):
    return EdgeDocumentStore(path=str(tmp_path / "edge"), embedding_dim=2)


def chunk(
    i: str, start: int, end: int, vector: list[float] | None = None, terms: dict[int, float] | None = None
) -> Document:
    sparse = SparseEmbedding(indices=sorted(terms), values=[terms[k] for k in sorted(terms)]) if terms else None
    return Document(
        id=i,
        content=f"text {i}",
        embedding=vector,
        sparse_embedding=sparse,
        meta={"collection": "c", "source_doc_id": "c:a.md", "char_start": start, "char_end": end},
    )


def file_doc(start: int = 0, end: int = 200) -> Document:
    return Document(
        id="f", content="whole", meta={"kind": "file", "source_doc_id": "c:a.md", "char_start": start, "char_end": end}
    )


class TestFileVectorPooler:
    def test_pools_the_normalised_mean_and_leaves_bm25_to_the_sparse_embedder(self, store):
        chunks = [chunk("1", 0, 100, [1.0, 0.0], {1: 0.5, 3: 1.0}), chunk("2", 90, 200, [0.0, 1.0], {3: 0.25, 7: 2.0})]
        out = FileVectorPooler(document_store=store).run(files=[file_doc()], chunks=chunks, embedded=chunks)[
            "documents"
        ]
        assert out[0].embedding == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])
        assert out[0].sparse_embedding is None
        assert out[0].content == "whole"

    def test_chunks_with_a_dense_vector_only_are_enough(self, store):
        chunks = [chunk("1", 0, 100, [3.0, 4.0])]
        out = FileVectorPooler(document_store=store).run(files=[file_doc()], chunks=chunks, embedded=chunks)[
            "documents"
        ]
        assert out[0].embedding == pytest.approx([0.6, 0.8])

    def test_chunks_outside_the_file_range_are_left_out(self, store):
        chunks = [chunk("1", 0, 100, [1.0, 0.0], {1: 1.0}), chunk("2", 100, 300, [0.0, 1.0], {2: 1.0})]
        out = FileVectorPooler(document_store=store).run(files=[file_doc(0, 100)], chunks=chunks, embedded=chunks)[
            "documents"
        ]
        assert out[0].embedding == pytest.approx([1.0, 0.0])

    def test_unchanged_chunk_is_read_from_the_store(self, store):
        stored = chunk("1", 0, 100, [1.0, 0.0], {4: 1.0})
        store.write_documents([stored])
        new = chunk("2", 100, 200, [0.0, 1.0])
        bare = chunk("1", 0, 100)
        out = FileVectorPooler(document_store=store).run(files=[file_doc()], chunks=[bare, new], embedded=[new])[
            "documents"
        ]
        assert out[0].embedding == pytest.approx([1 / math.sqrt(2), 1 / math.sqrt(2)])

    def test_missing_chunk_vectors_raise(self, store):
        with pytest.raises(ValueError, match=re.escape("c:a.md")):
            FileVectorPooler(document_store=store).run(files=[file_doc()], chunks=[chunk("1", 0, 100)], embedded=[])

    def test_to_dict_and_from_dict(self, store):
        data = FileVectorPooler(document_store=store).to_dict()
        assert FileVectorPooler.from_dict(data).document_store.to_dict() == store.to_dict()
